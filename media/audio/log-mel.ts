// Whisper's log-mel spectrogram, as Smart Turn v3 reads it (media/services/turn/smart-turn.ts): 16 kHz audio, a
// 400-sample periodic Hann window every 160 samples (centred: the audio is reflect-padded by 200 on each side), the
// power spectrum of each frame through 80 Slaney mel filters (0–8 kHz, area-normalised), log10, clamped to 8 below
// the maximum and scaled by (x + 4) / 4. The same steps, constants and frame count as transformers'
// WhisperFeatureExtractor (chunk_length = 8) and the numpy copy of it that the Smart Turn model ships with (pipecat's
// `_whisper_features.py`, checked against it in test/media/audio/log-mel.test.ts): zero-mean unit-variance
// normalisation of the waveform first, the last frame dropped. Plain loops over preallocated arrays; a mixed-radix
// FFT of size 400 = 4·4·5·5 (two real frames per complex transform).

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
    // X[k + q·m] = Σ_j Y_j[k] · W_n^{j·(k + q·m)}, W_n^e = W_N^{e·N/n}: kissfft's butterflies for 4 and 5
    const scale = this.n / n;
    if (p === 4) return this.radix4(oRe, oIm, out, m, scale);
    if (p === 5) return this.radix5(oRe, oIm, out, m, scale);
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

  private radix4(re: Float64Array, im: Float64Array, out: number, m: number, scale: number): void {
    const { cos, sin } = this;
    for (let k = 0; k < m; k++) {
      const i0 = out + k;
      const i1 = i0 + m;
      const i2 = i1 + m;
      const i3 = i2 + m;
      const e1 = k * scale;
      const e2 = 2 * e1;
      const e3 = 3 * e1;
      const s0r = re[i1]! * cos[e1]! - im[i1]! * sin[e1]!;
      const s0i = re[i1]! * sin[e1]! + im[i1]! * cos[e1]!;
      const s1r = re[i2]! * cos[e2]! - im[i2]! * sin[e2]!;
      const s1i = re[i2]! * sin[e2]! + im[i2]! * cos[e2]!;
      const s2r = re[i3]! * cos[e3]! - im[i3]! * sin[e3]!;
      const s2i = re[i3]! * sin[e3]! + im[i3]! * cos[e3]!;
      const s5r = re[i0]! - s1r;
      const s5i = im[i0]! - s1i;
      const f0r = re[i0]! + s1r;
      const f0i = im[i0]! + s1i;
      const s3r = s0r + s2r;
      const s3i = s0i + s2i;
      const s4r = s0r - s2r;
      const s4i = s0i - s2i;
      re[i2] = f0r - s3r;
      im[i2] = f0i - s3i;
      re[i0] = f0r + s3r;
      im[i0] = f0i + s3i;
      re[i1] = s5r + s4i;
      im[i1] = s5i - s4r;
      re[i3] = s5r - s4i;
      im[i3] = s5i + s4r;
    }
  }

  private radix5(re: Float64Array, im: Float64Array, out: number, m: number, scale: number): void {
    const { cos, sin } = this;
    const yar = Math.cos((2 * Math.PI) / 5);
    const yai = -Math.sin((2 * Math.PI) / 5);
    const ybr = Math.cos((4 * Math.PI) / 5);
    const ybi = -Math.sin((4 * Math.PI) / 5);
    for (let k = 0; k < m; k++) {
      const i0 = out + k;
      const i1 = i0 + m;
      const i2 = i1 + m;
      const i3 = i2 + m;
      const i4 = i3 + m;
      const e1 = k * scale;
      const s0r = re[i0]!;
      const s0i = im[i0]!;
      const s1r = re[i1]! * cos[e1]! - im[i1]! * sin[e1]!;
      const s1i = re[i1]! * sin[e1]! + im[i1]! * cos[e1]!;
      const s2r = re[i2]! * cos[2 * e1]! - im[i2]! * sin[2 * e1]!;
      const s2i = re[i2]! * sin[2 * e1]! + im[i2]! * cos[2 * e1]!;
      const s3r = re[i3]! * cos[3 * e1]! - im[i3]! * sin[3 * e1]!;
      const s3i = re[i3]! * sin[3 * e1]! + im[i3]! * cos[3 * e1]!;
      const s4r = re[i4]! * cos[4 * e1]! - im[i4]! * sin[4 * e1]!;
      const s4i = re[i4]! * sin[4 * e1]! + im[i4]! * cos[4 * e1]!;
      const s7r = s1r + s4r;
      const s7i = s1i + s4i;
      const s10r = s1r - s4r;
      const s10i = s1i - s4i;
      const s8r = s2r + s3r;
      const s8i = s2i + s3i;
      const s9r = s2r - s3r;
      const s9i = s2i - s3i;
      re[i0] = s0r + s7r + s8r;
      im[i0] = s0i + s7i + s8i;
      const s5r = s0r + s7r * yar + s8r * ybr;
      const s5i = s0i + s7i * yar + s8i * ybr;
      const s6r = s10i * yai + s9i * ybi;
      const s6i = -(s10r * yai + s9r * ybi);
      re[i1] = s5r - s6r;
      im[i1] = s5i - s6i;
      re[i4] = s5r + s6r;
      im[i4] = s5i + s6i;
      const s11r = s0r + s7r * ybr + s8r * yar;
      const s11i = s0i + s7i * ybr + s8i * yar;
      const s12r = -s10i * ybi + s9i * yai;
      const s12i = s10r * ybi - s9r * yai;
      re[i2] = s11r + s12r;
      im[i2] = s11i + s12i;
      re[i3] = s11r - s12r;
      im[i3] = s11i - s12i;
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
