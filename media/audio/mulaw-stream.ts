// Carrier media-stream codecs: 8 kHz G.711 µ-law on the phone side, linear PCM at the pipeline's rates on ours.
// Both directions are streaming (the resampler keeps its filter state across blocks), so a call's audio is
// converted exactly as if it were one buffer.
import { FramedEncoder } from './framed-encoder.ts';
import { decodeMulaw, encodeMulaw } from './mulaw.ts';
import { Resampler } from '../../core/audio/resample.ts';

/** µ-law bytes of one 20 ms frame at 8 kHz. */
export const MULAW_FRAME_BYTES = 160;

/** Carrier → pipeline: 8 kHz µ-law bytes in, 16 kHz s16 out. */
export class MulawDecoder {
  private readonly r: Resampler;
  constructor(readonly toRate = 16000) {
    // primed: each 20 ms frame of caller audio is passed on whole at once (see the encoder below)
    this.r = new Resampler(8000, toRate).prime();
  }
  decode(bytes: Uint8Array): Int16Array {
    return this.r.process(decodeMulaw(bytes));
  }
}

/**
 * Pipeline → carrier: s16 at `fromRate` (24 kHz agent audio) in, whole µ-law frames of `frameBytes` out (20 ms =
 * 160 bytes; carriers that want larger payloads pass a multiple of 160). A partial frame waits for more audio.
 */
export class MulawEncoder extends FramedEncoder {
  private readonly r: Resampler;
  /** µ-law silence */
  protected readonly silenceByte = 0xff;
  constructor(
    readonly fromRate = 24000,
    readonly frameBytes = MULAW_FRAME_BYTES,
  ) {
    super();
    if (frameBytes <= 0 || frameBytes % MULAW_FRAME_BYTES !== 0) throw new RangeError('frameBytes must be a positive multiple of 160');
    // primed: a 20 ms block of agent audio leaves as a 20 ms frame at once, not one frame period later
    this.r = new Resampler(fromRate, 8000).prime();
  }

  /** Encode a block; returns the whole frames now ready (each `frameBytes` long). */
  push(pcm: Int16Array): Uint8Array[] {
    return this.frames(encodeMulaw(this.r.process(pcm)));
  }

  protected override drain(): Uint8Array {
    return encodeMulaw(this.r.flush());
  }
}
