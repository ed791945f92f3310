// Minimal RIFF/WAVE header reader used to validate recordings before they are published.

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
