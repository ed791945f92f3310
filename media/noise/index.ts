// media/noise — the caller-audio noise gate (AgentConfig `noiseGate`, docs/configuration.md): RNNoise (xiph,
// BSD-3-Clause) compiled to WASM (npm @echogarden/rnnoise-wasm), loadable in plain Node. One gate per call, fed every
// inbound 16 kHz s16le mono frame before VAD, STT and the recording; calls run it on the shared gate thread
// (threaded.ts). The WASM module is compiled once per process, on the first createNoiseGate(), then shared.
//
// process(frame) returns exactly frame.length samples, NOISE_GATE_DELAY_SAMPLES (11 ms) late; the first input that
// isn't a whole number of 10 ms RNNoise frames adds one frame of delay, once. After close() audio passes through.
// enhancementLevel L ∈ [0,1] is a wet/dry mix, out = L·denoised + (1−L)·original (L = 0: untouched, still delayed);
// 'voice-focus' also gates each frame on RNNoise's voice probability (see runFrame). Plainly silent frames skip
// RNNoise, so pauses on a clean line cost next to nothing; speech is the dominant per-call CPU cost when enabled.
import { Downsampler3, FIR_DELAY48, Upsampler3 } from './fir.ts';

export interface NoiseGate {
  /** Denoise `frame16k` (s16le mono 16 kHz); returns the same number of samples, 11 ms (+ 10 ms for odd sizes, see above) later. */
  process(frame16k: Int16Array): Int16Array;
  /** Free the RNNoise state. Idempotent. */
  close(): void;
}

export type NoiseModel = 'voice-focus' | 'noise-suppression';

