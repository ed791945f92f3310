// Shared by media (transports, engines) and the api (uploaded audio recordings are normalised with it).
// Streaming rational resampler: polyphase windowed-sinc FIR (Kaiser window), for the rates the service meets
// (8 k carriers, 16 k STT/VAD, 22.05 k eSpeak, 24 k TTS/WebSocket out, 48 k WebRTC/Opus) and any other pair of
// integer rates. Quality: ~8 zero crossings of the lower rate each side, cutoff at 0.45 × the lower rate, Kaiser
// β = 8 (stop band ≈ −80 dB), so downsampling does not alias and upsampling does not image. Cost: 17–49
// multiply-adds per output sample (e.g. 48 k → 16 k: 49 taps × 16 000/s ≈ 0.8 M MAC/s per stream).
//
// Streaming: call process() with blocks of any size; the filter state carries across blocks so the output is
// the same as resampling the concatenation (A input samples of look-ahead; call flush() at the end to get the
// tail). Output sample j sits at input time j·from/to, i.e. the output is aligned with the input (no delay).

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Modified Bessel function of the first kind, order 0 (series). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

export interface ResamplerOptions {
  /** Zero crossings of the lower rate on each side of the kernel (default 8). */
  zeroCrossings?: number;
  /** Cutoff as a fraction of the lower rate (default 0.45; Nyquist is 0.5). */
  cutoff?: number;
  /** Kaiser window β (default 8). */
  beta?: number;
}

const tableCache = new Map<string, { table: Float32Array[]; A: number }>();

function buildTable(L: number, M: number, opts: Required<ResamplerOptions>): { table: Float32Array[]; A: number } {
  const key = `${L}/${M}/${opts.zeroCrossings}/${opts.cutoff}/${opts.beta}`;
  const cached = tableCache.get(key);
  if (cached) return cached;
  // Prototype lowpass at the common upsampled rate U = from·L = to·M, in units of U samples.
  const ratio = Math.max(L, M); // U / lower rate
  const H = opts.zeroCrossings * ratio; // half-width in U samples
  const fc = opts.cutoff / ratio; // cutoff in cycles per U sample
  const A = Math.ceil(H / L); // input samples on each side
  const i0b = besselI0(opts.beta);
  const h = (n: number): number => {
    if (Math.abs(n) > H) return 0;
    const x = 2 * fc * n;
    const sinc = n === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    const r = n / H;
    const w = besselI0(opts.beta * Math.sqrt(Math.max(0, 1 - r * r))) / i0b;
    return 2 * fc * sinc * w * L; // gain L makes up for the zero-stuffing
  };
  const table: Float32Array[] = [];
  for (let r = 0; r < L; r++) {
    const t = new Float32Array(2 * A + 1);
    // input index i = i0 - A + k, distance in U samples: t_out - i·L = r + (A - k)·L
    for (let k = 0; k <= 2 * A; k++) t[k] = h(r + (A - k) * L);
    table.push(t);
  }
  const built = { table, A };
  tableCache.set(key, built);
  return built;
}

