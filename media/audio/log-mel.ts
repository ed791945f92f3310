// Whisper's log-mel spectrogram, as Smart Turn v3 reads it (media/services/turn/smart-turn.ts): 16 kHz audio, a
// 400-sample periodic Hann window every 160 samples (centred: the audio is reflect-padded by 200 on each side), the
// power spectrum of each frame through 80 Slaney mel filters (0–8 kHz, area-normalised), log10, clamped to 8 below
// the maximum and scaled by (x + 4) / 4. The same steps, constants and frame count as transformers'
// WhisperFeatureExtractor (chunk_length = 8) and the numpy copy of it that the Smart Turn model ships with (pipecat's
// `_whisper_features.py`, checked against it in test/media/audio/log-mel.test.ts): zero-mean unit-variance
// normalisation of the waveform first, the last frame dropped. Plain loops over preallocated arrays; a mixed-radix
// FFT of size 400 (two real frames per complex transform).

export const SAMPLE_RATE = 16000;
export const N_FFT = 400;
export const HOP = 160;
export const N_MELS = 80;
const N_BINS = N_FFT / 2 + 1;
const MEL_FLOOR = 1e-10;
const NORM_EPS = 1e-7;

// ── mel filters (Slaney scale and normalisation, as transformers' audio_utils builds them) ─────────────────
const hzToMel = (f: number) => (f >= 1000 ? 15 + Math.log(f / 1000) * (27 / Math.log(6.4)) : (3 * f) / 200);
const melToHz = (m: number) => (m >= 15 ? 1000 * Math.exp((Math.log(6.4) / 27) * (m - 15)) : (200 * m) / 3);

/** The filter bank as [mel][bin] weights, with each filter's first and last non-zero bin. */
function melBank(): { w: Float64Array; from: Int32Array; to: Int32Array } {
  const top = hzToMel(SAMPLE_RATE / 2);
  const filterHz = Array.from({ length: N_MELS + 2 }, (_, i) => melToHz((top * i) / (N_MELS + 1)));
  const fftHz = Array.from({ length: N_BINS }, (_, k) => ((SAMPLE_RATE / 2) * k) / (N_BINS - 1));
  const w = new Float64Array(N_MELS * N_BINS);
  const from = new Int32Array(N_MELS).fill(N_BINS);
  const to = new Int32Array(N_MELS).fill(-1);
  for (let m = 0; m < N_MELS; m++) {
    const enorm = 2 / (filterHz[m + 2]! - filterHz[m]!);
    for (let k = 0; k < N_BINS; k++) {
      const down = -(filterHz[m]! - fftHz[k]!) / (filterHz[m + 1]! - filterHz[m]!);
      const up = (filterHz[m + 2]! - fftHz[k]!) / (filterHz[m + 2]! - filterHz[m + 1]!);
      const v = Math.max(0, Math.min(down, up)) * enorm;
      w[m * N_BINS + k] = v;
      if (v > 0) {
        if (k < from[m]!) from[m] = k;
        to[m] = k;
      }
    }
  }
  return { w, from, to };
}

// ── FFT: mixed radix (kissfft's recursive decimation in time with generic butterflies) ─────────────────────
class Fft {
  private readonly factors: number[] = [];
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  private readonly tr = new Float64Array(8);
  private readonly ti = new Float64Array(8);

  constructor(readonly n: number) {
    let r = n;
    for (const p of [4, 2, 3, 5]) {
      while (r % p === 0) {
        this.factors.push(p);
        r /= p;
      }
    }
    if (r !== 1) throw new RangeError(`FFT size ${n} has a prime factor above 5`);
    this.cos = new Float64Array(n);
    this.sin = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      this.cos[i] = Math.cos((-2 * Math.PI * i) / n);
      this.sin[i] = Math.sin((-2 * Math.PI * i) / n);
    }
  }

  /** Forward transform of (re, im) into (outRe, outIm), all of length n. */
  transform(re: Float64Array, im: Float64Array, outRe: Float64Array, outIm: Float64Array): void {
    this.step(re, im, 0, 1, outRe, outIm, 0, this.n, 0);
  }

  private step(re: Float64Array, im: Float64Array, at: number, stride: number, oRe: Float64Array, oIm: Float64Array, out: number, n: number, f: number): void {
    if (n === 1) {
      oRe[out] = re[at]!;
      oIm[out] = im[at]!;
      return;
    }
    const p = this.factors[f]!;
    const m = n / p;
    for (let j = 0; j < p; j++) this.step(re, im, at + j * stride, stride * p, oRe, oIm, out + j * m, m, f + 1);
    // X[k + q·m] = Σ_j Y_j[k] · W_n^{j·(k + q·m)}, W_n^e = W_N^{e·N/n}
    const scale = this.n / n;
    const { cos, sin, tr, ti } = this;
    const N = this.n;
    for (let k = 0; k < m; k++) {
      for (let j = 0; j < p; j++) {
        tr[j] = oRe[out + j * m + k]!;
        ti[j] = oIm[out + j * m + k]!;
      }
      for (let q = 0; q < p; q++) {
        const kk = k + q * m;
        let sr = tr[0]!;
        let si = ti[0]!;
        const step = (kk * scale) % N;
        let e = 0;
        for (let j = 1; j < p; j++) {
          e += step;
          if (e >= N) e -= N;
          const c = cos[e]!;
          const s = sin[e]!;
          sr += tr[j]! * c - ti[j]! * s;
          si += tr[j]! * s + ti[j]! * c;
        }
        oRe[out + kk] = sr;
        oIm[out + kk] = si;
      }
    }
  }
}

