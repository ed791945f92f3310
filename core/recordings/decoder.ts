// Uploads are decoded off the event loop: a long recording costs seconds of CPU (codec + resampling to 24 kHz),
// which inline would stall every other request of the api process. One worker thread per process, started
// on first use and unreferenced while idle, decodes uploads one at a time (a natural cap on the CPU uploads take);
// if it dies, the uploads in flight are refused as undecodable and the next upload starts a new one.
import { Worker } from 'node:worker_threads';
import { AudioDecodeError, type DecodedRecording, type RecordingFormat } from './decode.ts';

type Reply =
  | { id: number; ok: true; format: RecordingFormat; pcm: Int16Array; durationSeconds: number }
  | { id: number; ok: false; message: string; kind: AudioDecodeError['kind'] | null };

let worker: Worker | null = null;
let seq = 0;
const pending = new Map<number, { resolve: (d: DecodedRecording) => void; reject: (e: Error) => void }>();

function thread(): Worker {
  if (worker) return worker;
  const w = new Worker(new URL('./decode-thread.ts', import.meta.url));
  w.unref();
  w.on('message', (r: Reply) => {
    const p = pending.get(r.id);
    if (!p) return;
    pending.delete(r.id);
    if (!pending.size) w.unref();
    if (r.ok) p.resolve({ format: r.format, pcm: r.pcm, durationSeconds: r.durationSeconds });
    else p.reject(r.kind ? new AudioDecodeError(r.message, r.kind) : new Error(r.message));
  });
  const die = (err?: unknown) => {
    if (worker === w) worker = null;
    for (const [id, p] of pending) {
      pending.delete(id);
      p.reject(new AudioDecodeError(`The audio file could not be decoded${err instanceof Error ? `: ${err.message}` : ''}`, 'undecodable'));
    }
  };
  w.on('error', die);
  w.on('exit', () => die());
  worker = w;
  return w;
}

/** decodeRecording on the process's decoding thread (the bytes are copied over; the caller keeps its buffer). */
export function decodeOffThread(bytes: Uint8Array): Promise<DecodedRecording> {
  const w = thread();
  const id = ++seq;
  const copy = new Uint8Array(bytes); // a fresh ArrayBuffer of its own (a Buffer may sit in the shared pool)
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ id, bytes: copy }, [copy.buffer as ArrayBuffer]);
  });
}
