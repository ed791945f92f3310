// Worker-thread side of the threaded noise gate (threaded.ts): hosts the RNNoise gates of many calls and denoises
// batches of their frames. Messages in: {t:'open', id, model, level} · {t:'run', ids, frames} · {t:'close', id};
// out: {t:'done', ids, frames} (same order as the batch; buffers transferred) · {t:'error', id, message}.
import { parentPort } from 'node:worker_threads';
import { createNoiseGate, type NoiseGate, type NoiseModel } from './index.ts';
import { resetHelperPriority } from '../../core/priority.ts';

resetHelperPriority(); // not at the media process's raised pacing priority (core/priority.ts)

type In =
  | { t: 'open'; id: number; model: NoiseModel; level: number }
  | { t: 'run'; ids: number[]; frames: Int16Array[] }
  | { t: 'close'; id: number };

const gates = new Map<number, Promise<NoiseGate>>();
const port = parentPort!;

// messages are handled strictly in order (a gate's 'open' resolves before its first frames run)
let chain: Promise<void> = Promise.resolve();
port.on('message', (msg: In) => {
  chain = chain.then(() => handle(msg)).catch((err: unknown) => port.postMessage({ t: 'error', id: -1, message: (err as Error).message }));
});

async function handle(msg: In): Promise<void> {
  if (msg.t === 'open') {
    const g = createNoiseGate({ model: msg.model, enhancementLevel: msg.level });
    gates.set(msg.id, g);
    await g.catch((err: unknown) => {
      gates.delete(msg.id);
      port.postMessage({ t: 'error', id: msg.id, message: (err as Error).message });
    });
  } else if (msg.t === 'run') {
    const out: Int16Array[] = [];
    for (let i = 0; i < msg.ids.length; i++) {
      const g = gates.get(msg.ids[i]!);
      // a gate that failed to open passes its audio through unchanged
      out.push(g ? (await g).process(msg.frames[i]!) : msg.frames[i]!);
    }
    port.postMessage({ t: 'done', ids: msg.ids, frames: out }, out.map((f) => f.buffer as ArrayBuffer));
  } else if (msg.t === 'close') {
    const g = gates.get(msg.id);
    gates.delete(msg.id);
    (await g)?.close();
  }
}
