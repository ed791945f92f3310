// Carrier media-stream codec for raw linear PCM (16-bit little-endian, "audio/l16"): Vonage's binary frames
// (8 or 16 kHz) and Exotel's base64 payloads (8 kHz). Same shape as mulaw-stream.ts so the carrier stream
// transport can use either: streaming resamplers both ways, whole frames out, positions counted in bytes.
import { FramedEncoder } from './framed-encoder.ts';
import { bytesToInt16, int16ToBytes } from './pcm.ts';
import { Resampler } from '../../core/audio/resample.ts';

/** Carrier → pipeline: s16le bytes at `fromRate` in, 16 kHz s16 out. */
export class L16Decoder {
  private readonly r: Resampler | null;
  private odd: number | null = null;
  constructor(readonly fromRate: number, readonly toRate = 16000) {
    // primed: each frame of caller audio is passed on whole at once (see mulaw-stream.ts)
    this.r = fromRate === toRate ? null : new Resampler(fromRate, toRate).prime();
  }
  decode(bytes: Uint8Array): Int16Array {
    let b = bytes;
    if (this.odd !== null) {
      // a sample split across two messages (never seen in practice; cheap to be right)
      const j = new Uint8Array(b.length + 1);
      j[0] = this.odd;
      j.set(b, 1);
      b = j;
      this.odd = null;
    }
    if (b.length & 1) {
      this.odd = b[b.length - 1]!;
      b = b.subarray(0, b.length - 1);
    }
    const pcm = bytesToInt16(b).slice();
    return this.r ? this.r.process(pcm) : pcm;
  }
}

/** Pipeline → carrier: 24 kHz s16 in, whole s16le frames of `frameBytes` at `toRate` out (padded with zeros). */
export class L16Encoder extends FramedEncoder {
  private readonly r: Resampler;
  protected readonly silenceByte = 0;
  constructor(
    readonly toRate: number,
    readonly frameBytes: number,
    readonly fromRate = 24000,
  ) {
    super();
    if (frameBytes <= 0 || frameBytes % 2 !== 0) throw new RangeError('frameBytes must be a positive even number');
    // primed: a 20 ms block of agent audio leaves as a 20 ms frame at once, not one frame period later
    this.r = new Resampler(fromRate, toRate).prime();
  }

  push(pcm: Int16Array): Uint8Array[] {
    return this.frames(new Uint8Array(int16ToBytes(this.r.process(pcm))));
  }

  protected override drain(): Uint8Array {
    return new Uint8Array(int16ToBytes(this.r.flush()));
  }
}
