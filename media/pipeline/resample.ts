// Small, allocation-light PCM helpers used on the audio path (linear interpolation is enough for the recording
// and for feeding RNNoise; engines bring their own resampling).

/** Linear-interpolation resampler that keeps its phase across calls (streaming). The read position is kept as an
 * integer count of 1/toRate-input-sample steps (exact: no drift over a 2-hour call, and no float floor/round per
 * sample on the audio path, which runs for every caller frame of every call). */
export class LinearResampler {
  /** read position relative to the current input block, in units of 1/den input samples (−den: the previous
   * block's last sample) */
  private pos = 0;
  private last = 0; // last sample of the previous block
  private readonly num: number; // input samples advanced per output sample, × den
  private readonly den: number;
  /** weight[r] = r / den (the fraction of the next sample at phase r) */
  private readonly weight: Float64Array;
  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    const g = gcd(fromRate, toRate);
    this.num = fromRate / g;
    this.den = toRate / g;
    this.weight = new Float64Array(this.den).map((_, r) => r / this.den);
  }

  /** `into`: a scratch array to write into when it is large enough (the result is then a view of it, valid until
   * the next call that uses the same scratch). */
  process(input: Int16Array, into?: Int16Array): Int16Array {
    if (this.fromRate === this.toRate) return input;
    const n = input.length;
    if (n === 0) return new Int16Array(0);
    const num = this.num;
    const den = this.den;
    const need = Math.ceil(((n + 1) * den) / num) + 1;
    const out = into && into.length >= need ? into : new Int16Array(need);
    const limit = (n - 1) * den;
    let k = 0;
    let pos = this.pos;
    // the first outputs may read the previous block's last sample (i = −1)
    while (pos < 0 && pos < limit) {
      const r = pos + den; // 0 ≤ r < den
      const a = this.last;
      out[k++] = Math.round(a + (input[0]! - a) * this.weight[r]!);
      pos += num;
    }
    const w = this.weight;
    let i = Math.floor(pos / den);
    let r = pos - i * den;
    const step = Math.floor(num / den);
    const rest = num - step * den;
    while (pos < limit) {
      const a = input[i]!;
      out[k++] = Math.round(a + (input[i + 1]! - a) * w[r]!);
      pos += num;
      i += step;
      r += rest;
      if (r >= den) {
        r -= den;
        i++;
      }
    }
    this.pos = pos - n * den;
    this.last = input[n - 1]!;
    return out.subarray(0, k);
  }
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export function clip16(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
}
