// A telephone line in software (carriers.md "Simulating the phone leg"): band-pass 300–3400 Hz, down to 8 kHz
// (the resampler's low-pass sits below 4 kHz before decimating, so nothing aliases), a G.711 µ-law round trip, and
// back up to the stream's rate. Test calls with `telephonySim: true` put it in front of the pipeline's input so
// the agent hears what it would hear on a phone; telephony transports can use it to preview the same audio.
//
// Streaming: process() takes blocks of any size and keeps filter state, so output is the line applied to the
// concatenated input (with the resamplers' alignment: no added delay beyond the IIR filters' phase).
import { Resampler } from '../../core/audio/resample.ts';
import { decodeMulaw, encodeMulaw } from './mulaw.ts';

const LINE_RATE = 8000;
export const PHONE_BAND = { lowHz: 300, highHz: 3400 } as const;

/** Direct-form-I biquad (RBJ cookbook), float state. */
class Biquad {
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;
  constructor(private readonly b0: number, private readonly b1: number, private readonly b2: number, private readonly a1: number, private readonly a2: number) {}

  static lowpass(rate: number, f: number, q: number): Biquad {
    const w = (2 * Math.PI * f) / rate;
    const alpha = Math.sin(w) / (2 * q);
    const cos = Math.cos(w);
    const a0 = 1 + alpha;
    return new Biquad((1 - cos) / 2 / a0, (1 - cos) / a0, (1 - cos) / 2 / a0, (-2 * cos) / a0, (1 - alpha) / a0);
  }

  static highpass(rate: number, f: number, q: number): Biquad {
    const w = (2 * Math.PI * f) / rate;
    const alpha = Math.sin(w) / (2 * q);
    const cos = Math.cos(w);
    const a0 = 1 + alpha;
    return new Biquad((1 + cos) / 2 / a0, -(1 + cos) / a0, (1 + cos) / 2 / a0, (-2 * cos) / a0, (1 - alpha) / a0);
  }

  run(buf: Float32Array): void {
    for (let i = 0; i < buf.length; i++) {
      const x = buf[i]!;
      const y = this.b0 * x + this.b1 * this.x1 + this.b2 * this.x2 - this.a1 * this.y1 - this.a2 * this.y2;
      this.x2 = this.x1;
      this.x1 = x;
      this.y2 = this.y1;
      this.y1 = y;
      buf[i] = y;
    }
  }
}

// 4th-order Butterworth sections (two biquads with these Qs)
const BUTTER4_Q = [0.5411961, 1.3065630];

export class PhoneLine {
  private readonly filters: Biquad[];
  private readonly down: Resampler;
  private readonly up: Resampler;

  constructor(readonly rate: number) {
    if (!Number.isInteger(rate) || rate < LINE_RATE) throw new RangeError(`phone line needs an input rate of at least ${LINE_RATE} Hz, got ${rate}`);
    // the 3400 Hz edge is applied at the input rate (where it is below Nyquist); at 8 kHz input it is still valid
    this.filters = [
      ...BUTTER4_Q.map((q) => Biquad.highpass(rate, PHONE_BAND.lowHz, q)),
      ...BUTTER4_Q.map((q) => Biquad.lowpass(rate, PHONE_BAND.highHz, q)),
    ];
    this.down = new Resampler(rate, LINE_RATE);
    this.up = new Resampler(LINE_RATE, rate);
  }

  /** One block of caller audio at `rate` → the same audio as it would arrive over a phone line, at `rate`. */
  process(pcm: Int16Array): Int16Array {
    const f = new Float32Array(pcm.length);
    for (let i = 0; i < pcm.length; i++) f[i] = pcm[i]!;
    for (const bq of this.filters) bq.run(f);
    const clipped = new Int16Array(f.length);
    for (let i = 0; i < f.length; i++) {
      const v = Math.round(f[i]!);
      clipped[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
    const line = this.down.process(clipped);
    const companded = decodeMulaw(encodeMulaw(line));
    return this.up.process(companded);
  }

  /** End of stream: the resamplers' look-ahead tail. */
  flush(): Int16Array {
    const line = this.down.flush();
    const a = this.up.process(decodeMulaw(encodeMulaw(line)));
    const b = this.up.flush();
    const out = new Int16Array(a.length + b.length);
    out.set(a);
    out.set(b, a.length);
    return out;
  }
}

/** The whole-buffer form (tests, offline previews): same length as the input. */
export function phoneLine(pcm: Int16Array, rate: number): Int16Array {
  const line = new PhoneLine(rate);
  const a = line.process(pcm);
  const b = line.flush();
  const out = new Int16Array(pcm.length);
  out.set(a.subarray(0, out.length));
  out.set(b.subarray(0, Math.max(0, out.length - a.length)), Math.min(a.length, out.length));
  return out;
}
