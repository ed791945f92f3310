// Mixer: adds sound sources under/over the agent's speech frame by frame (24 kHz): a looping background bed,
// a looping task sound while a tool runs, and one-shot overlays (acknowledgements, filler words).
// With every section disabled it holds nothing and returns frames untouched.
import { clip16 } from '../audio/pcm.ts';

/** A looping sound with its volume applied (media/sounds backgroundSource / taskSoundSource). */
export interface SoundSource {
  read(samples: number): Int16Array;
}

function addTo(acc: Float32Array, src: SoundSource): void {
  const pcm = src.read(acc.length);
  for (let i = 0; i < acc.length; i++) acc[i] = acc[i]! + (pcm[i] ?? 0);
}

export class Mixer {
  private background: SoundSource | null = null;
  private task: SoundSource | null = null;
  private readonly oneShots: Array<{ pcm: Int16Array; pos: number; gain: number }> = [];
  private readonly acc: Float32Array;

  constructor(readonly frameSamples = 480) {
    this.acc = new Float32Array(frameSamples);
  }

  setBackground(src: SoundSource | null): void {
    this.background = src;
  }
  setTask(src: SoundSource | null): void {
    this.task = src;
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
    if (this.background) addTo(acc, this.background);
    if (this.task) addTo(acc, this.task);
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
