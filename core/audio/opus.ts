// Opus at 48 kHz mono (the RTP clock of Opus is always 48 kHz), 20 ms frames, through @evan/opus: its native addon
// where it loads, else the WASM build the same package ships (OPUS_FORCE_WASM=1 forces it). The native addon is used
// on the main thread only: its encoders and decoders share one output buffer per process, so two threads coding at
// once corrupt each other's packets and the process can crash at exit (bench/codec shows it); every other thread
// loads the WASM build, whose state is per thread. Packet-loss concealment uses the decoder's own PLC where the
// backend has it (WASM: opus_decode with no data); the native addon refuses an empty packet, so there the jitter
// buffer repeats the last frame with a fading gain. Encoder settings go through opus_encoder_ctl (`ctl()`): the
// property setters the package's typings declare (`enc.complexity = 5`, …) exist on neither build; the tests read
// the settings back. Either end may run at 8/12/16/24 kHz instead of 48: WebRTC agent audio is encoded straight from
// 24 kHz and caller audio decoded straight to 16 kHz, with no resampler (libopus band-limits internally).
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';

export const OPUS_RATE = 48_000;
export const FRAME_SAMPLES = 960; // 20 ms at 48 kHz

// the package's typings also declare property setters (bitrate, complexity, …): neither build has them (see above)
interface OpusEncoder {
  encode(buf: ArrayBufferView): Uint8Array;
  ctl(request: number, value?: number): number;
}
interface OpusDecoder {
  decode(buf: ArrayBufferView): Uint8Array;
}
interface OpusModule {
  Encoder: new (o: { channels: 1; sample_rate: OpusRate; application: 'voip' | 'audio' }) => OpusEncoder;
  Decoder: new (o: { channels: 1 | 2; sample_rate: OpusRate }) => OpusDecoder;
}

const require = createRequire(import.meta.url);
let loaded: { mod: OpusModule; backend: 'native' | 'wasm' } | null = null;

function load(): { mod: OpusModule; backend: 'native' | 'wasm' } {
  if (loaded) return loaded;
  // the package reads OPUS_FORCE_WASM when it is loaded (a worker thread's process.env is its own copy)
  if (!isMainThread) process.env.OPUS_FORCE_WASM = '1';
  const mod = require('@evan/opus') as OpusModule;
  // the package picks native or WASM at load time; tell which one we got
  let backend: 'native' | 'wasm' = 'wasm';
  if (!process.env.OPUS_FORCE_WASM) {
    try {
      require(`@evan/opus/node/${process.arch}-${process.platform}.node`);
      backend = 'native';
    } catch {
      backend = 'wasm';
    }
  }
  loaded = { mod, backend };
  return loaded;
}

/** 'native' or 'wasm': which Opus build this process runs. */
export function opusBackend(): 'native' | 'wasm' {
  return load().backend;
}

// opus_encoder_ctl / opus_decoder_ctl requests (opus_defines.h)
const CTL = {
  SET_BITRATE: 4002, GET_BITRATE: 4003, SET_MAX_BANDWIDTH: 4004, GET_MAX_BANDWIDTH: 4005, SET_VBR: 4006, SET_COMPLEXITY: 4010, GET_COMPLEXITY: 4011, SET_INBAND_FEC: 4012,
  GET_INBAND_FEC: 4013, SET_PACKET_LOSS_PERC: 4014, SET_SIGNAL: 4024, GET_SIGNAL: 4025,
} as const;
const SIGNAL = { auto: -1000, voice: 3001, music: 3002 } as const;
const BANDWIDTH = { narrowband: 1101, mediumband: 1102, wideband: 1103, superwideband: 1104, fullband: 1105 } as const;
export type OpusBandwidth = keyof typeof BANDWIDTH;

/**
 * The widest audio band worth encoding for a receiver that plays back at most `rate` Hz (the `maxplaybackrate` of
 * its SDP, RFC 7587 §6.1), as libwebrtc maps it: ≤ 8 kHz narrowband, ≤ 12 kHz mediumband, ≤ 16 kHz wideband, ≤ 24 kHz
 * superwideband, else fullband.
 */
export function bandwidthForPlayback(rate: number): OpusBandwidth {
  return rate <= 8000 ? 'narrowband' : rate <= 12_000 ? 'mediumband' : rate <= 16_000 ? 'wideband' : rate <= 24_000 ? 'superwideband' : 'fullband';
}

export type OpusRate = 8000 | 12000 | 16000 | 24000 | 48000;

export interface OpusEncoderOptions {
  /** Rate of the PCM given to encode() (default 48 kHz); a frame is 20 ms at this rate. */
  inputRate?: OpusRate;
  /** 'voip' (SILK/hybrid for speech, in-band FEC possible) or 'audio' (CELT at these bitrates); default 'voip'. */
  application?: 'voip' | 'audio';
  /** 0–10 (default 5). */
  complexity?: number;
  /** In-band FEC (SILK only; default on for 'voip', off for 'audio'), tuned for `packetLossPct` (default 5). */
  fec?: boolean;
  packetLossPct?: number;
  /** Default 'voice' for 'voip', 'auto' for 'audio' ('voice' would move 'audio' back to hybrid SILK). */
  signal?: keyof typeof SIGNAL;
  /** The widest band encoded (default fullband): a receiver's maxplaybackrate through bandwidthForPlayback(). */
  maxBandwidth?: OpusBandwidth;
}

