// Shared by the TTS adapter tests: run one synthesis to the end, look at the audio, drive a TTS stage + pacer on a
// manual clock (what the caller hears), and price a call's TTS usage.
import type { TtsService, TtsSynthesizeOptions, TtsWordTiming } from '../../../../media/services/types.ts';
import { TtsStage } from '../../../../media/pipeline/tts-stage.ts';
import { Pacer } from '../../../../media/pipeline/pacer.ts';
import { FrameClock } from '../../../../media/pipeline/clock.ts';
import { harness } from '../../../../media/pipeline/processor.ts';
import { SpeechHandle } from '../../../../media/session/speech.ts';
import { concatInt16 } from '../../../../media/audio/pcm.ts';

export interface Synth {
  pcm: Int16Array;
  pieces: number;
  words: TtsWordTiming[];
}

export async function synth(tts: TtsService, text: string, opts: { signal?: AbortSignal; utterance?: object; onPiece?(pcm: Int16Array, n: number): void } = {}): Promise<Synth> {
  const parts: Int16Array[] = [];
  const words: TtsWordTiming[] = [];
  const o: TtsSynthesizeOptions = { onWords: (w) => words.push(...w), ...(opts.utterance ? { utterance: opts.utterance } : {}) };
  for await (const p of tts.synthesize(text, opts.signal ?? new AbortController().signal, o)) {
    parts.push(p);
    opts.onPiece?.(p, parts.length);
  }
  return { pcm: concatInt16(parts), pieces: parts.length, words };
}

export function maxAbs(pcm: Int16Array): number {
  let m = 0;
  for (const v of pcm) m = Math.max(m, Math.abs(v));
  return m;
}

/** A TTS stage feeding a pacer on a manual clock: what a call does with the adapter, minus the transport. */
export function stageWithPacer(tts: TtsService) {
  let now = 1000;
  const clock = new FrameClock(20, () => now);
  const pacer = new Pacer({ clock, leadMs: 100, mixer: null, send: () => {} });
  let chars = 0;
  const stage = new TtsStage(tts, { onCharacters: (n) => (chars += n) });
  const { pipeline, errors } = harness(stage, pacer);
  return {
    pipeline,
    errors,
    get characters() {
      return chars;
    },
    speak(texts: string[]): SpeechHandle {
      const s = new SpeechHandle('reply', true);
      for (const text of texts) pipeline.push({ type: 'ttsText', text, speech: s });
      pipeline.push({ type: 'flush', speech: s });
      return s;
    },
    /** play `ms` of audio (frames whose playout has started count as played) */
    advance(ms: number) {
      for (let i = 0; i < ms / 20; i++) {
        now += 20;
        pacer.tick(now);
      }
    },
    interrupt(s: SpeechHandle) {
      s.interrupt();
      pipeline.push({ type: 'interrupt', by: 'user' });
    },
  };
}
