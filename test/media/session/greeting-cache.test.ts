// Rendered greeting audio: one synthesis serves every call of the same agent voice and text, concurrent joins
// share the render in flight, a caller hanging up does not spoil it for others, failures are not kept, and the
// cache stays within its byte budget. Engine: the real local TTS (eSpeak NG), counted.
import test from 'ava';
import { cachedTts, RenderedAudioCache } from '../../../media/session/greeting-cache.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import type { TtsService } from '../../../media/services/types.ts';
import { synthesize } from '../../helpers/speech.ts';

function counted(tts: TtsService) {
  const texts: string[] = [];
  const wrapped: TtsService = {
    provider: tts.provider,
    model: tts.model,
    voice: tts.voice,
    synthesize(text, signal) {
      texts.push(text);
      return tts.synthesize(text, signal);
    },
  };
  return { tts: wrapped, texts };
}

const GREETING = 'Hello! Thanks for calling. How can I help you today?';

test('fifty calls joining at once: one synthesis per greeting chunk, the same audio for all', async (t) => {
  const cache = new RenderedAudioCache(8 * 1024 * 1024);
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const calls = Array.from({ length: 50 }, () => cachedTts(engine.tts, [GREETING], '{}', cache));
  calls[0]!.prefetch([GREETING]);
  const audio = await Promise.all(calls.map((c) => synthesize(c, 'Hello!')));
  t.deepEqual(engine.texts, ['Hello!', 'Thanks for calling.', 'How can I help you today?']); // prefetch: each chunk once
  t.true(audio[0]!.length > 24000 * 0.3);
  for (const a of audio) t.deepEqual(a, audio[0]);
  // a later call of the same voice and text: from the cache
  const later = cachedTts(engine.tts, [GREETING], '{}', cache);
  t.deepEqual(await synthesize(later, 'How can I help you today?'), await synthesize(calls[1]!, 'How can I help you today?'));
  t.is(engine.texts.length, 3);
  // other texts (LLM replies) go to the engine every time; another voice is another entry
  await synthesize(later, 'It is ten past three.');
  await synthesize(later, 'It is ten past three.');
  const other = counted(createLocalTts({ languages: ['en'], voice: 'en-gb' }));
  await synthesize(cachedTts(other.tts, [GREETING], '{}', cache), 'Hello!');
  t.deepEqual(other.texts, ['Hello!']);
  t.is(engine.texts.filter((x) => x === 'It is ten past three.').length, 2);
});

test('a caller who hangs up stops only its own replay; a failed render is not kept', async (t) => {
  const cache = new RenderedAudioCache(8 * 1024 * 1024);
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const a = cachedTts(engine.tts, [GREETING], '{}', cache);
  const b = cachedTts(engine.tts, [GREETING], '{}', cache);
  const hangUp = new AbortController();
  const first = synthesize(a, 'How can I help you today?', { signal: hangUp.signal });
  hangUp.abort();
  const [cut, whole] = await Promise.all([first, synthesize(b, 'How can I help you today?')]);
  t.true(cut.length < whole.length);
  t.true(whole.length > 24000);
  t.is(engine.texts.length, 1);

  const broken = counted(createLocalTts({ languages: ['en'], binary: '/nonexistent/espeak-ng' }));
  const c = cachedTts(broken.tts, [GREETING], '{}', cache);
  await t.throwsAsync(synthesize(c, 'Hello!'));
  await t.throwsAsync(synthesize(c, 'Hello!'));
  // each time: the shared render, then the call's own attempt; the failure was not kept, the second call tried again
  t.is(broken.texts.length, 4);
});

test('the cache keeps within its byte budget, least recently used out first', async (t) => {
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const one = await synthesize(engine.tts, 'Hello!');
  const cache = new RenderedAudioCache(one.byteLength * 2.5);
  const texts = ['Hello!', 'Goodbye!', 'Welcome!', 'Thanks!'];
  const tts = cachedTts(engine.tts, texts, '{}', cache);
  for (const x of texts) await synthesize(tts, x);
  t.true(cache.size.bytes <= one.byteLength * 2.5, `${cache.size.bytes} bytes`);
  t.true(cache.size.entries < 4);
  engine.texts.length = 0;
  await synthesize(tts, 'Thanks!'); // most recent: kept
  await synthesize(tts, 'Hello!'); // oldest: evicted, rendered again
  t.deepEqual(engine.texts, ['Hello!']);
});
