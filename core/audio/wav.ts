// WAV files (wavefile): read any PCM/float/µ-law WAV as mono s16 at its own rate, write s16 mono WAV.
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
