// WAV files: read any PCM/float/µ-law WAV as mono s16 at its own rate and write s16 mono WAV (wavefile), and a
// header reader/writer of their own for the recordings the service streams to disk and checks before publishing
// (a header is parsed from the first bytes of a file without reading the rest).
import wavefile from 'wavefile';

export interface PcmAudio {
  sampleRate: number;
  /** mono s16 samples (channels averaged) */
  samples: Int16Array;
}

/** Decode a WAV file's bytes. Throws on anything that is not a readable WAV. */
export function readWav(bytes: Uint8Array): PcmAudio {
  const wav = new wavefile.WaveFile();
  wav.fromBuffer(bytes);
  const fmt = wav.fmt as { numChannels: number; sampleRate: number; audioFormat: number };
  if (wav.bitDepth !== '16') {
    if (fmt.audioFormat === 7) wav.fromMuLaw();
    else if (fmt.audioFormat === 6) wav.fromALaw();
    if (wav.bitDepth !== '16') wav.toBitDepth('16');
  }
  const channels = fmt.numChannels;
  const raw = wav.getSamples(true, Int16Array) as unknown as Int16Array;
  if (channels <= 1) return { sampleRate: fmt.sampleRate, samples: Int16Array.from(raw) };
  const n = Math.floor(raw.length / channels);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < channels; c++) s += raw[i * channels + c]!;
    out[i] = Math.round(s / channels);
  }
  return { sampleRate: fmt.sampleRate, samples: out };
}

/** Encode mono s16 samples as a WAV file. */
export function writeWav(samples: Int16Array, sampleRate: number): Buffer {
  const wav = new wavefile.WaveFile();
  wav.fromScratch(1, sampleRate, '16', samples);
  return Buffer.from(wav.toBuffer());
}

// ── headers ──
export interface WavInfo {
  format: number; // 1 PCM, 3 IEEE float, 6 A-law, 7 mu-law, 0xFFFE extensible
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataOffset: number;
  dataBytes: number;
  durationSeconds: number;
}

export class InvalidWavError extends Error {
  constructor(why: string) {
    super(`not a valid WAV file: ${why}`);
    this.name = 'InvalidWavError';
  }
}

/**
 * Parse the header from the first bytes of a file (64 KiB is plenty) whose total size is `fileBytes`.
 * Throws InvalidWavError for anything a player would refuse or a truncated file.
 */
export function parseWavHeader(head: Buffer, fileBytes: number): WavInfo {
  if (head.length < 12 || head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') {
    throw new InvalidWavError('missing RIFF/WAVE signature');
  }
  let offset = 12;
  let fmt: Omit<WavInfo, 'dataOffset' | 'dataBytes' | 'durationSeconds'> | null = null;
  while (offset + 8 <= head.length) {
    const id = head.toString('ascii', offset, offset + 4);
    const size = head.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > head.length) throw new InvalidWavError('short fmt chunk');
      fmt = {
        format: head.readUInt16LE(body),
        channels: head.readUInt16LE(body + 2),
        sampleRate: head.readUInt32LE(body + 4),
        bitsPerSample: head.readUInt16LE(body + 14),
      };
      if (![1, 3, 6, 7, 0xfffe].includes(fmt.format)) throw new InvalidWavError(`unsupported format ${fmt.format}`);
      if (fmt.channels < 1 || fmt.channels > 8) throw new InvalidWavError(`bad channel count ${fmt.channels}`);
      if (fmt.sampleRate < 1000 || fmt.sampleRate > 384000) throw new InvalidWavError(`bad sample rate ${fmt.sampleRate}`);
      if (![8, 16, 24, 32, 64].includes(fmt.bitsPerSample)) throw new InvalidWavError(`bad bits per sample ${fmt.bitsPerSample}`);
    } else if (id === 'data') {
      if (!fmt) throw new InvalidWavError('data chunk before fmt chunk');
      const available = fileBytes - body;
      if (size > available) throw new InvalidWavError(`data chunk says ${size} bytes but the file holds ${available}`);
      const bytesPerSecond = fmt.sampleRate * fmt.channels * (fmt.bitsPerSample / 8);
      return { ...fmt, dataOffset: body, dataBytes: size, durationSeconds: Math.round((size / bytesPerSecond) * 100) / 100 };
    }
    offset = body + size + (size % 2);
  }
  throw new InvalidWavError(fmt ? 'no data chunk' : 'no fmt chunk');
}

/** A canonical 44-byte PCM header. */
export function wavHeader(opts: { sampleRate: number; channels?: number; bitsPerSample?: number; dataBytes: number }): Buffer {
  const channels = opts.channels ?? 1;
  const bits = opts.bitsPerSample ?? 16;
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + opts.dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(opts.sampleRate, 24);
  h.writeUInt32LE(opts.sampleRate * channels * (bits / 8), 28);
  h.writeUInt16LE(channels * (bits / 8), 32);
  h.writeUInt16LE(bits, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(opts.dataBytes, 40);
  return h;
}
