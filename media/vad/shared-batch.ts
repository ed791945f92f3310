// The layout of a Silero batch in shared memory (index.ts SharedBatch), used by the media process's main thread
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

export function sharedBatchFloats(capacity: number): number {
  return capacity * WINDOW + 4 * 2 * capacity * 64 + capacity;
}

/** Views over a SharedBatch's buffer (the inference thread builds the same ones). */
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
