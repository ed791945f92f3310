// Audio files made in the test, with registry encoders: MP3 through lamejs, Opus through @evan/opus (libopus) muxed
// into Ogg and WebM by mediabunny, WAV through wavefile. The signal is a chirp: its autocorrelation has one sharp
// peak, so a recording can be found again in what a caller received (normalised cross-correlation).
import { Mp3Encoder } from '@breezystack/lamejs';
import { BufferTarget, EncodedAudioPacketSource, EncodedPacket, OggOutputFormat, Output, WebMOutputFormat } from 'mediabunny';
import wavefile from 'wavefile';
import { OpusEncoder48 } from '../../core/audio/opus.ts';

/** A linear chirp `f0` → `f1` Hz over `seconds`, mono s16 at `rate`, with 20 ms fades. */
export function chirp(seconds: number, rate: number, f0 = 300, f1 = 3000, amplitude = 12_000): Int16Array {
  const n = Math.round(seconds * rate);
  const out = new Int16Array(n);
  const fade = Math.round(rate * 0.02);
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const phase = 2 * Math.PI * (f0 * t + ((f1 - f0) / (2 * seconds)) * t * t);
    const env = Math.min(1, i / fade, (n - 1 - i) / fade);
    out[i] = Math.round(amplitude * env * Math.sin(phase));
  }
  return out;
}

export function wavFile(pcm: Int16Array, rate: number, channels = 1): Buffer {
  const wav = new wavefile.WaveFile();
  if (channels === 1) wav.fromScratch(1, rate, '16', pcm);
  else wav.fromScratch(channels, rate, '16', Array.from({ length: channels }, () => pcm));
  return Buffer.from(wav.toBuffer());
}

export function mp3File(pcm: Int16Array, rate: number, kbps = 64): Buffer {
  const enc = new Mp3Encoder(1, rate, kbps);
  const parts: Buffer[] = [];
  const add = (b: Int8Array | Uint8Array) => parts.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
  for (let off = 0; off < pcm.length; off += 1152) add(enc.encodeBuffer(pcm.subarray(off, off + 1152)));
  add(enc.flush());
  return Buffer.concat(parts);
}

/** OpusHead (RFC 7845 §5.1) for a mono 48 kHz stream: the container's codec description. */
function opusHead(preSkip: number): Uint8Array {
  const b = Buffer.alloc(19);
  b.write('OpusHead', 0, 'ascii');
  b[8] = 1;
  b[9] = 1;
  b.writeUInt16LE(preSkip, 10);
  b.writeUInt32LE(48_000, 12);
  return new Uint8Array(b);
}

/** Opus (20 ms packets of 48 kHz mono) in an Ogg or WebM container. */
export async function opusFile(pcm48k: Int16Array, container: 'ogg' | 'webm', preSkip = 312): Promise<Buffer> {
  const output = new Output({ format: container === 'ogg' ? new OggOutputFormat() : new WebMOutputFormat(), target: new BufferTarget() });
  const source = new EncodedAudioPacketSource('opus');
  output.addAudioTrack(source);
  await output.start();
  const enc = new OpusEncoder48(64_000);
  // the encoder's look-ahead is what pre-skip removes: feed it that much extra at the end so nothing is cut
  const padded = new Int16Array(Math.ceil((pcm48k.length + preSkip) / 960) * 960);
  padded.set(pcm48k);
  for (let off = 0, k = 0; off < padded.length; off += 960, k++) {
    const meta = k === 0 ? { decoderConfig: { codec: 'opus', numberOfChannels: 1, sampleRate: 48_000, description: opusHead(preSkip) } } : undefined;
    await source.add(new EncodedPacket(enc.encode(padded.subarray(off, off + 960)), 'key', k * 0.02, 0.02), meta);
  }
  await output.finalize();
  return Buffer.from(output.target.buffer!);
}

/**
 * Peak normalised cross-correlation of `needle` inside `hay` (same rate), searching every lag; 1 = identical shape.
 * Also returns the lag (samples into `hay`) of the peak.
 */
export function findIn(hay: Int16Array, needle: Int16Array): { score: number; lag: number } {
  let best = { score: 0, lag: -1 };
  const n = needle.length;
  let ee = 0;
  for (let i = 0; i < n; i++) ee += needle[i]! * needle[i]!;
  if (hay.length < n || ee === 0) return best;
  // running energy of the window of hay
  let hh = 0;
  for (let i = 0; i < n; i++) hh += hay[i]! * hay[i]!;
  for (let lag = 0; lag + n <= hay.length; lag++) {
    if (lag > 0) hh += hay[lag + n - 1]! * hay[lag + n - 1]! - hay[lag - 1]! * hay[lag - 1]!;
    if (hh <= 0) continue;
    let dot = 0;
    for (let i = 0; i < n; i++) dot += hay[lag + i]! * needle[i]!;
    const score = dot / Math.sqrt(ee * hh);
    if (score > best.score) best = { score, lag };
  }
  return best;
}
