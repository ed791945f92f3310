// The layout of a Silero batch in shared memory (SharedBatch), used by the media process's main thread
// and by the inference thread (worker.ts) alike.
const WINDOW = 512;

export interface SharedBatchViews {
  input: Float32Array;
  h: Float32Array;
  c: Float32Array;
  p: Float32Array;
  hn: Float32Array;
  cn: Float32Array;
}

function sharedBatchFloats(capacity: number): number {
  return capacity * WINDOW + 4 * 2 * capacity * 64 + capacity;
}

/** Views over a SharedBatch's buffer (the inference thread builds the same ones from the buffer it is sent). */
export function sharedBatchViews(buffer: SharedArrayBuffer, capacity: number): SharedBatchViews {
  let o = 0;
  const view = (n: number) => {
    const a = new Float32Array(buffer, o * 4, n);
    o += n;
    return a;
  };
  const input = view(capacity * WINDOW);
  const h = view(2 * capacity * 64);
  const c = view(2 * capacity * 64);
  const hn = view(2 * capacity * 64);
  const cn = view(2 * capacity * 64);
  const p = view(capacity);
  return { input, h, c, p, hn, cn };
}

/**
 * The batch's memory, shared with the inference thread and allocated once per process: input [capacity·512], h and c
 * [2·capacity·64] in, p [capacity], hn and cn [2·capacity·64] out (a batch of b uses the first b rows of each; the
 * state layout [2, b, 64] is packed for b). Why shared: at scale the media process's major garbage collections are
 * started by "external memory pressure", the rate of new ArrayBuffer memory on the main thread, and a copied or
 * transferred batch (window copies, input, states and results) is most of it; each such collection stops the event
 * loop and shows in the pacing tail (see docs/benchmarks.md).
 */
export interface SharedBatch extends SharedBatchViews {
  buffer: SharedArrayBuffer;
  capacity: number;
}

export function sharedBatch(capacity: number): SharedBatch {
  const buffer = new SharedArrayBuffer(sharedBatchFloats(capacity) * 4);
  return { buffer, capacity, ...sharedBatchViews(buffer, capacity) };
}