export class Resampler {
  readonly L: number;
  readonly M: number;
  private readonly table: Float32Array[];
  private readonly A: number;
  /** Pending input (float), buf[0] is absolute input index `base`. */
  private buf = new Float32Array(0);
  private base: number;
  private received = 0; // absolute count of real input samples
  private j = 0; // next output index
  private flushed = false;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
    opts: ResamplerOptions = {},
  ) {
    if (!(Number.isInteger(fromRate) && Number.isInteger(toRate) && fromRate > 0 && toRate > 0))
      throw new RangeError(`resampler rates must be positive integers, got ${fromRate} → ${toRate}`);
    const g = gcd(fromRate, toRate);
    this.L = toRate / g;
    this.M = fromRate / g;
    const built = buildTable(this.L, this.M, { zeroCrossings: opts.zeroCrossings ?? 8, cutoff: opts.cutoff ?? 0.45, beta: opts.beta ?? 8 });
    this.table = built.table;
    this.A = built.A;
    // A zeros of history before the first sample
    this.buf = new Float32Array(this.A);
    this.base = -this.A;
  }

  /** Output samples per input sample. */
  get ratio(): number {
    return this.L / this.M;
  }

  /**
   * Start as if `A` samples of silence (the filter's look-ahead, ≈ 1 ms) had already been received, before any
   * input. Without it each block's last A input samples wait for the next block, so a block of n samples gives
   * fewer than n·to/from outputs: an encoder that sends whole frames (carrier streams: 480 samples at 24 kHz in,
   * 160 µ-law bytes out) then holds every frame back by a whole frame period (20 ms) behind what it was given.
   * Primed, every block's outputs come with it (⌊n·to/from⌋ per block once blocks are whole multiples), and the
   * audio is A input samples later instead. The stream then begins with those A samples of silence.
   */
  prime(): this {
    if (this.received > 0 || this.L === this.M) return this;
    this.append(new Float32Array(this.A), 1);
    this.received += this.A;
    return this;
  }

  private append(input: Int16Array | Float32Array, scale: number): void {
    const next = new Float32Array(this.buf.length + input.length);
    next.set(this.buf);
    const off = this.buf.length;
    for (let i = 0; i < input.length; i++) next[off + i] = input[i]! * scale;
    this.buf = next;
  }

  private run(limit: number): Float32Array {
    // produce outputs j while the kernel's last input (i0 + A) is available (< limit)
    const { L, M, A, buf, base } = this;
    // outputs with floor(j·M/L) + A < limit  ⇔  j·M < (limit − A)·L
    const end = Math.max(this.j, Math.ceil(((limit - A) * L) / M));
    const out = new Float32Array(end - this.j);
    let n = 0;
    for (let j = this.j; j < end; j++) {
      const t = j * M;
      const i0 = Math.floor(t / L);
      if (i0 + A >= limit) break;
      const coefs = this.table[t - i0 * L]!;
      const start = i0 - A - base;
      let acc = 0;
      for (let k = 0; k < coefs.length; k++) acc += coefs[k]! * buf[start + k]!;
      out[n++] = acc;
    }
    this.j += n;
    // drop input no future output needs
    const nextI0 = Math.floor((this.j * M) / L);
    const drop = nextI0 - A - this.base;
    if (drop > 0) {
      this.buf = this.buf.slice(drop);
      this.base += drop;
    }
    return n === out.length ? out : out.subarray(0, n);
  }

  /** Resample a block of s16 samples. */
  process(input: Int16Array): Int16Array {
    if (this.flushed) throw new Error('resampler already flushed');
    if (this.L === this.M) return input.slice();
    this.append(input, 1);
    this.received += input.length;
    return toInt16(this.run(this.received));
  }

  /** Resample a block of float samples (any scale; output in the same scale). */
  processFloat(input: Float32Array): Float32Array {
    if (this.flushed) throw new Error('resampler already flushed');
    if (this.L === this.M) return input.slice();
    this.append(input, 1);
    this.received += input.length;
    return this.run(this.received);
  }

  /** End of stream: the remaining output (the input is padded with zeros). */
  flush(): Int16Array {
    if (this.flushed || this.L === this.M) {
      this.flushed = true;
      return new Int16Array(0);
    }
    this.flushed = true;
    const total = Math.ceil((this.received * this.L) / this.M); // outputs that belong to real input
    this.append(new Float32Array(this.A + 1), 1);
    const tail = this.run(this.received + this.A + 1);
    const keep = Math.max(0, tail.length - Math.max(0, this.j - total));
    return toInt16(tail.subarray(0, keep));
  }
}

function toInt16(f: Float32Array): Int16Array {
  const out = new Int16Array(f.length);
  for (let i = 0; i < f.length; i++) {
    const v = Math.round(f[i]!);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

/** Resample a whole buffer at once. */
export function resample(input: Int16Array, fromRate: number, toRate: number, opts?: ResamplerOptions): Int16Array {
  if (fromRate === toRate) return input.slice();
  const r = new Resampler(fromRate, toRate, opts);
  const a = r.process(input);
  const b = r.flush();
  const out = new Int16Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * The cheap streaming kernel: linear interpolation, for a path that runs on every frame of every call and is only
 * listened back to (the recording's caller track), where the windowed-sinc Resampler above would cost many times
 * its CPU.
 */
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
