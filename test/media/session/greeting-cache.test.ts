// Rendered greeting audio: one synthesis serves every call of the same agent voice and text, concurrent joins
// share the render in flight, a caller hanging up does not spoil it for others, failures are not kept, and the
// cache stays within its byte budget. Engine: the real local TTS (eSpeak NG), counted.
import test from 'ava';
import { concatInt16 } from '../../../media/audio/pcm.ts';
import { cachedTts, RenderedAudioCache } from '../../../media/session/greeting-cache.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import type { TtsService } from '../../../media/services/types.ts';

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

async function collect(it: AsyncIterable<Int16Array>): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const p of it) parts.push(p);
  return concatInt16(parts);
}

const GREETING = 'Hello! Thanks for calling. How can I help you today?';

test('fifty calls joining at once: one synthesis per greeting chunk, the same audio for all', async (t) => {
  const cache = new RenderedAudioCache(8 * 1024 * 1024);
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const calls = Array.from({ length: 50 }, () => cachedTts(engine.tts, [GREETING], '{}', cache));
  calls[0]!.prefetch([GREETING]);
  const audio = await Promise.all(calls.map((c) => collect(c.synthesize('Hello!', new AbortController().signal))));
  t.deepEqual(engine.texts, ['Hello!', 'Thanks for calling.', 'How can I help you today?']); // prefetch: each chunk once
  t.true(audio[0]!.length > 24000 * 0.3);
  for (const a of audio) t.deepEqual(a, audio[0]);
  // a later call of the same voice and text: from the cache
  const later = cachedTts(engine.tts, [GREETING], '{}', cache);
  t.deepEqual(await collect(later.synthesize('How can I help you today?', new AbortController().signal)), await collect(calls[1]!.synthesize('How can I help you today?', new AbortController().signal)));
  t.is(engine.texts.length, 3);
  // other texts (LLM replies) go to the engine every time; another voice is another entry
  await collect(later.synthesize('It is ten past three.', new AbortController().signal));
  await collect(later.synthesize('It is ten past three.', new AbortController().signal));
  const other = counted(createLocalTts({ languages: ['en'], voice: 'en-gb' }));
  await collect(cachedTts(other.tts, [GREETING], '{}', cache).synthesize('Hello!', new AbortController().signal));
  t.deepEqual(other.texts, ['Hello!']);
  t.is(engine.texts.filter((x) => x === 'It is ten past three.').length, 2);
});

test('a caller who hangs up stops only its own replay; a failed render is not kept', async (t) => {
  const cache = new RenderedAudioCache(8 * 1024 * 1024);
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const a = cachedTts(engine.tts, [GREETING], '{}', cache);
  const b = cachedTts(engine.tts, [GREETING], '{}', cache);
  const hangUp = new AbortController();
  const first = collect(a.synthesize('How can I help you today?', hangUp.signal));
  hangUp.abort();
  const [cut, whole] = await Promise.all([first, collect(b.synthesize('How can I help you today?', new AbortController().signal))]);
  t.true(cut.length < whole.length);
  t.true(whole.length > 24000);
  t.is(engine.texts.length, 1);

  const broken = counted(createLocalTts({ languages: ['en'], binary: '/nonexistent/espeak-ng' }));
  const c = cachedTts(broken.tts, [GREETING], '{}', cache);
  await t.throwsAsync(collect(c.synthesize('Hello!', new AbortController().signal)));
  await t.throwsAsync(collect(c.synthesize('Hello!', new AbortController().signal)));
  // each time: the shared render, then the call's own attempt; the failure was not kept, the second call tried again
  t.is(broken.texts.length, 4);
});

test('the cache keeps within its byte budget, least recently used out first', async (t) => {
  const engine = counted(createLocalTts({ languages: ['en'] }));
  const one = await collect(engine.tts.synthesize('Hello!', new AbortController().signal));
  const cache = new RenderedAudioCache(one.byteLength * 2.5);
  const texts = ['Hello!', 'Goodbye!', 'Welcome!', 'Thanks!'];
  const tts = cachedTts(engine.tts, texts, '{}', cache);
  for (const x of texts) await collect(tts.synthesize(x, new AbortController().signal));
  t.true(cache.size.bytes <= one.byteLength * 2.5, `${cache.size.bytes} bytes`);
  t.true(cache.size.entries < 4);
  engine.texts.length = 0;
  await collect(tts.synthesize('Thanks!', new AbortController().signal)); // most recent: kept
  await collect(tts.synthesize('Hello!', new AbortController().signal)); // oldest: evicted, rendered again
  t.deepEqual(engine.texts, ['Hello!']);
});
