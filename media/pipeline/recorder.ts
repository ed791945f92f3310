// Recorder tap: caller (16 kHz, upsampled) and agent (24 kHz) mixed onto one timeline, kept in 1-second blocks
// of 24 kHz s16 (mixed with saturation as it arrives: 48 KB per call-second); a mono 16-bit WAV at the end.
import { wavHeader } from '../../core/storage/wav.ts';
import { LinearResampler } from './resample.ts';

const RATE = 24000;

export class Recorder {
  private readonly blocks: Int16Array[] = [];
  private readonly up = new LinearResampler(16000, RATE);
  /** the upsampled caller frame, reused (add() copies it into the blocks at once) */
  private scratch = new Int16Array(0);
  private callerPos = 0; // samples at 24 kHz
  private end = 0;

  constructor(
    private readonly t0: number,
    private readonly maxSeconds = 7300,
  ) {}

  /** caller audio as it arrives (16 kHz); placed at its stream position, realigned to the clock after gaps */
  addCaller(pcm16k: Int16Array, now: number): void {
    const need = Math.ceil(pcm16k.length * 1.5) + 3;
    if (this.scratch.length < need) this.scratch = new Int16Array(need);
    const up = this.up.process(pcm16k, this.scratch);
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
    let i = 0;
    while (i < pcm.length) {
      const p = pos + i;
      const b = Math.floor(p / RATE);
      if (b >= this.maxSeconds) return;
      for (let k = this.blocks.length; k <= b; k++) this.blocks[k] ??= new Int16Array(RATE);
      const block = this.blocks[b]!;
      const off = p - b * RATE;
      const n = Math.min(pcm.length - i, RATE - off);
      for (let k = 0; k < n; k++) {
        const v = block[off + k]! + pcm[i + k]!; // saturating mix
        block[off + k] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      }
      i += n;
    }
    this.end = Math.max(this.end, pos + pcm.length);
  }

  get durationS(): number {
    return this.end / RATE;
  }

  toWav(): Buffer {
    const out = new Int16Array(this.end);
    for (let b = 0; b * RATE < this.end; b++) {
      const block = this.blocks[b];
      if (!block) continue;
      const n = Math.min(RATE, this.end - b * RATE);
      const base = b * RATE;
      out.set(n === RATE ? block : block.subarray(0, n), base);
    }
    // header + raw s16le samples (wavefile's sample-by-sample packing costs ~20 ms per call-minute on this box)
    const data = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    return Buffer.concat([wavHeader({ sampleRate: RATE, channels: 1, bitsPerSample: 16, dataBytes: data.length }), data]);
  }
}
