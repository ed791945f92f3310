// Opus at 48 kHz mono, 20 ms frames, through @evan/opus: its native addon where it loads, else the WASM build the
// same package ships (selected by the package itself; OPUS_FORCE_WASM=1 forces it). The native addon is used on the
// main thread only: its encoders and decoders share one output buffer per process, so two threads coding at once
// corrupt each other's packets and the process can crash at exit (bench/codec measures it: thousands of wrong
// packets out of 6,000, then a segfault); every other thread (the codec pool's workers) loads the WASM build, whose
// state is per thread. Packet-loss concealment uses
// the decoder's own PLC where the backend supports it (WASM: opus_decode with no data); the native addon refuses
// an empty packet, so there the jitter buffer falls back to fading repetition of the last frame.
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';

export const OPUS_RATE = 48_000;
export const FRAME_SAMPLES = 960; // 20 ms at 48 kHz

interface OpusEncoder {
  encode(buf: ArrayBufferView): Uint8Array;
  bitrate: number | 'auto' | 'max';
  inband_fec: boolean;
  packet_loss: number;
  signal: 'auto' | 'voice' | 'music';
  complexity: number;
}
interface OpusDecoder {
  decode(buf: ArrayBufferView): Uint8Array;
}
interface OpusModule {
  Encoder: new (o: { channels: 1; sample_rate: 48000; application: 'voip' }) => OpusEncoder;
  Decoder: new (o: { channels: 1 | 2; sample_rate: 48000 }) => OpusDecoder;
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

export class OpusEncoder48 {
  private readonly enc: OpusEncoder;
  constructor(bitrate = 32_000) {
    this.enc = new (load().mod.Encoder)({ channels: 1, sample_rate: 48000, application: 'voip' });
    this.enc.bitrate = bitrate;
    this.enc.signal = 'voice';
    this.enc.inband_fec = true;
    this.enc.packet_loss = 5;
    // 5 of 10: the usual real-time voice setting (bench/webrtc: CPU per call); quality stays well above what
    // the STT/TTS chain needs
    this.enc.complexity = 5;
  }
  /** One 20 ms frame (960 samples) → one Opus packet (copied: the addon reuses its output buffer). */
  encode(frame: Int16Array): Uint8Array {
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`opus frames are ${FRAME_SAMPLES} samples, got ${frame.length}`);
    return Uint8Array.from(this.enc.encode(frame));
  }
}

export class OpusDecoder48 {
  private readonly dec: OpusDecoder;
  private plcWorks: boolean | null = null;
  constructor() {
    this.dec = new (load().mod.Decoder)({ channels: 1, sample_rate: 48000 });
  }
  /** One Opus packet → mono 48 kHz samples (a fresh array). Throws on a corrupt packet. */
  decode(packet: Uint8Array): Int16Array {
    const out = this.dec.decode(packet);
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
      return pcm.length >= FRAME_SAMPLES ? pcm.slice(0, FRAME_SAMPLES) : null;
    } catch {
      this.plcWorks = false;
      return null;
    }
  }
}
