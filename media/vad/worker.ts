// The Silero model's inference thread (see index.ts): onnxruntime-node's InferenceSession.run() is synchronous (its
// promise only defers the call with setImmediate), so on the media process's main thread a large batch of windows
// would stop every call's audio. Here it blocks only this thread. One request at a time, in order:
// { id, batch, input [batch·512], h, c [2·batch·64] } in (buffers transferred) → { id, p [batch], hn, cn } or
// { id, error } out.
import { writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { sharedBatchViews } from './shared-batch.ts';
import { resetHelperPriority } from '../../core/priority.ts';

resetHelperPriority(); // not at the media process's raised pacing priority (core/priority.ts)

export type InferRequest =
  | { id: number; batch: number; input: Float32Array; h: Float32Array; c: Float32Array }
  /** the batch lives in a SharedBatch (index.ts): results are written back into it and the reply is only { id } */
  | { id: number; batch: number; shared: SharedArrayBuffer; capacity: number };
export type InferReply = { id: number; p: Float32Array; hn: Float32Array; cn: Float32Array } | { id: number } | { id: number; error: string };

const port = parentPort!;
// per-stage CPU accounting (media/stage-cpu.ts) tells this thread's CPU apart by its name
if (process.env.MEDIA_STAGE_CPU === '1') {
  try {
    writeFileSync('/proc/thread-self/comm', 'vad-silero');
  } catch { /* not Linux */ }
}
const SR = new ort.Tensor('int64', BigInt64Array.from([16000n]));
const session = ort.InferenceSession.create((workerData as { modelPath: string }).modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
session.catch(() => {}); // reported per request

port.on('message', (req: InferRequest) => {
  void session.then(
    async (s) => {
      const { id, batch: b } = req;
      if ('shared' in req) {
        // copies on this thread (its garbage does not stop the event loop) so the runtime never sees shared memory
        const v = sharedBatchViews(req.shared, req.capacity);
        const out = await s.run({
          input: new ort.Tensor('float32', v.input.slice(0, b * 512), [b, 512]),
          sr: SR,
          h: new ort.Tensor('float32', v.h.slice(0, 2 * b * 64), [2, b, 64]),
          c: new ort.Tensor('float32', v.c.slice(0, 2 * b * 64), [2, b, 64]),
        });
        v.p.set(out.output!.data as Float32Array);
        v.hn.set(out.hn!.data as Float32Array);
        v.cn.set(out.cn!.data as Float32Array);
        port.postMessage({ id } satisfies InferReply);
        return;
      }
      const { input, h, c } = req;
      const out = await s.run({
        input: new ort.Tensor('float32', input, [b, 512]),
        sr: SR,
        h: new ort.Tensor('float32', h, [2, b, 64]),
        c: new ort.Tensor('float32', c, [2, b, 64]),
      });
      // copies: the output tensors' memory belongs to the runtime
      const p = new Float32Array(out.output!.data as Float32Array);
      const hn = new Float32Array(out.hn!.data as Float32Array);
      const cn = new Float32Array(out.cn!.data as Float32Array);
      port.postMessage({ id, p, hn, cn } satisfies InferReply, [p.buffer, hn.buffer, cn.buffer]);
    },
  ).catch((err: unknown) => port.postMessage({ id: req.id, error: err instanceof Error ? err.message : String(err) } satisfies InferReply));
});
