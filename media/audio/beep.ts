// A voicemail beep in the caller's audio: one sustained pure tone (300–2500 Hz, ≥ 120 ms) — what answering
// machines and mailboxes play when they start recording. Speech is never one pure tone (voiced sounds are a
// fundamental plus harmonics, so no single frequency holds most of a frame's energy); DTMF is two.
//
// Per 20 ms frame: the frequency from the zero crossings, refined with Goertzel filters around it; the frame is
// tonal when that one frequency holds ≥ 70 % of the frame's energy. A run of ≥ 6 tonal frames at a steady frequency
// is a beep, reported when the run ends (the machine records from there on).

const FRAME_MS = 20;

export interface Beep {
  /** Hz */
  freq: number;
  ms: number;
}

/** Goertzel power of `f` Hz over `x`, normalised so a pure sine at f gives its energy share ≈ 1 (see purity). */
function goertzel(x: Int16Array, start: number, n: number, f: number, rate: number): number {
  const w = (2 * Math.PI * f) / rate;
  const c = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < n; i++) {
    const s0 = x[start + i]! + c * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - c * s1 * s2;
}

export class BeepDetector {
  private readonly frame: number;
  private buf: Int16Array;
  private fill = 0;
  private run = 0;
  private runFreq = 0;
  constructor(
    private readonly rate: number,
    private readonly o: { minMs?: number; purity?: number; minLevel?: number } = {},
  ) {
    this.frame = Math.round((rate * FRAME_MS) / 1000);
    this.buf = new Int16Array(this.frame);
  }

  /** Feed caller audio; returns the beeps that ended within it. */
  push(pcm: Int16Array): Beep[] {
    const out: Beep[] = [];
    let i = 0;
    while (i < pcm.length) {
      const take = Math.min(this.frame - this.fill, pcm.length - i);
      this.buf.set(pcm.subarray(i, i + take), this.fill);
      this.fill += take;
      i += take;
      if (this.fill < this.frame) break;
      this.fill = 0;
      const b = this.onFrame(this.buf);
      if (b) out.push(b);
    }
    return out;
  }

  /** A tone still sounding when the audio stops (the call ends mid-beep) is not reported. */
  private onFrame(x: Int16Array): Beep | null {
    const f = this.toneOf(x);
    const minFrames = Math.ceil((this.o.minMs ?? 120) / FRAME_MS);
    if (f !== null && (this.run === 0 || Math.abs(f - this.runFreq) <= 40)) {
      this.runFreq = this.run === 0 ? f : (this.runFreq * this.run + f) / (this.run + 1);
      this.run++;
      return null;
    }
    const ended = this.run >= minFrames ? { freq: Math.round(this.runFreq), ms: this.run * FRAME_MS } : null;
    this.run = f !== null ? 1 : 0;
    this.runFreq = f ?? 0;
    return ended;
  }

  /** The frame's single dominant frequency when it is a pure tone, else null. */
  private toneOf(x: Int16Array): number | null {
    const n = x.length;
    let energy = 0;
    let crossings = 0;
    for (let i = 0; i < n; i++) {
      energy += x[i]! * x[i]!;
      if (i > 0 && x[i - 1]! < 0 !== x[i]! < 0) crossings++;
    }
    const rms = Math.sqrt(energy / n);
    if (rms < (this.o.minLevel ?? 300)) return null;
    const estimate = (crossings / 2) * (this.rate / n);
    if (estimate < 280 || estimate > 2600) return null;
    let best = 0;
    let bestF = estimate;
    for (let d = -30; d <= 30; d += 10) {
      const p = goertzel(x, 0, n, estimate + d, this.rate);
      if (p > best) {
        best = p;
        bestF = estimate + d;
      }
    }
    // a sine of amplitude A over n samples: Goertzel power ≈ (nA/2)², frame energy ≈ nA²/2 → share = 2P / (n·E)
    const share = (2 * best) / (n * energy);
    return share >= (this.o.purity ?? 0.7) && bestF >= 300 && bestF <= 2500 ? bestF : null;
  }
}
