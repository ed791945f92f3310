// Worker-thread side of decodeOffThread (decoder.ts): decodes one upload per message, in order.
// In: {id, bytes} (bytes transferred). Out: {id, ok: true, format, pcm, durationSeconds} (pcm transferred) or
// {id, ok: false, message, kind} (kind null: an unexpected failure).
import { parentPort } from 'node:worker_threads';
import { AudioDecodeError, decodeRecording } from './decode.ts';
import { resetHelperPriority } from '../priority.ts';

resetHelperPriority(); // not at the media process's raised pacing priority (core/priority.ts)

const port = parentPort!;
let chain: Promise<void> = Promise.resolve();
port.on('message', (msg: { id: number; bytes: Uint8Array }) => {
  chain = chain.then(async () => {
    try {
      const d = await decodeRecording(msg.bytes);
      port.postMessage({ id: msg.id, ok: true, format: d.format, pcm: d.pcm, durationSeconds: d.durationSeconds }, [d.pcm.buffer as ArrayBuffer]);
    } catch (err) {
      const kind = err instanceof AudioDecodeError ? err.kind : null;
      port.postMessage({ id: msg.id, ok: false, message: (err as Error)?.message ?? String(err), kind });
    }
  });
});
