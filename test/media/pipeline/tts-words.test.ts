// The TTS stage's contract with context-keeping engines and word timings: chunks of one utterance are synthesized
// as that utterance and it is ended at its flush; reported word end times cut an interrupted chunk after the last
// word heard, while engines without timings keep the share-of-audio cut (the local engine and the fakes unchanged).
import test from 'ava';
import { TtsStage } from '../../../media/pipeline/tts-stage.ts';
import { harness } from '../../../media/pipeline/processor.ts';
import { SpeechHandle, wordsPlayed } from '../../../media/session/speech.ts';
import type { TtsService, TtsSynthesizeOptions } from '../../../media/services/types.ts';

/** An engine that records what the stage hands it and reports one word end per word (10 ms per character). */
class RecordingTts implements TtsService {
  readonly provider = 'rec';
  readonly model = 'rec';
  readonly voice = 'rec';
  readonly calls: Array<{ text: string; utterance: object | undefined }> = [];
  readonly ended: object[] = [];
  connected = 0;
  constructor(private readonly timings: boolean) {}
  async connect(): Promise<void> {
    this.connected++;
  }
  async *synthesize(text: string, _signal: AbortSignal, opts: TtsSynthesizeOptions = {}): AsyncIterable<Int16Array> {
    this.calls.push({ text, utterance: opts.utterance });
    if (this.timings) {
      const words: Array<{ word: string; endSample: number }> = [];
      for (const m of text.matchAll(/\S+/g)) words.push({ word: m[0], endSample: (m.index + m[0].length) * 240 });
      opts.onWords?.(words);
    }
    yield new Int16Array(text.length * 240).fill(100);
  }
  endUtterance(u: object): void {
    this.ended.push(u);
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

test('tts stage: one utterance per speech across its chunks, ended at its flush; the engine is connected as the stage is built', async (t) => {
  const tts = new RecordingTts(false);
  const { pipeline } = harness(new TtsStage(tts));
  t.is(tts.connected, 1);
  const a = new SpeechHandle('reply', true);
  const b = new SpeechHandle('reply', true);
  pipeline.push({ type: 'ttsText', text: 'One.', speech: a });
  pipeline.push({ type: 'ttsText', text: 'Two.', speech: a });
  pipeline.push({ type: 'flush', speech: a });
  pipeline.push({ type: 'ttsText', text: 'Three.', speech: b });
  pipeline.push({ type: 'flush', speech: b });
  await settle();
  t.deepEqual(tts.calls.map((c) => c.text), ['One.', 'Two.', 'Three.']);
  t.is(tts.calls[0]!.utterance, a);
  t.is(tts.calls[1]!.utterance, a);
  t.is(tts.calls[2]!.utterance, b);
  t.deepEqual(tts.ended, [a, b]);
});

test('speech: with word timings an interrupted chunk keeps the words whose audio ended; without, the share of audio', async (t) => {
  const text = 'Extraordinarily long words come first here';
  for (const timings of [true, false]) {
    const tts = new RecordingTts(timings);
    const { pipeline } = harness(new TtsStage(tts));
    const s = new SpeechHandle('reply', true);
    pipeline.push({ type: 'ttsText', text, speech: s });
    await settle();
    const c = s.chunks[0]!;
    t.is(c.samples, text.length * 240);
    // "Extraordinarily long" ends at character 20; 24 characters have played
    c.played = 24 * 240;
    s.interrupt();
    t.is(s.playedText(), timings ? 'Extraordinarily long' : 'Extraordinarily long words');
  }
  t.is(wordsPlayed('a b c', [10, 20, 30], 19), 'a');
  t.is(wordsPlayed('a b c', [10, 20, 30], 5), '', 'no word finished: nothing was heard');
  t.is(wordsPlayed('a b', [10, 20, 30, 40], 100), 'a b', 'more timings than words (normalization) are bounded by the text');
});
