// Decoding an uploaded audio recording, once, into the pipeline's format (24 kHz mono s16).
// The container is recognised from the bytes (not the file name) by mediabunny's demuxers; the codecs are decoded
// by registry decoders: WAV through wavefile (PCM, float, µ-law, A-law), MP3 through mpg123-decoder (mpg123 in
// WebAssembly), Opus in Ogg or WebM through @evan/opus (libopus) on the packets mediabunny demuxes. Nothing here
// parses a codec bitstream itself. Decoding stops as soon as the audio passes the duration limit, so a small file of
// very long audio costs no more than the limit.
import {
  ADTS,
  BufferSource,
  EncodedPacketSink,
  FLAC,
  Input,
  MATROSKA,
  MP3,
  MP4,
  OGG,
  QTFF,
  UnsupportedInputFormatError,
  WAVE,
  WEBM,
  type InputAudioTrack,
  type InputFormat,
} from 'mediabunny';
import { MPEGDecoder } from 'mpg123-decoder';
import { Resampler } from '../audio/resample.ts';
import { readWav } from '../audio/wav.ts';
import { OpusDecoder48 } from '../audio/opus.ts';

/** The pipeline's rate: stored recordings play through the pacer as they are. */
export const RECORDING_RATE = 24_000;
export const MAX_RECORDING_BYTES = 10 * 1024 * 1024;
export const MAX_RECORDING_SECONDS = 120;
export const RECORDING_FORMATS = ['wav', 'mp3', 'ogg', 'webm'] as const;
export type RecordingFormat = (typeof RECORDING_FORMATS)[number];

export const ALLOWED_AUDIO = 'WAV, MP3, OGG/Opus or WebM/Opus';
export const TOO_LARGE = `File exceeds maximum size of ${MAX_RECORDING_BYTES / (1024 * 1024)}MB`;
export const TOO_LONG = `Audio exceeds maximum duration of ${MAX_RECORDING_SECONDS} seconds`;

/** Why an upload is refused (400 with `message`). */
export class AudioDecodeError extends Error {
  constructor(
    message: string,
    readonly kind: 'unsupported' | 'undecodable' | 'too_long' | 'empty',
  ) {
    super(message);
    this.name = 'AudioDecodeError';
  }
}

export interface DecodedRecording {
  format: RecordingFormat;
  /** 24 kHz mono s16 */
  pcm: Int16Array;
  durationSeconds: number;
}

/** Containers recognised: the accepted four, plus a few common others so the refusal can name what was sent. */
const RECOGNISED: InputFormat[] = [WAVE, MP3, OGG, WEBM, MATROSKA, FLAC, MP4, QTFF, ADTS];

/** Output samples (24 kHz) past which the audio is too long. A rounding margin of half a 20 ms frame. */
const LIMIT_SAMPLES = MAX_RECORDING_SECONDS * RECORDING_RATE + RECORDING_RATE / 100;

export async function decodeRecording(bytes: Uint8Array): Promise<DecodedRecording> {
  if (bytes.length === 0) throw new AudioDecodeError('The file is empty', 'empty');
  const input = new Input({ source: new BufferSource(bytes), formats: RECOGNISED });
  let format: InputFormat;
  try {
    format = await input.getFormat();
  } catch (err) {
    if (err instanceof UnsupportedInputFormatError) throw new AudioDecodeError(`Unsupported audio format: the file is not ${ALLOWED_AUDIO}`, 'unsupported');
    throw undecodable(err);
  }
  let out: { format: RecordingFormat; pcm: Int16Array };
  try {
    if (format === WAVE) out = { format: 'wav', pcm: decodeWav(bytes) };
    else if (format === MP3) out = { format: 'mp3', pcm: await decodeMp3(bytes) };
    else if (format === OGG || format === WEBM) {
      const container = format === OGG ? 'ogg' : 'webm';
      out = { format: container, pcm: await decodeOpus(await audioTrack(input, container)) };
    } else throw new AudioDecodeError(`Unsupported audio format '${format.name}'. Allowed: ${ALLOWED_AUDIO}`, 'unsupported');
  } catch (err) {
    if (err instanceof AudioDecodeError) throw err;
    throw undecodable(err);
  } finally {
    input.dispose();
  }
  if (out.pcm.length > LIMIT_SAMPLES) throw new AudioDecodeError(TOO_LONG, 'too_long');
  if (out.pcm.length === 0) throw new AudioDecodeError('The file contains no audio', 'empty');
  return { ...out, durationSeconds: Math.round((out.pcm.length / RECORDING_RATE) * 100) / 100 };
}

function undecodable(err: unknown): AudioDecodeError {
  const why = err instanceof Error && err.message ? `: ${err.message.slice(0, 200)}` : '';
  return new AudioDecodeError(`The audio file could not be decoded${why}`, 'undecodable');
}

