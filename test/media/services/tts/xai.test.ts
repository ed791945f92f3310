import test from 'ava';
import { XaiTts, xaiLanguage, type XaiTtsOptions } from '../../../../media/services/tts/xai.ts';
import { FakeXai } from '../../../fakes/tts/xai.ts';
import { toneFor } from '../../../fakes/tts/common.ts';
import { adapterOnFake, conformance, type AdapterOnFakeOptions } from './conformance.ts';
import { maxAbs, synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'xai-test-key';

function make(o: AdapterOnFakeOptions = {}, extra: Partial<XaiTtsOptions> = {}) {
  return adapterOnFake(KEY, o, (f) => new FakeXai(f).listen(), (common) => new XaiTts({ ...common, voice: 'eve', languages: ['en'], ...extra }));
}

conformance({
  name: 'xai',
  vendor: 'xAI',
  setup: (o) => make(o),
  audioFor: (text) => toneFor(`${text} `),
  keepaliveSeen: (server) => server.pings.length > 0,
  wordTimings: false,
});

test('xai: Bearer auth, path and query; text.delta then text.done per chunk; audio.delta until audio.done', async (t) => {
  const { tts, server, close } = await make({}, { voice: 'Rex', tuning: { speed: 1.3, optimizeStreamingLatency: 2, textNormalization: true } });
  t.teardown(close);
  const r = await synth(tts, 'Hello there.');
  t.is(r.pcm.length, toneFor('Hello there. ').length);
  const u = server.upgrades[0]!;
  t.is(u.path, '/v1/tts');
  t.is(u.headers.authorization, `Bearer ${KEY}`);
  t.deepEqual(Object.fromEntries(u.query), { voice: 'rex', language: 'en', codec: 'pcm', sample_rate: '24000', speed: '1.3', optimize_streaming_latency: '2', text_normalization: 'true' });
  t.deepEqual(server.messages(), [{ type: 'text.delta', delta: 'Hello there. ' }, { type: 'text.done' }]);
  t.is(tts.model, 'xai-tts', 'no model selector');
});

test('xai: barge-in sends text.clear; the cleared generation\'s audio is dropped', async (t) => {
  const { tts, server, close } = await make({ gapMs: 5 });
  t.teardown(close);
  const ac = new AbortController();
  await synth(tts, 'A long answer that will be interrupted by the caller at once.', { signal: ac.signal, onPiece: () => ac.abort() });
  await until(() => server.messages().some((m) => m.type === 'text.clear'), { what: 'text.clear', timeoutMs: 5000, everyMs: 5 });
  const next = await synth(tts, 'Yes?');
  t.is(next.pcm.length, toneFor('Yes? ').length);
  t.is(maxAbs(next.pcm), maxAbs(toneFor('Yes? ')));
  t.deepEqual(server.messages().map((m) => m.type), ['text.delta', 'text.done', 'text.clear', 'text.delta', 'text.done']);
});

test('xai: chunks of concurrent callers never interleave (one generation at a time)', async (t) => {
  const { tts, close } = await make();
  t.teardown(close);
  const [a, b] = await Promise.all([synth(tts, 'First caller text.'), synth(tts, 'Another one here.')]);
  t.is(a.pcm.length, toneFor('First caller text. ').length);
  t.is(maxAbs(a.pcm), maxAbs(toneFor('First caller text. ')));
  t.is(b.pcm.length, toneFor('Another one here. ').length);
  t.is(maxAbs(b.pcm), maxAbs(toneFor('Another one here. ')));
});

test('xai: tuning clamped to xAI ranges; languages → language', (t) => {
  const mk = (tuning: XaiTtsOptions['tuning'], languages = ['en']) => new XaiTts({ baseUrl: 'http://127.0.0.1:9', voice: 'eve', languages, ...(tuning ? { tuning } : {}) });
  t.like(mk(undefined).query(), { speed: 1, optimize_streaming_latency: 0, text_normalization: false });
  t.like(mk({ speed: 3, optimizeStreamingLatency: 7 }).query(), { speed: 1.5, optimize_streaming_latency: 2 });
  t.like(mk({ speed: 0.1, optimizeStreamingLatency: -1 }).query(), { speed: 0.7, optimize_streaming_latency: 0 });
  t.is(xaiLanguage(['hi']), 'hi');
  t.is(xaiLanguage(['pt']), 'pt-BR');
  t.is(xaiLanguage(['en', 'es']), 'auto');
});

test('xai: only ara, eve, leo, rex, sal; another voice is a fatal refusal before anything is sent', async (t) => {
  const { tts, server, close } = await make({}, { voice: 'alloy' });
  t.teardown(close);
  const err = await t.throwsAsync(tts.connect());
  t.true((err as unknown as { engineError: { fatal: boolean } }).engineError.fatal);
  await t.throwsAsync(synth(tts, 'Hello.'), { message: /unknown voice/ });
  t.is(server.upgrades.length, 0);
});

test('xai: the base URL override keeps its prefix', async (t) => {
  const { tts, server, close } = await make({ base: (b) => `${b}/x/` });
  t.teardown(close);
  await tts.connect();
  t.is(server.upgrades[0]!.path, '/x/v1/tts');
});