let tables: { bank: ReturnType<typeof melBank>; window: Float64Array; fft: Fft } | null = null;
function shared(): NonNullable<typeof tables> {
  if (!tables) {
    const window = new Float64Array(N_FFT);
    for (let i = 0; i < N_FFT; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / N_FFT); // periodic Hann
    tables = { bank: melBank(), window, fft: new Fft(N_FFT) };
  }
  return tables;
}

/**
 * Log-mel features of `audio` (16 kHz, ±1 floats) laid out [mel][frame], N_MELS × (samples / HOP) values. The
 * input is taken as exactly `samples` long: zero-padded at its end, or its leading `samples` kept (the Smart Turn
 * adapter passes exactly the window it means). `normalize`: zero-mean unit-variance waveform first (Smart Turn
 * does).
 */
export function whisperLogMel(audio: Float32Array, opts: { samples?: number; normalize?: boolean } = {}): Float32Array {
  const n = opts.samples ?? audio.length;
  if (n < N_FFT) throw new RangeError(`at least ${N_FFT} samples are needed`);
  const { bank, window, fft } = shared();
  // the waveform as float32, like the reference (normalised in float32 too)
  const x = new Float32Array(n);
  x.set(audio.length > n ? audio.subarray(0, n) : audio);
  if (opts.normalize !== false) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += x[i]!;
    const mean = Math.fround(sum / n);
    let sq = 0;
    for (let i = 0; i < n; i++) {
      const d = x[i]! - mean;
      sq += d * d;
    }
    const std = Math.fround(Math.sqrt(Math.fround(sq / n) + NORM_EPS));
    for (let i = 0; i < n; i++) x[i] = Math.fround(x[i]! - mean) / std;
  }
  // centred frames: reflect padding of N_FFT/2 on both sides (numpy's "reflect": the edge sample is not repeated)
  const pad = N_FFT / 2;
  const at = (i: number) => (i < 0 ? x[-i]! : i >= n ? x[2 * (n - 1) - i]! : x[i]!);
  const frames = 1 + Math.floor(n / HOP); // of the padded signal; the last one is dropped below
  const kept = frames - 1;
  const power = new Float64Array(N_BINS * 2);
  const re = new Float64Array(N_FFT);
  const im = new Float64Array(N_FFT);
  const zr = new Float64Array(N_FFT);
  const zi = new Float64Array(N_FFT);
  const out = new Float32Array(N_MELS * kept);
  const logs = new Float64Array(N_MELS * kept);
  let max = -Infinity;
  // Leading silence (the zeros a short turn is padded with) is one constant after normalisation: every frame that
  // lies wholly inside it has the same spectrum, computed once.
  let lead = 0;
  while (lead < n && audio[lead] === 0 && lead < audio.length) lead++;
  if (lead >= audio.length) lead = n;
  const constantFrames = lead > pad ? Math.max(0, Math.min(kept, Math.floor((lead - N_FFT + pad) / HOP) + 1)) : 0;
  const melOf = (frame: number, p0: number) => {
    for (let m = 0; m < N_MELS; m++) {
      let s = 0;
      const row = m * N_BINS;
      for (let k = bank.from[m]!; k <= bank.to[m]!; k++) s += bank.w[row + k]! * power[p0 + k]!;
      const v = Math.log10(Math.max(MEL_FLOOR, s));
      logs[m * kept + frame] = v;
      if (v > max) max = v;
    }
  };
  /** frames a and b (b < 0: none) in one complex FFT, a in the real part and b in the imaginary part */
  const transform = (a: number, b: number) => {
    for (let i = 0; i < N_FFT; i++) {
      re[i] = at(a * HOP + i - pad) * window[i]!;
      im[i] = b >= 0 ? at(b * HOP + i - pad) * window[i]! : 0;
    }
    fft.transform(re, im, zr, zi);
    for (let k = 0; k < N_BINS; k++) {
      const nk = (N_FFT - k) % N_FFT;
      const ar = (zr[k]! + zr[nk]!) / 2;
      const ai = (zi[k]! - zi[nk]!) / 2;
      const br = (zi[k]! + zi[nk]!) / 2;
      const bi = (zr[nk]! - zr[k]!) / 2;
      power[k] = ar * ar + ai * ai;
      power[N_BINS + k] = br * br + bi * bi;
    }
    melOf(a, 0);
    if (b >= 0) melOf(b, N_BINS);
  };
  if (constantFrames > 0) {
    transform(0, -1);
    for (let t = 1; t < constantFrames; t++) for (let m = 0; m < N_MELS; m++) logs[m * kept + t] = logs[m * kept]!;
  }
  for (let t = constantFrames; t < kept; t += 2) transform(t, t + 1 < kept ? t + 1 : -1);
  const floor = max - 8;
  for (let i = 0; i < logs.length; i++) out[i] = (Math.max(logs[i]!, floor) + 4) / 4;
  return out;
}