async function audioTrack(input: Input, container: 'ogg' | 'webm'): Promise<InputAudioTrack> {
  const track = await input.getPrimaryAudioTrack();
  const label = container === 'ogg' ? 'OGG' : 'WebM';
  if (!track) throw new AudioDecodeError(`The ${label} file has no audio track`, 'undecodable');
  if (track.codec !== 'opus')
    throw new AudioDecodeError(`Unsupported codec '${track.codec ?? 'unknown'}' in ${label}: only Opus is accepted (allowed: ${ALLOWED_AUDIO})`, 'unsupported');
  return track;
}

/** Mono 24 kHz from mono s16 at any rate, fed in blocks; throws too_long as soon as the output passes the limit. */
class Normaliser {
  private readonly parts: Int16Array[] = [];
  private n = 0;
  private readonly rs: Resampler | null;
  constructor(fromRate: number) {
    if (!Number.isInteger(fromRate) || fromRate < 1000 || fromRate > 384_000) throw new AudioDecodeError(`Unsupported sample rate ${fromRate} Hz`, 'undecodable');
    this.rs = fromRate === RECORDING_RATE ? null : new Resampler(fromRate, RECORDING_RATE);
  }
  push(block: Int16Array): void {
    this.add(this.rs ? this.rs.process(block) : block);
  }
  finish(): Int16Array {
    if (this.rs) this.add(this.rs.flush());
    const out = new Int16Array(this.n);
    let off = 0;
    for (const p of this.parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }
  private add(p: Int16Array): void {
    if (!p.length) return;
    this.parts.push(p);
    this.n += p.length;
    if (this.n > LIMIT_SAMPLES) throw new AudioDecodeError(TOO_LONG, 'too_long');
  }
}

function decodeWav(bytes: Uint8Array): Int16Array {
  const { sampleRate, samples } = readWav(bytes);
  // the whole file is at most 10 MB: check the length before resampling it
  if (samples.length / sampleRate > MAX_RECORDING_SECONDS + 0.01) throw new AudioDecodeError(TOO_LONG, 'too_long');
  const norm = new Normaliser(sampleRate);
  norm.push(samples);
  return norm.finish();
}

/** Float channels (any count) → mono s16. */
function downmix(channels: Float32Array[], n: number): Int16Array {
  const out = new Int16Array(n);
  const k = channels.length;
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < k; c++) s += channels[c]![i]!;
    const v = Math.round((s / k) * 32767);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

/** MP3: mpg123 as a stream over 64 KiB slices of the file (it keeps its own state across them). */
async function decodeMp3(bytes: Uint8Array): Promise<Int16Array> {
  const dec = new MPEGDecoder();
  await dec.ready;
  try {
    let norm: Normaliser | null = null;
    let rate = 0;
    let errors = 0;
    for (let off = 0; off < bytes.length; off += 65_536) {
      const r = dec.decode(bytes.subarray(off, Math.min(bytes.length, off + 65_536)));
      errors += r.errors.length;
      if (!r.samplesDecoded) continue;
      if (!norm) {
        rate = r.sampleRate;
        norm = new Normaliser(rate);
      } else if (r.sampleRate !== rate) throw new AudioDecodeError(`The MP3 stream changes sample rate (${rate} → ${r.sampleRate} Hz)`, 'undecodable');
      norm.push(downmix(r.channelData, r.samplesDecoded));
    }
    if (!norm) throw new AudioDecodeError(`The MP3 file could not be decoded${errors ? ` (${errors} corrupt frames)` : ''}`, 'undecodable');
    return norm.finish();
  } finally {
    dec.free();
  }
}

/** Opus packets (Ogg or WebM) → libopus at 48 kHz (stereo streams are mixed to mono by the decoder), minus pre-skip. */
async function decodeOpus(track: InputAudioTrack): Promise<Int16Array> {
  const config = await track.getDecoderConfig();
  const head = config?.description ? toBytes(config.description) : null;
  // OpusHead (RFC 7845 §5.1): 'OpusHead', version, channel count, pre-skip (u16 LE, at 48 kHz), …
  let skip = head && head.length >= 12 && new TextDecoder().decode(head.subarray(0, 8)) === 'OpusHead' ? head[10]! | (head[11]! << 8) : 0;
  const dec = new OpusDecoder48();
  const norm = new Normaliser(48_000);
  const sink = new EncodedPacketSink(track);
  let packets = 0;
  for await (const packet of sink.packets()) {
    let pcm: Int16Array;
    try {
      pcm = dec.decode(packet.data);
    } catch (err) {
      throw new AudioDecodeError(`Opus packet ${packets + 1} could not be decoded: ${(err as Error).message}`, 'undecodable');
    }
    packets++;
    if (skip > 0) {
      const drop = Math.min(skip, pcm.length);
      skip -= drop;
      pcm = pcm.subarray(drop);
    }
    norm.push(pcm);
  }
  if (packets === 0) throw new AudioDecodeError('The Opus stream has no audio packets', 'empty');
  return norm.finish();
}

function toBytes(d: ArrayBuffer | ArrayBufferView): Uint8Array {
  if (d instanceof Uint8Array) return d;
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  return new Uint8Array(d);
}
