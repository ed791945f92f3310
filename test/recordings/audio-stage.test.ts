// Stored audio in the output pipeline (frames in, frames out): a `speakAudio` utterance waits its turn behind text
// still being synthesized, never reaches the TTS engine, becomes one chunk labelled with its name whose samples are
// the recording's, and an interrupted recording counts as heard once any of it played.
import test from 'ava';
import { SentenceChunker } from '../../media/pipeline/chunker.ts';
import { harness } from '../../media/pipeline/processor.ts';
import { TtsStage } from '../../media/pipeline/tts-stage.ts';
import { SpeechHandle } from '../../media/session/speech.ts';
import { FakeTts } from '../fakes/engines.ts';

test('a recording queued behind a reply plays after it, untouched by TTS, as one labelled chunk', async (t) => {
  const tts = new FakeTts({ firstByteMs: 30, msPerChar: 10 });
  const { pipeline, out } = harness(new SentenceChunker(), new TtsStage(tts));
  const reply = new SpeechHandle('reply', true);
  const audio = new SpeechHandle('farewell', false);
  const pcm = Int16Array.from({ length: 4800 }, (_, i) => (i % 100) * 100);
  pipeline.push({ type: 'speakNow', text: 'One moment please.', speech: reply });
  pipeline.push({ type: 'speakAudio', label: '[audio: Jingle]', pcm, speech: audio });
  await new Promise<void>((resolve) => {
    const check = () => (out.frames.filter((f) => f.type === 'flush').length === 2 ? resolve() : setTimeout(check, 5));
    check();
  });
  const order = out.frames.map((f) => `${f.type}:${'speech' in f ? (f.speech === reply ? 'reply' : 'audio') : ''}`);
  t.deepEqual([...new Set(order)], ['audioOut:reply', 'flush:reply', 'audioOut:audio', 'flush:audio'], 'the recording never overtakes the reply');
  const frames = out.frames.filter((f) => f.type === 'audioOut' && f.speech === audio);
  t.is(frames.length, 1);
  t.is((frames[0] as { pcm: Int16Array }).pcm, pcm, 'the recording goes out as it is');
  t.deepEqual(tts.texts, ['One moment please.'], 'the engine never sees the recording');
  t.deepEqual(audio.chunks.map((c) => ({ text: c.text, samples: c.samples, audio: c.audio })), [{ text: '[audio: Jingle]', samples: 4800, audio: true }]);
  audio.chunks[0]!.played = 480;
  t.is(audio.playedText(), '[audio: Jingle]', 'a recording cut short was still heard (its label is not cut in words)');
});

test('an interrupted recording is dropped before it reaches the pacer', async (t) => {
  const tts = new FakeTts({ firstByteMs: 30, msPerChar: 10 });
  const { pipeline, out } = harness(new SentenceChunker(), new TtsStage(tts));
  const reply = new SpeechHandle('reply', true);
  const audio = new SpeechHandle('tool_message', true);
  pipeline.push({ type: 'speakNow', text: 'Checking that for you.', speech: reply });
  pipeline.push({ type: 'speakAudio', label: '[audio: Hold]', pcm: new Int16Array(2400), speech: audio });
  audio.interrupt();
  pipeline.push({ type: 'interrupt', by: 'user' });
  await new Promise<void>((resolve) => {
    const check = () => (out.frames.some((f) => f.type === 'flush' && f.speech === reply) ? resolve() : setTimeout(check, 5));
    check();
  });
  // the stage handles the queue in order in one pass: once the reply's flush is out, the recording's turn is over
  t.false(out.frames.some((f) => 'speech' in f && f.speech === audio));
  t.deepEqual(audio.chunks, []);
});
