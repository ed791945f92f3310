// The audio work of one WebRTC call, wherever it runs (inline on the media process's event loop, or in a codec
// worker process: media/webrtc/codec-pool.ts): agent audio at 24 kHz → 20 ms Opus packets, and the jitter buffer's
// play instructions → Opus decode (with concealment) → 16 kHz for the call session. One class for both paths, so the
// worker path gives exactly the audio of the inline path.
//
// No resampler: libopus takes the 24 kHz agent audio as it is (ordinary Opus at the 48 kHz RTP clock, band-limited at
// 12 kHz) and decodes the caller's packets straight to 16 kHz, band-limiting itself (test/webrtc/media-units.test.ts).
// The encoder is CELT ('audio' application, 32 kb/s, complexity 5 by default, the level where CELT's pitch pre-filter
// for voiced speech is on; WEBRTC_OPUS_COMPLEXITY sets it, from 7 up in hybrid mode), cheaper than the SILK/hybrid
// 'voip' encoder (bench/codec compares them). It gives up in-band FEC (a SILK feature; the NACK responder retransmits lost
// packets instead), and the browser conceals with CELT's rather than SILK's concealment.
import { DecodeStage, type FrameSink } from './jitter.ts';
import { OpusDecoder48, OpusEncoder48, type OpusEncoderOptions } from '../../core/audio/opus.ts';

/** A play instruction as it travels: a packet's payload, CONCEAL, or a positive number of silent 48 kHz samples. */
export type DecodeOp = Uint8Array | number;
export const CONCEAL = -1;

/** Rates at the two ends of a call's codec (the LiveTransport contract: agent audio 24 kHz in, caller 16 kHz out). */
export const AGENT_RATE = 24_000;
export const CALLER_RATE = 16_000;
/** WEBRTC_OPUS_COMPLEXITY (validated at boot by core/config.ts), read here from the environment so that the codec
 * worker processes and the media-plane thread, which inherit it, build the same encoder as the main thread. */
function agentComplexity(): number {
  const v = process.env.WEBRTC_OPUS_COMPLEXITY;
  const n = v === undefined || v === '' ? NaN : Number(v);
  return Number.isInteger(n) && n >= 0 && n <= 10 ? n : DEFAULT_AGENT_COMPLEXITY;
}
export const DEFAULT_AGENT_COMPLEXITY = 5;
/** The agent-audio encoder of a WebRTC call (see the header; bench/codec measures the alternatives). */
export const AGENT_ENCODER: Readonly<OpusEncoderOptions> & { bitrate: number } = {
  bitrate: 32_000,
  inputRate: AGENT_RATE,
  application: 'audio',
  complexity: agentComplexity(),
};

export class CallCodec {
  private readonly encoder = new OpusEncoder48(AGENT_ENCODER.bitrate, AGENT_ENCODER);
  /** a partial 20 ms frame of agent audio waiting for the rest */
  private readonly frame = new Int16Array(AGENT_RATE / 50);
  private fill = 0;
  private readonly stage: DecodeStage;
  private readonly decoded: Int16Array[] = [];

  constructor() {
    this.stage = new DecodeStage(new OpusDecoder48(CALLER_RATE), (pcm16) => this.decoded.push(pcm16), CALLER_RATE);
  }

  /** Agent audio (24 kHz, any length) → the whole 20 ms Opus packets it completes (a partial frame is held). */
  encode(pcm24k: Int16Array): Uint8Array[] {
    const packets: Uint8Array[] = [];
    const n = this.frame.length;
    let off = 0;
    if (this.fill) {
      const take = Math.min(n - this.fill, pcm24k.length);
      this.frame.set(pcm24k.subarray(0, take), this.fill);
      this.fill += take;
      off = take;
      if (this.fill < n) return packets;
      packets.push(this.encoder.encode(this.frame));
      this.fill = 0;
    }
    // whole frames straight from the input (no copy)
    for (; pcm24k.length - off >= n; off += n) packets.push(this.encoder.encode(pcm24k.subarray(off, off + n)));
    if (off < pcm24k.length) {
      this.frame.set(pcm24k.subarray(off));
      this.fill = pcm24k.length - off;
    }
    return packets;
  }

  /** Play instructions in order → caller audio at 16 kHz, and how many packets failed to decode (concealed). */
  decode(ops: readonly DecodeOp[]): { pcm: Int16Array; corrupt: number } {
    const corrupt = this.stage.corrupt;
    for (const op of ops) this.run(op);
    return { pcm: this.take(), corrupt: this.stage.corrupt - corrupt };
  }

  /** Whether the instruction of the last decodeOne() failed to decode (1: it was concealed) or not (0). */
  lastCorrupt = 0;

  /** One play instruction → its caller audio (16 kHz); lastCorrupt says whether it decoded. Made once per call, so
   * the inline path (a packet every 20 ms per call) passes it around without a closure or an array per packet. */
  readonly decodeOne = (op: DecodeOp): Int16Array => {
    const corrupt = this.stage.corrupt;
    this.run(op);
    this.lastCorrupt = this.stage.corrupt - corrupt;
    return this.take();
  };

  private run(op: DecodeOp): void {
    if (typeof op !== 'number') this.stage.packet(op);
    else if (op === CONCEAL) this.stage.conceal();
    else this.stage.silence(op);
  }

  /** the audio decoded since the last take (the parts list is reused) */
  private take(): Int16Array {
    const pcm = concat(this.decoded);
    this.decoded.length = 0;
    return pcm;
  }

  /** The jitter buffer's sink for inline use: instructions decoded at once, PCM to `out`. */
  sink(out: (pcm16k: Int16Array, corrupt: number) => void): FrameSink {
    const run = (op: DecodeOp) => out(this.decodeOne(op), this.lastCorrupt);
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