export interface OpusEncoderSettings {
  bitrate: number;
  complexity: number;
  fec: boolean;
  signal: keyof typeof SIGNAL | number;
  maxBandwidth: OpusBandwidth | number;
}

export class OpusEncoder48 {
  private readonly enc: OpusEncoder;
  /** Samples per 20 ms frame at the input rate. */
  readonly frameSamples: number;
  constructor(bitrate = 32_000, o: OpusEncoderOptions = {}) {
    const application = o.application ?? 'voip';
    const rate = o.inputRate ?? OPUS_RATE;
    this.frameSamples = rate / 50;
    this.enc = new (load().mod.Encoder)({ channels: 1, sample_rate: rate, application });
    const voip = application === 'voip';
    this.set(CTL.SET_BITRATE, bitrate);
    this.set(CTL.SET_SIGNAL, SIGNAL[o.signal ?? (voip ? 'voice' : 'auto')]);
    this.set(CTL.SET_INBAND_FEC, (o.fec ?? voip) ? 1 : 0);
    this.set(CTL.SET_PACKET_LOSS_PERC, o.packetLossPct ?? 5);
    // 5 of 10: the usual real-time voice setting; bench/codec measures every level
    this.set(CTL.SET_COMPLEXITY, o.complexity ?? 5);
    this.set(CTL.SET_MAX_BANDWIDTH, BANDWIDTH[o.maxBandwidth ?? 'fullband']);
  }

  private set(request: number, value: number): void {
    const r = this.enc.ctl(request, value);
    if (r !== 0) throw new Error(`opus_encoder_ctl(${request}, ${value}) failed: ${r}`);
  }

  /** What libopus actually runs with (read back through ctl). */
  settings(): OpusEncoderSettings {
    const signal = this.enc.ctl(CTL.GET_SIGNAL);
    const name = (Object.keys(SIGNAL) as Array<keyof typeof SIGNAL>).find((k) => SIGNAL[k] === signal);
    const bw = this.enc.ctl(CTL.GET_MAX_BANDWIDTH);
    const band = (Object.keys(BANDWIDTH) as OpusBandwidth[]).find((k) => BANDWIDTH[k] === bw);
    return { bitrate: this.enc.ctl(CTL.GET_BITRATE), complexity: this.enc.ctl(CTL.GET_COMPLEXITY), fec: this.enc.ctl(CTL.GET_INBAND_FEC) === 1, signal: name ?? signal, maxBandwidth: band ?? bw };
  }

  /** One 20 ms frame (frameSamples) → one Opus packet (copied: the addon reuses its output buffer). */
  encode(frame: Int16Array): Uint8Array {
    if (frame.length !== this.frameSamples) throw new RangeError(`opus frames are ${this.frameSamples} samples, got ${frame.length}`);
    return new Uint8Array(this.enc.encode(frame));
  }
}

export class OpusDecoder48 {
  private readonly dec: OpusDecoder;
  private plcWorks: boolean | null = null;
  /** Samples per 20 ms frame at the output rate. */
  readonly frameSamples: number;
  /** `outputRate`: the rate decode() returns (default 48 kHz; libopus band-limits below it, no aliasing). */
  constructor(readonly outputRate: OpusRate = OPUS_RATE) {
    this.dec = new (load().mod.Decoder)({ channels: 1, sample_rate: outputRate });
    this.frameSamples = outputRate / 50;
  }
  /** One Opus packet → mono samples at the output rate (a fresh array). Throws on a corrupt packet. */
  decode(packet: Uint8Array): Int16Array {
    const out = this.dec.decode(packet);
    // both builds hand back a fresh copy (a `slice` of their output buffer): it is taken as it is, not copied again
    // (50 frames a second per call); a view into a larger buffer (a shared output buffer) is still copied
    if (out.byteOffset === 0 && out.buffer.byteLength === out.byteLength && out.byteLength % 2 === 0 && !(out.buffer instanceof SharedArrayBuffer)) {
      return new Int16Array(out.buffer, 0, out.byteLength >> 1);
    }
    const pcm = new Int16Array(out.length >> 1);
    new Uint8Array(pcm.buffer).set(out.subarray(0, pcm.length * 2));
    return pcm;
  }
  /** Decoder PLC for one lost 20 ms frame, or null when the backend has none. */
  conceal(): Int16Array | null {
    if (this.plcWorks === false) return null;
    try {
      const pcm = this.decode(new Uint8Array(0));
      this.plcWorks = true;
      return pcm.length >= this.frameSamples ? pcm.slice(0, this.frameSamples) : null;
    } catch {
      this.plcWorks = false;
      return null;
    }
  }
}
