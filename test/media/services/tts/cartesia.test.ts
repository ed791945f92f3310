import test from 'ava';
import { CartesiaTts, type CartesiaTtsOptions } from '../../../../media/services/tts/cartesia.ts';
import { FakeCartesia } from '../../../fakes/tts/cartesia.ts';
import { toneFor } from '../../../fakes/tts/common.ts';
import { adapterOnFake, conformance, type AdapterOnFakeOptions } from './conformance.ts';
import { synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'ca-test-key';
const VOICE = 'f786b574-daa5-4673-aa0c-cbe3e8534c02';

function make(o: AdapterOnFakeOptions = {}, extra: Partial<CartesiaTtsOptions> = {}) {
  return adapterOnFake(KEY, o, (f) => new FakeCartesia(f).listen(), (common) => new CartesiaTts({ ...common, model: 'sonic-3', voice: VOICE, languages: ['fr', 'en'], ...extra }));
}

conformance({
  name: 'cartesia',
  vendor: 'Cartesia',
  setup: (o) => make(o),
  audioFor: (text) => toneFor(`${text} `),
  keepaliveSeen: (server) => server.pings.length > 0,
  wordTimings: true,
});

test('cartesia: headers, path, one context per reply with continue + flush per chunk, continue:false at its end', async (t) => {
  const { tts, server, close } = await make({}, { tuning: { speed: 1.2, volume: 0.8 } });
  t.teardown(close);
  const reply = {};
  await synth(tts, 'Bonjour.', { utterance: reply });
  await synth(tts, 'Comment allez-vous?', { utterance: reply });
  tts.endUtterance(reply);
  await until(() => server.messages().some((m) => m.continue === false), { what: 'the end of the context', timeoutMs: 5000, everyMs: 5 });
  const u = server.upgrades[0]!;
  t.is(u.path, '/tts/websocket');
  t.is(u.headers['x-api-key'], KEY);
  t.truthy(u.headers['cartesia-version']);
  const msgs = server.messages();
  const ctx = msgs[0].context_id;
  t.true(msgs.every((m) => m.context_id === ctx));
  t.deepEqual(msgs[0], {
    model_id: 'sonic-3',
    voice: { mode: 'id', id: VOICE },
    language: 'fr',
    context_id: ctx,
    output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 24000 },
    add_timestamps: true,
    generation_config: { speed: 1.2, volume: 0.8 },
    transcript: 'Bonjour. ',
    continue: true,
  });
  t.deepEqual(
    msgs.map((m) => [m.transcript, m.continue, m.flush ?? false]),
    [
      ['Bonjour. ', true, false],
      ['', true, true],
      ['Comment allez-vous? ', true, false],
      ['', true, true],
      ['', false, false],
    ],
  );
});

test('cartesia: barge-in sends {context_id, cancel:true}', async (t) => {
  const { tts, server, close } = await make({ gapMs: 5 });
  t.teardown(close);
  const ac = new AbortController();
  await synth(tts, 'A long answer that will be interrupted by the caller.', { utterance: {}, signal: ac.signal, onPiece: () => ac.abort() });
  await until(() => server.messages().some((m) => m.cancel), { what: 'cancel', timeoutMs: 5000, everyMs: 5 });
  const cancel = server.messages().find((m) => m.cancel);
  t.deepEqual(cancel, { context_id: server.messages()[0].context_id, cancel: true });
});

test('cartesia: tuning is clamped to generation_config ranges; defaults speed 1, volume 1.5', (t) => {
  const mk = (tuning: CartesiaTtsOptions['tuning']) => new CartesiaTts({ baseUrl: 'http://127.0.0.1:9', model: 'sonic-3', voice: 'v', languages: ['en'], ...(tuning ? { tuning } : {}) });
  t.deepEqual(mk(undefined).generationConfig(), { speed: 1, volume: 1.5 });
  t.deepEqual(mk({ speed: 3, volume: 0.1 }).generationConfig(), { speed: 1.5, volume: 0.5 });
  t.deepEqual(mk({ speed: 0.6, volume: 2 }).generationConfig(), { speed: 0.6, volume: 2 });
});

test('cartesia: the base URL override keeps its prefix and ws follows http', async (t) => {
  const { tts, server, close } = await make({ base: (b) => `${b}/eu/proxy` });
  t.teardown(close);
  await tts.connect();
  t.is(server.upgrades[0]!.path, '/eu/proxy/tts/websocket');
});

test('cartesia: an unknown model is a fatal refusal', async (t) => {
  const { tts, close } = await make({}, { model: 'sonic-9000' });
  t.teardown(close);
  const err = await t.throwsAsync(synth(tts, 'Hello.', { utterance: {} }));
  const e = (err as unknown as { engineError: { fatal: boolean; message: string } }).engineError;
  t.true(e.fatal);
  t.regex(e.message, /Cartesia TTS refused: .*model/);
});
