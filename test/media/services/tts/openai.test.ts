import test from 'ava';
import { OpenAiTts, type OpenAiTtsOptions } from '../../../../media/services/tts/openai.ts';
import { computeCost, PRICES } from '../../../../core/pricing.ts';
import { FakeOpenAiSpeech } from '../../../fakes/tts/openai.ts';
import { toneFor } from '../../../fakes/tts/common.ts';
import { maxAbs, stageWithPacer, synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'oa-test-key';

async function make(t: { teardown(fn: () => unknown): void }, extra: Partial<OpenAiTtsOptions> = {}, fakeOpts: { prefix?: string; gapMs?: number } = {}) {
  const fake = await new FakeOpenAiSpeech({ apiKey: KEY, ...fakeOpts }).listen();
  const tts = new OpenAiTts({ baseUrl: `${fake.server.baseUrl}${fakeOpts.prefix ?? '/v1'}`, apiKey: KEY, model: 'gpt-4o-mini-tts', voice: 'alloy', languages: ['en'], ...extra });
  t.teardown(async () => {
    await tts.close();
    await fake.close();
  });
  return { fake, tts, server: fake.server };
}

test('openai: warm connection at connect, POST /audio/speech with the documented body, chunked PCM streamed on the same connection', async (t) => {
  const { tts, server } = await make(t);
  await tts.connect();
  const warms = server.http.filter((h) => h.path === '/v1/models');
  t.is(warms.length, 2);
  t.not(warms[0]!.remotePort, warms[1]!.remotePort, 'two connections: the chunk playing and the one synthesized ahead');
  for (const warm of warms) {
    t.is(warm.method, 'GET');
    t.is(warm.headers.authorization, `Bearer ${KEY}`);
  }
  const r = await synth(tts, 'Hello there, how can I help?');
  t.true(r.pieces > 1, 'streamed');
  t.is(r.pcm.length, toneFor('Hello there, how can I help?').length);
  t.is(maxAbs(r.pcm), maxAbs(toneFor('Hello there, how can I help?')));
  const post = server.http[2]!;
  t.is(post.path, '/v1/audio/speech');
  t.deepEqual(JSON.parse(post.body), { model: 'gpt-4o-mini-tts', input: 'Hello there, how can I help?', voice: 'alloy', response_format: 'pcm', speed: 1 });
  t.true(warms.some((w) => w.remotePort === post.remotePort), 'the first reply paid no handshake');
});

test('openai: keepalive — the idle connection is kept warm', async (t) => {
  const { tts, server } = await make(t, { keepaliveMs: 40 });
  await tts.connect();
  await until(() => server.http.filter((h) => h.path === '/v1/models').length >= 4, { what: 'keep-warm requests', timeoutMs: 5000, everyMs: 5 });
  const gets = server.http.filter((h) => h.path === '/v1/models');
  t.deepEqual(new Set([gets[2]!.remotePort, gets[3]!.remotePort]), new Set([gets[0]!.remotePort, gets[1]!.remotePort]), 'both connections kept warm');
});

test('openai: barge-in aborts the request and nothing stale plays after it', async (t) => {
  const { tts, fake } = await make(t, {}, { gapMs: 5 });
  const ac = new AbortController();
  const first = await synth(tts, 'A long answer that the caller interrupts right after it starts.', { signal: ac.signal, onPiece: () => ac.abort() });
  t.is(first.pieces, 1);
  await until(() => fake.aborted === 1, { what: 'the vendor saw the request go away', timeoutMs: 5000, everyMs: 5 });
  const next = await synth(tts, 'Go ahead.');
  t.is(next.pcm.length, toneFor('Go ahead.').length);
  t.is(maxAbs(next.pcm), maxAbs(toneFor('Go ahead.')));
});

test('openai: a wrong key is a fatal engine error naming the vendor, never the key', async (t) => {
  const { tts } = await make(t, { apiKey: 'sk-wrong-secret-42' });
  const err = await t.throwsAsync(tts.connect());
  const e = (err as unknown as { engineError: { fatal: boolean; message: string } }).engineError;
  t.true(e.fatal);
  t.regex(e.message, /OpenAI TTS refused: HTTP 401: Incorrect API key/);
  t.false(e.message.includes('sk-wrong-secret-42'));
  await t.throwsAsync(synth(tts, 'Hello.'), { message: /OpenAI TTS refused/ });
});

test('openai: an unknown model is a fatal refusal', async (t) => {
  const { tts } = await make(t, { model: 'tts-9' });
  const err = await t.throwsAsync(synth(tts, 'Hello.'));
  t.true((err as unknown as { engineError: { fatal: boolean } }).engineError.fatal);
});

test('openai: a connection reset before any audio is retried; one cut mid-body ends that chunk and the call goes on', async (t) => {
  const { tts, fake } = await make(t);
  fake.dropNext = true;
  const a = await synth(tts, 'Retried after the reset.');
  t.is(a.pcm.length, toneFor('Retried after the reset.').length);
  fake.cutNext = true;
  const b = await synth(tts, 'This one breaks in the middle of its audio.');
  t.true(b.pcm.length > 0 && b.pcm.length < toneFor('This one breaks in the middle of its audio.').length);
  const c = await synth(tts, 'And this one is whole.');
  t.is(c.pcm.length, toneFor('And this one is whole.').length);
});

test('openai: usage — characters with provider and model, priced from the table', async (t) => {
  const { tts } = await make(t);
  const st = stageWithPacer(tts);
  const s = st.speak(['Hello there.', 'How are you?']);
  await until(() => s.textComplete && s.chunks.length === 2 && s.chunks.every((c) => c.samples > 0), { what: 'synthesis', timeoutMs: 5000, everyMs: 5 });
  const usage = { tts: { provider: tts.provider, model: tts.model, characters: st.characters } };
  t.is(st.characters, 24);
  t.is(computeCost(usage).tts, Math.round(24 * PRICES.tts.openai!['gpt-4o-mini-tts']!.perCharacter * 1e6) / 1e6);
});

test('openai: tuning — speed clamped to OpenAI\'s range; instructions name the language only where the model reads them', (t) => {
  const mk = (model: string, speed: number | undefined, languages = ['en']) =>
    new OpenAiTts({ baseUrl: 'http://127.0.0.1:9/v1', model, voice: 'alloy', languages, ...(speed !== undefined ? { tuning: { speed } } : {}) }).body('x');
  t.is(mk('tts-1', undefined).speed, 1);
  t.is(mk('tts-1', 9).speed, 4);
  t.is(mk('tts-1', 0.1).speed, 0.25);
  t.is(mk('gpt-4o-mini-tts', 1.5, ['hi']).instructions, 'Speak in Hindi.');
  t.false('instructions' in mk('tts-1-hd', 1, ['hi']));
  t.false('instructions' in mk('gpt-4o-mini-tts', 1, ['en']));
});

test('openai: the base URL override keeps its prefix (OPENAI_BASE_URL, shared with the LLM)', async (t) => {
  const { tts, server } = await make(t, {}, { prefix: '/gateway/openai/v1' });
  await synth(tts, 'Hi.');
  t.is(server.http.at(-1)!.path, '/gateway/openai/v1/audio/speech');
});