interface RnnModule {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(st: number): void;
  _rnnoise_process_frame(st: number, out: number, inp: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPF32: Float32Array;
}

const RNN_PACKAGE = '@echogarden/rnnoise-wasm';
let modulePromise: Promise<RnnModule> | null = null;
function loadRnnoise(): Promise<RnnModule> {
  modulePromise ??= (async () => {
    const spec: string = RNN_PACKAGE; // untyped package: resolve at run time
    const mod = (await import(spec)) as { default: () => Promise<RnnModule> };
    return mod.default();
  })();
  modulePromise.catch(() => {
    modulePromise = null; // let a later call retry
  });
  return modulePromise;
}

const F16 = 160; // 10 ms at 16 kHz
const F48 = 480; // RNNoise frame
/** RNNoise's own delay (one frame) + the two FIR passes, in 16 kHz samples. */
export const NOISE_GATE_DELAY_SAMPLES = (F48 + 2 * FIR_DELAY48) / 3;

const HOLD_FRAMES = 20; // 200 ms
/** 10 ms frames below this RMS (≈ −66 dBFS: digital silence, a muted microphone, faint line hiss) skip RNNoise. */
const SILENT_SUM_SQ = (0.0005 * 32768) ** 2 * F16;

function isPlainlySilent(frame: Int16Array): boolean {
  let e = 0;
  for (let i = 0; i < frame.length; i++) e += frame[i]! * frame[i]!;
  return e < SILENT_SUM_SQ;
}
const RELEASE = 0.2; // per 10 ms frame, toward the target

export async function createNoiseGate(opts: { model: NoiseModel; enhancementLevel: number }): Promise<NoiseGate> {
  const m = await loadRnnoise();
  const level = Number.isFinite(opts.enhancementLevel) ? Math.max(0, Math.min(1, opts.enhancementLevel)) : 0.8;
  const focus = opts.model === 'voice-focus';
  const floor = Math.pow(10, (-30 * level) / 20);

  const st = m._rnnoise_create(0);
  const ptr = m._malloc(F48 * 4);
  if (!st || !ptr) throw new Error('RNNoise: out of WASM memory');

  const up = new Upsampler3();
  const down = new Downsampler3();
  const x48 = new Float32Array(F48);
  const wet16 = new Float64Array(F16);
  // dry delay line: the original, NOISE_GATE_DELAY_SAMPLES behind, to mix with the denoised signal
  const D = NOISE_GATE_DELAY_SAMPLES;
  const dry = new Float64Array(D + F16);

  const pending = new Int16Array(F16);
  let fill = 0;
  let out = new Int16Array(F16 * 4); // processed samples not yet returned
  let outLen = 0;
  let gain = focus ? floor : 1;
  let hold = 0;
  let closed = false;

  let silentRun = 0;
  const runFrame = (frame: Int16Array): void => {
    let vad = 0;
    if (!isPlainlySilent(frame)) {
      silentRun = 0;
      up.process(frame, x48);
      let heap = m.HEAPF32;
      heap.set(x48, ptr >> 2);
      vad = m._rnnoise_process_frame(st, ptr, ptr);
      heap = m.HEAPF32; // the heap may have grown
      x48.set(heap.subarray(ptr >> 2, (ptr >> 2) + F48));
      down.process(x48, wet16);
    } else if (++silentRun <= 2) {
      // nothing to denoise: RNNoise (the costly part) is skipped, its output for such a frame is silence anyway;
      // the resamplers still run for two frames so their short histories (≈ 1 ms) hold this quiet audio
      up.process(frame, x48);
      x48.fill(0);
      down.process(x48, wet16);
    } else wet16.fill(0); // a run of silence: nothing at all to compute
    for (let i = 0; i < F16; i++) dry[D + i] = frame[i]!;

    let g0 = gain;
    let g1 = 1;
    if (focus) {
      // voice probability p: gain 1 for p ≥ 0.5, a floor of −30·L dB for p ≤ 0.1, linear in amplitude between; opens
      // at once (p leads RNNoise's output by one frame, so onsets aren't clipped), holds 200 ms after the last voice
      // frame, then releases; each change is ramped across the 10 ms frame (no clicks)
      const target = vad >= 0.5 ? 1 : vad <= 0.1 ? floor : floor + ((1 - floor) * (vad - 0.1)) / 0.4;
      if (target >= gain) {
        g0 = gain; // open at once (ramped within this frame)
        g1 = target;
        hold = target >= 1 ? HOLD_FRAMES : hold;
      } else if (hold > 0) {
        hold--;
        g1 = gain;
      } else g1 = gain + (target - gain) * RELEASE;
      gain = g1;
    } else g0 = 1;

    if (out.length < outLen + F16) {
      const b = new Int16Array((outLen + F16) * 2);
      b.set(out.subarray(0, outLen));
      out = b;
    }
    for (let i = 0; i < F16; i++) {
      const g = g0 + ((g1 - g0) * (i + 1)) / F16;
      const v = (level * wet16[i]! + (1 - level) * dry[i]!) * g;
      out[outLen + i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
    }
    outLen += F16;
    dry.copyWithin(0, F16, F16 + D);
  };

  return {
    process(frame16k: Int16Array): Int16Array {
      if (closed) return frame16k;
      const n = frame16k.length;
      let i = 0;
      while (i < n) {
        const k = Math.min(F16 - fill, n - i);
        pending.set(frame16k.subarray(i, i + k), fill);
        fill += k;
        i += k;
        if (fill === F16) {
          runFrame(pending);
          fill = 0;
        }
      }
      if (outLen < n) {
        // input not a multiple of 10 ms: add one RNNoise frame of delay (silence), once; after that the buffered
        // remainder (< 160) can never exceed it again
        if (out.length < outLen + F16) {
          const b = new Int16Array((outLen + F16) * 2);
          b.set(out.subarray(0, outLen));
          out = b;
        }
        out.copyWithin(F16, 0, outLen);
        out.fill(0, 0, F16);
        outLen += F16;
      }
      const res = new Int16Array(n);
      res.set(out.subarray(0, n));
      out.copyWithin(0, n, outLen);
      outLen -= n;
      return res;
    },
    close() {
      if (closed) return;
      closed = true;
      m._rnnoise_destroy(st);
      m._free(ptr);
    },
  };
}
