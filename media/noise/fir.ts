// Streaming ×3 polyphase FIR resamplers (16 kHz ⇄ 48 kHz) for feeding RNNoise. One shared linear-phase low-pass
// (windowed sinc, 49 taps at 48 kHz, cutoff 7.4 kHz, Blackman window): images/aliases above 8 kHz are attenuated
// well below what RNNoise reacts to, and each direction delays by exactly 24 samples at 48 kHz (= 8 at 16 kHz).
// Kept local to media/noise (the noise gate needs exactly this and nothing more); a candidate to unify with
// media/audio's general resampler.

export const FIR_TAPS = 49;
/** Group delay of one filter pass, in 48 kHz samples. */
export const FIR_DELAY48 = (FIR_TAPS - 1) / 2;

function design(): Float64Array {
  const h = new Float64Array(FIR_TAPS);
  const fc = 7400 / 48000; // normalised cutoff (cycles/sample)
  const mid = FIR_DELAY48;
  let sum = 0;
  for (let k = 0; k < FIR_TAPS; k++) {
    const x = k - mid;
    const sinc = x === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * x) / (Math.PI * x);
    const w = 0.42 - 0.5 * Math.cos((2 * Math.PI * k) / (FIR_TAPS - 1)) + 0.08 * Math.cos((4 * Math.PI * k) / (FIR_TAPS - 1));
    h[k] = sinc * w;
    sum += h[k]!;
  }
  for (let k = 0; k < FIR_TAPS; k++) h[k] = h[k]! / sum; // unity DC gain
  return h;
}

const H = design();
// polyphase components for the upsampler: phase p uses taps p, p+3, p+6, … (scaled by 3 for the zero-stuffing)
const PHASES: Float64Array[] = [0, 1, 2].map((p) => {
  const taps: number[] = [];
  for (let k = p; k < FIR_TAPS; k += 3) taps.push(3 * H[k]!);
  return Float64Array.from(taps);
});
const HIST16 = Math.ceil(FIR_TAPS / 3); // 17 past 16 kHz samples cover every phase

/** 16 kHz → 48 kHz. `process(input, out)` writes 3 × input.length samples into `out`. */
export class Upsampler3 {
  // history (oldest first) followed by the current block, so taps index backwards without wrap checks
  private buf = new Float64Array(HIST16 + 160);

  process(input: ArrayLike<number>, out: Float32Array): void {
    const n = input.length;
    if (this.buf.length < HIST16 + n) {
      const b = new Float64Array(HIST16 + n);
      b.set(this.buf.subarray(0, HIST16));
      this.buf = b;
    }
    const buf = this.buf;
    for (let i = 0; i < n; i++) buf[HIST16 + i] = input[i]!;
    for (let i = 0; i < n; i++) {
      const cur = HIST16 + i; // index of x[n]
      for (let p = 0; p < 3; p++) {
        const taps = PHASES[p]!;
        let acc = 0;
        for (let j = 0; j < taps.length; j++) acc += taps[j]! * buf[cur - j]!;
        out[3 * i + p] = acc;
      }
    }
    buf.copyWithin(0, n, n + HIST16);
  }
}

/** 48 kHz → 16 kHz. `process(input, out)` reads 3 × out.length samples of `input`. */
export class Downsampler3 {
  private buf = new Float64Array(FIR_TAPS - 1 + 480);

  process(input: Float32Array, out: Float64Array | Float32Array): void {
    const n = input.length;
    const hist = FIR_TAPS - 1;
    if (this.buf.length < hist + n) {
      const b = new Float64Array(hist + n);
      b.set(this.buf.subarray(0, hist));
      this.buf = b;
    }
    const buf = this.buf;
    for (let i = 0; i < n; i++) buf[hist + i] = input[i]!;
    const m = Math.floor(n / 3);
    for (let o = 0; o < m; o++) {
      const cur = hist + 3 * o; // aligned so the round trip delays by a whole number of 16 kHz samples
      let acc = 0;
      for (let k = 0; k < FIR_TAPS; k++) acc += H[k]! * buf[cur - k]!;
      out[o] = acc;
    }
    buf.copyWithin(0, n, n + hist);
  }
}
