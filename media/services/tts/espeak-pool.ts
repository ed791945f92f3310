// The `local` TTS's shared synthesizers: a few long-lived eSpeak NG processes per media process
// (espeak_worker.py: libespeak-ng through ctypes) serve every call's sentences, instead of one `espeak-ng` process
// per sentence. Why: spawning forks the media process on its event loop (many calls replying at once stall every
// call's audio) and each new process spends more time loading its tables than synthesizing. Requests go to the worker with the fewest outstanding; each streams its audio back as it is
// synthesized; an abort stops it at the next ~60 ms of audio. A worker that dies fails its requests (a retryable
// engine error) and is restarted. Where the workers cannot start (no python3, no libespeak-ng), local.ts falls
// back to one process per sentence.
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HelperPool, HelperProcess } from '../helper-process.ts';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'espeak_worker.py');
const START_TIMEOUT_MS = 10_000;

interface Request {
  push(pcm: Int16Array): void;
  end(error: string | null): void;
}

class SynthWorker extends HelperProcess {
  readonly pending = new Map<number, Request>();
  /** sample rate the synthesizer announced when it started */
  rate = 0;
  private buf: Buffer = Buffer.alloc(0);

  constructor(python: string) {
    super(python, [WORKER], 'eSpeak NG synthesizer', START_TIMEOUT_MS);
  }

  protected onOutput(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    while (this.buf.length >= 9) {
      const len = this.buf.readUInt32LE(5);
      if (this.buf.length < 9 + len) break;
      const kind = String.fromCharCode(this.buf[0]!);
      const id = this.buf.readUInt32LE(1);
      const payload = this.buf.subarray(9, 9 + len);
      this.buf = this.buf.subarray(9 + len);
      if (kind === 'R') {
        this.rate = Number(payload.toString());
        this.started();
      } else if (kind === 'A') {
        // copy out of the stream's buffer (aligned, and not kept alive by a view)
        const pcm = new Int16Array(payload.length >> 1);
        new Uint8Array(pcm.buffer).set(payload.subarray(0, pcm.length * 2));
        this.pending.get(id)?.push(pcm);
      } else if (kind === 'E') {
        const r = this.pending.get(id);
        this.pending.delete(id);
        this.hold(this.pending.size > 0);
        r?.end(payload.length ? payload.toString() : null);
      }
    }
  }

  protected busy(): boolean {
    return this.pending.size > 0;
  }

  protected onDeath(): void {
    for (const r of this.pending.values()) r.end('eSpeak NG synthesizer exited');
    this.pending.clear();
  }

  add(id: number, r: Request): void {
    this.pending.set(id, r);
    this.hold(true);
  }
}

export class EspeakPool extends HelperPool<SynthWorker> {
  private nextId = 1;
  /** The synthesizers' sample rate (eSpeak NG: 22 050 Hz), known once ready() resolved. */
  rate = 0;

  constructor(
    readonly python: string,
    size: number,
  ) {
    super(size, () => new SynthWorker(python));
  }

  override async ready(): Promise<void> {
    await super.ready();
    this.rate = this.workers[0]!.rate;
  }

  /** Outstanding requests per worker (tests, metrics). */
  get load(): number[] {
    return this.workers.map((w) => w.pending.size);
  }

  /** The audio of `text` (s16le mono at the pool's rate) as it is synthesized; stops when `signal` aborts. */
  async *synthesize(text: string, voice: string, wordsPerMinute: number, signal: AbortSignal): AsyncIterable<Int16Array> {
    let worker: SynthWorker | null = null;
    for (const w of this.workers) if (!w.dead && (!worker || w.pending.size < worker.pending.size)) worker = w;
    if (!worker) throw new Error('no eSpeak NG synthesizer is running');
    const id = this.nextId++;
    if (this.nextId > 0xfffffff0) this.nextId = 1;
    const chunks: Int16Array[] = [];
    let done = false;
    let error: string | null = null;
    let wake: (() => void) | null = null;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    worker.add(id, {
      push: (pcm) => {
        chunks.push(pcm);
        notify();
      },
      end: (e) => {
        done = true;
        error = e;
        notify();
      },
    });
    const w = worker;
    const abort = () => {
      if (!done) w.send('X', id);
      notify();
    };
    signal.addEventListener('abort', abort, { once: true });
    w.send('S', id, Buffer.from(JSON.stringify({ text, voice, wpm: wordsPerMinute })));
    try {
      for (;;) {
        if (signal.aborted) return;
        const next = chunks.shift();
        if (next) {
          yield next;
          continue;
        }
        if (done) break;
        await new Promise<void>((r) => (wake = r));
      }
      if (error) throw new Error(error);
    } finally {
      signal.removeEventListener('abort', abort);
      if (!done) {
        // the consumer stopped early: stop the synthesis (its 'E' still clears the entry)
        w.send('X', id);
      }
    }
  }
}

let shared: { pool: EspeakPool; ok: Promise<boolean> } | null = null;

export function defaultEspeakWorkers(): number {
  const n = Number(process.env.LOCAL_TTS_WORKERS);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, os.availableParallelism());
}

/**
 * The process-wide pool (started on first use, or at process start by warmMedia with the configured python and
 * size), or null when it cannot run here (then the caller falls back to a process per sentence). `python`: any
 * Python 3 (standard library only; default LOCAL_TTS_PYTHON or python3).
 */
export async function sharedEspeakPool(opts: { python?: string; workers?: number } = {}): Promise<EspeakPool | null> {
  if (!shared) {
    const pool = new EspeakPool(opts.python ?? (process.env.LOCAL_TTS_PYTHON || 'python3'), opts.workers ?? defaultEspeakWorkers());
    shared = {
      pool,
      ok: pool.ready().then(
        () => true,
        () => {
          void pool.close();
          return false;
        },
      ),
    };
  }
  return (await shared.ok) ? shared.pool : null;
}

export async function closeEspeakPool(): Promise<void> {
  const s = shared;
  shared = null;
  if (s) await s.pool.close();
}
