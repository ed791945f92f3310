// Mixer: adds sound sources under/over the agent's speech frame by frame (24 kHz): a looping background bed,
// a looping task sound while a tool runs, and one-shot overlays (acknowledgements, filler words).
// With every section disabled it holds nothing and returns frames untouched.
import { clip16 } from './resample.ts';

class Loop {
  private pos = 0;
  constructor(
    private readonly pcm: Int16Array,
    public gain: number,
  ) {}
  addTo(acc: Float32Array): void {
    for (let i = 0; i < acc.length; i++) {
      acc[i] = acc[i]! + this.pcm[this.pos]! * this.gain;
      if (++this.pos >= this.pcm.length) this.pos = 0;
    }
  }
}

export class Mixer {
  private background: Loop | null = null;
  private task: Loop | null = null;
  private readonly oneShots: Array<{ pcm: Int16Array; pos: number; gain: number }> = [];
  private readonly acc: Float32Array;

  constructor(readonly frameSamples = 480) {
    this.acc = new Float32Array(frameSamples);
  }

  setBackground(pcm: Int16Array | null, volume = 0): void {
    this.background = pcm ? new Loop(pcm, volume) : null;
  }
  setTask(pcm: Int16Array | null, volume = 0): void {
    this.task = pcm ? new Loop(pcm, volume) : null;
  }
  get taskPlaying(): boolean {
    return this.task !== null;
  }
  overlay(pcm: Int16Array, gain = 1): void {
    if (pcm.length) this.oneShots.push({ pcm, pos: 0, gain });
  }

  /** true when the mixer has audio of its own, so frames must flow even without speech */
  get active(): boolean {
    return this.background !== null || this.task !== null || this.oneShots.length > 0;
  }

  /** Mix into a frame (speech or null for silence). Returns the frame to send, or null when nothing to send. */
  mix(speech: Int16Array | null): Int16Array | null {
    if (!this.active) return speech;
    const acc = this.acc;
    if (speech) for (let i = 0; i < acc.length; i++) acc[i] = speech[i] ?? 0;
    else acc.fill(0);
    this.background?.addTo(acc);
    this.task?.addTo(acc);
    for (let k = this.oneShots.length - 1; k >= 0; k--) {
      const o = this.oneShots[k]!;
      for (let i = 0; i < acc.length && o.pos < o.pcm.length; i++) acc[i] = acc[i]! + o.pcm[o.pos++]! * o.gain;
      if (o.pos >= o.pcm.length) this.oneShots.splice(k, 1);
    }
    const out = new Int16Array(acc.length);
    for (let i = 0; i < acc.length; i++) out[i] = clip16(acc[i]!);
    return out;
  }
}
