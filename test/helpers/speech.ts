// Speech for tests: a synthesis collected into one array, and the callers' voice, which is eSpeak NG run as one
// `espeak-ng` process per text, so a sentence is the same audio every run whatever was synthesized before it (the
// recognisers' results in the tests depend on that audio).
import { resample } from '../../core/audio/resample.ts';
import { concatInt16 } from '../../media/audio/pcm.ts';
import { createLocalTts } from '../../media/services/tts/local.ts';
import type { TtsService } from '../../media/services/types.ts';

/** All the PCM pieces of a stream, in order, in one array. */
export async function collectPcm(pieces: AsyncIterable<Int16Array>): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const p of pieces) parts.push(p);
  return concatInt16(parts);
}

/** One synthesis by `tts` run to the end: its 24 kHz audio in one array. */
export function synthesize(tts: TtsService, text: string, opts: { signal?: AbortSignal } = {}): Promise<Int16Array> {
  return collectPcm(tts.synthesize(text, opts.signal ?? new AbortController().signal));
}

export interface CallerVoice {
  /** the sample rate the test feeds (default 16 kHz: what the recognisers hear; 8 kHz a phone line; 24 kHz before a
   * carrier's µ-law; 48 kHz for WebRTC) */
  rate?: 8000 | 16000 | 24000 | 48000;
  /** words per minute (default 150, a little slower than eSpeak's own 175) */
  wpm?: number;
  /** an eSpeak voice (default en-us; `en-us+klatt` is the one PocketSphinx hears best) */
  voice?: string;
}

/** What a caller says, spoken by eSpeak NG (one process for the text), at `rate`. */
export async function callerSpeech(text: string, o: CallerVoice = {}): Promise<Int16Array> {
  const tts = createLocalTts({ languages: ['en'], ...(o.voice ? { voice: o.voice } : {}), wordsPerMinute: o.wpm ?? 150, binary: 'espeak-ng' });
  const pcm = await synthesize(tts, text);
  const rate = o.rate ?? 16000;
  return rate === 24000 ? pcm : resample(pcm, 24000, rate);
}
