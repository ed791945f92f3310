// Noise gate: RNNoise (xiph, BSD-3) compiled to WASM (@echogarden/rnnoise-wasm). Caller audio 16 kHz is
// upsampled ×3 to RNNoise's 48 kHz / 480-sample frames, denoised and brought back to 16 kHz.
// model 'noise-suppression': denoise only; 'voice-focus': also attenuate frames RNNoise scores as non-voice.
// enhancementLevel blends denoised (1.0) with the original (0.0).
import createRNNWasmModule from '@echogarden/rnnoise-wasm';
import type { Denoiser } from './input-stages.ts';

interface RnnModule {
  _rnnoise_create(model: number): number;
  _rnnoise_destroy(st: number): void;
  _rnnoise_process_frame(st: number, out: number, inp: number): number;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPF32: Float32Array;
}

let modulePromise: Promise<RnnModule> | null = null;
export function loadRnnoise(): Promise<RnnModule> {
  modulePromise ??= (createRNNWasmModule as unknown as () => Promise<RnnModule>)();
  return modulePromise;
}

const FRAME48 = 480;
const FRAME16 = 160;

export async function createDenoiser(opts: { model: 'voice-focus' | 'noise-suppression'; enhancementLevel: number }): Promise<Denoiser> {
  const m = await loadRnnoise();
  const st = m._rnnoise_create(0);
  const ptr = m._malloc(FRAME48 * 4);
  const level = Math.max(0, Math.min(1, opts.enhancementLevel));
  const pending = new Int16Array(FRAME16);
  let fill = 0;
  let prev = 0; // last 16 kHz input sample (for interpolation across frames)
  let gate = 1;
  let closed = false;

  const processFrame = (inp: Int16Array): Int16Array => {
    const heap = m.HEAPF32;
    const base = ptr >> 2;
    for (let i = 0; i < FRAME16; i++) {
      const a = i === 0 ? prev : inp[i - 1]!;
      const b = inp[i]!;
      // 3 samples at 48 kHz per 16 kHz sample, interpolated from the previous sample
      heap[base + i * 3] = a + (b - a) / 3;
      heap[base + i * 3 + 1] = a + ((b - a) * 2) / 3;
      heap[base + i * 3 + 2] = b;
    }
    prev = inp[FRAME16 - 1]!;
    const vad = m._rnnoise_process_frame(st, ptr, ptr);
    const h = m.HEAPF32; // the heap may have grown
    if (opts.model === 'voice-focus') {
      const target = vad > 0.6 ? 1 : vad < 0.2 ? 0.15 : 0.15 + ((vad - 0.2) / 0.4) * 0.85;
      gate += (target - gate) * 0.5;
    } else gate = 1;
    const out = new Int16Array(FRAME16);
    for (let i = 0; i < FRAME16; i++) {
      const den = (h[base + i * 3]! + h[base + i * 3 + 1]! + h[base + i * 3 + 2]!) / 3;
      const v = (level * den + (1 - level) * inp[i]!) * (1 - level + level * gate);
      out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
    }
    return out;
  };

  return {
    process(pcm: Int16Array): Int16Array {
      if (closed) return new Int16Array(0);
      const outs: Int16Array[] = [];
      let i = 0;
      while (i < pcm.length) {
        const n = Math.min(FRAME16 - fill, pcm.length - i);
        pending.set(pcm.subarray(i, i + n), fill);
        fill += n;
        i += n;
        if (fill === FRAME16) {
          outs.push(processFrame(pending));
          fill = 0;
        }
      }
      if (outs.length === 1) return outs[0]!;
      const res = new Int16Array(outs.length * FRAME16);
      outs.forEach((o, k) => res.set(o, k * FRAME16));
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
