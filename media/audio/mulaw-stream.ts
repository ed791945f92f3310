// Carrier media-stream codecs: 8 kHz G.711 µ-law on the phone side, linear PCM at the pipeline's rates on ours.
// Both directions are streaming (the resampler keeps its filter state across blocks), so a call's audio is
// converted exactly as if it were one buffer.
import { decodeMulaw, encodeMulaw } from './mulaw.ts';
import { Resampler } from './resample.ts';

/** µ-law bytes of one 20 ms frame at 8 kHz. */
export const MULAW_FRAME_BYTES = 160;

/** Carrier → pipeline: 8 kHz µ-law bytes in, 16 kHz s16 out. */
export class MulawDecoder {
  private readonly r: Resampler;
  constructor(readonly toRate = 16000) {
    this.r = new Resampler(8000, toRate);
  }
  decode(bytes: Uint8Array): Int16Array {
    return this.r.process(decodeMulaw(bytes));
  }
}

/**
 * Pipeline → carrier: s16 at `fromRate` (24 kHz agent audio) in, whole µ-law frames of `frameBytes` out (20 ms =
 * 160 bytes; carriers that want larger payloads pass a multiple of 160). A partial frame waits for more audio.
 */
export class MulawEncoder {
  private readonly r: Resampler;
  private pending = new Uint8Array(0);
  /** µ-law bytes produced so far, including any dropped by discard() (the position in the outgoing stream) */
  produced = 0;
  constructor(
    readonly fromRate = 24000,
    readonly frameBytes = MULAW_FRAME_BYTES,
  ) {
    if (frameBytes <= 0 || frameBytes % MULAW_FRAME_BYTES !== 0) throw new RangeError('frameBytes must be a positive multiple of 160');
    this.r = new Resampler(fromRate, 8000);
  }

  /** Encode a block; returns the whole frames now ready (each `frameBytes` long). */
  push(pcm: Int16Array): Uint8Array[] {
    const bytes = encodeMulaw(this.r.process(pcm));
    let all = bytes;
    if (this.pending.length) {
      all = new Uint8Array(this.pending.length + bytes.length);
      all.set(this.pending);
      all.set(bytes, this.pending.length);
    }
    const out: Uint8Array[] = [];
    let o = 0;
    for (; o + this.frameBytes <= all.length; o += this.frameBytes) out.push(all.slice(o, o + this.frameBytes));
    this.pending = all.slice(o);
    this.produced += o;
    return out;
  }

  /** The held partial frame padded with µ-law silence (0xFF), or null when nothing is held. */
  flush(): Uint8Array | null {
    if (!this.pending.length) return null;
    const f = new Uint8Array(this.frameBytes).fill(0xff);
    f.set(this.pending);
    this.produced += this.frameBytes;
    this.pending = new Uint8Array(0);
    return f;
  }

  /** Barge-in: drop the held partial frame (it counts as produced, so positions stay aligned). */
  discard(): void {
    this.produced += this.pending.length;
    this.pending = new Uint8Array(0);
  }
}
