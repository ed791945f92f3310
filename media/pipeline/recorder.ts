// Recorder tap: caller (16 kHz, upsampled) and agent (24 kHz) mixed onto one timeline, kept in 1-second blocks
// of 24 kHz; encoded to a mono 16-bit WAV at the end of the call.
import wavefile from 'wavefile';
import { clip16, LinearResampler } from './resample.ts';

const RATE = 24000;

export class Recorder {
  private readonly blocks: Int32Array[] = [];
  private readonly up = new LinearResampler(16000, RATE);
  private callerPos = 0; // samples at 24 kHz
  private end = 0;

  constructor(
    private readonly t0: number,
    private readonly maxSeconds = 7300,
  ) {}

  /** caller audio as it arrives (16 kHz); placed at its stream position, realigned to the clock after gaps */
  addCaller(pcm16k: Int16Array, now: number): void {
    const up = this.up.process(pcm16k);
    const wall = Math.round(((now - this.t0) / 1000) * RATE) - up.length;
    if (wall - this.callerPos > RATE / 5) this.callerPos = wall; // client paused sending: keep the timeline
    this.add(up, this.callerPos);
    this.callerPos += up.length;
  }

  /** agent audio frame (24 kHz) at its playout time on the clock */
  addAgent(pcm24k: Int16Array, at: number): void {
    this.add(pcm24k, Math.max(0, Math.round(((at - this.t0) / 1000) * RATE)));
  }

  private add(pcm: Int16Array, pos: number): void {
    for (let i = 0; i < pcm.length; i++) {
      const p = pos + i;
      const b = Math.floor(p / RATE);
      if (b >= this.maxSeconds) return;
      let block = this.blocks[b];
      if (!block) {
        for (let k = this.blocks.length; k <= b; k++) this.blocks[k] ??= new Int32Array(RATE);
        block = this.blocks[b]!;
      }
      block[p - b * RATE] = block[p - b * RATE]! + pcm[i]!;
    }
    this.end = Math.max(this.end, pos + pcm.length);
  }

  get durationS(): number {
    return this.end / RATE;
  }

  toWav(): Buffer {
    const out = new Int16Array(this.end);
    for (let p = 0; p < this.end; p++) {
      const b = this.blocks[Math.floor(p / RATE)];
      out[p] = b ? clip16(b[p % RATE]!) : 0;
    }
    const wav = new wavefile.WaveFile();
    wav.fromScratch(1, RATE, '16', out);
    return Buffer.from(wav.toBuffer());
  }
}
