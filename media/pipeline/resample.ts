// Small, allocation-light PCM helpers used on the audio path (linear interpolation is enough for the recording
// and for feeding RNNoise; engines bring their own resampling).

/** Linear-interpolation resampler that keeps its phase across calls (streaming). */
export class LinearResampler {
  private pos = 0; // fractional read position relative to the current input block
  private last = 0; // last sample of the previous block
  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {}

  /** `into`: a scratch array to write into when it is large enough (the result is then a view of it, valid until
   * the next call that uses the same scratch). */
  process(input: Int16Array, into?: Int16Array): Int16Array {
    if (this.fromRate === this.toRate) return input;
    const n = input.length;
    if (n === 0) return new Int16Array(0);
    const step = this.fromRate / this.toRate;
    const need = Math.ceil((n + 1) / step) + 1;
    const out = into && into.length >= need ? into : new Int16Array(need);
    let k = 0;
    let pos = this.pos; // index -1 means the last sample of the previous block
    while (pos < n - 1) {
      const i = Math.floor(pos);
      const frac = pos - i;
      const a = i < 0 ? this.last : input[i]!;
      const b = input[i + 1]!;
      out[k++] = Math.round(a + (b - a) * frac);
      pos += step;
    }
    this.pos = pos - n;
    this.last = input[n - 1]!;
    return out.subarray(0, k);
  }
}

export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let s = 0;
  for (let i = 0; i < pcm.length; i++) s += pcm[i]! * pcm[i]!;
  return Math.sqrt(s / pcm.length);
}

export function clip16(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
}
