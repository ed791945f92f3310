// The audio work of one WebRTC call, wherever it runs (inline on the media process's event loop, or in a codec
// worker thread: media/webrtc/codec-pool.ts): agent audio 24 kHz → 48 kHz → 20 ms Opus packets, and the jitter
// buffer's play instructions → Opus decode (with concealment) → 16 kHz for the session. Keeping it in one class is
// what makes the worker path give exactly the audio of the inline path.
import { Resampler } from '../audio/resample.ts';
import { DecodeStage, type FrameSink } from './jitter.ts';
import { FRAME_SAMPLES, OpusDecoder48, OpusEncoder48 } from './opus.ts';

/** A play instruction as it travels: a packet's payload, CONCEAL, or a positive number of silent 48 kHz samples. */
export type DecodeOp = Uint8Array | number;
export const CONCEAL = -1;

export class CallCodec {
  private readonly encoder = new OpusEncoder48();
  private readonly up = new Resampler(24_000, 48_000);
  private readonly down = new Resampler(48_000, 16_000);
  private readonly stage: DecodeStage;
  private outBuf = new Int16Array(0);
  private decoded: Int16Array[] = [];

  constructor() {
    this.stage = new DecodeStage(new OpusDecoder48(), (pcm48) => this.decoded.push(this.down.process(pcm48)));
  }

  /** Agent audio (24 kHz, any length) → the whole 20 ms Opus packets it completes (a partial frame is held). */
  encode(pcm24k: Int16Array): Uint8Array[] {
    const pcm48 = this.up.process(pcm24k);
    const merged = new Int16Array(this.outBuf.length + pcm48.length);
    merged.set(this.outBuf);
    merged.set(pcm48, this.outBuf.length);
    const packets: Uint8Array[] = [];
    let off = 0;
    for (; merged.length - off >= FRAME_SAMPLES; off += FRAME_SAMPLES) packets.push(this.encoder.encode(merged.subarray(off, off + FRAME_SAMPLES)));
    this.outBuf = merged.slice(off);
    return packets;
  }

  /** Play instructions in order → caller audio at 16 kHz, and how many packets failed to decode (concealed). */
  decode(ops: readonly DecodeOp[]): { pcm: Int16Array; corrupt: number } {
    const corrupt = this.stage.corrupt;
    for (const op of ops) {
      if (typeof op !== 'number') this.stage.packet(op);
      else if (op === CONCEAL) this.stage.conceal();
      else this.stage.silence(op);
    }
    const parts = this.decoded;
    this.decoded = [];
    return { pcm: concat(parts), corrupt: this.stage.corrupt - corrupt };
  }

  /** The jitter buffer's sink for inline use: instructions decoded at once, PCM to `out`. */
  sink(out: (pcm16k: Int16Array, corrupt: number) => void): FrameSink {
    const run = (op: DecodeOp) => {
      const r = this.decode([op]);
      out(r.pcm, r.corrupt);
    };
    return { packet: run, conceal: () => run(CONCEAL), silence: run };
  }
}

export function concat(parts: readonly Int16Array[]): Int16Array {
  if (parts.length === 1) return parts[0]!;
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Int16Array(n);
  n = 0;
  for (const p of parts) {
    out.set(p, n);
    n += p.length;
  }
  return out;
}
