import test from 'ava';
import { InworldTts, type InworldTtsOptions } from '../../../../media/services/tts/inworld.ts';
import { FakeInworld } from '../../../fakes/tts/inworld.ts';
import { toneFor } from '../../../fakes/tts/common.ts';
import { adapterOnFake, conformance, type AdapterOnFakeOptions } from './conformance.ts';
import { synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'iw-test-key';

function make(o: AdapterOnFakeOptions = {}, extra: Partial<InworldTtsOptions> = {}) {
  return adapterOnFake(KEY, o, (f) => new FakeInworld(f).listen(), (common) => new InworldTts({ ...common, model: 'inworld-tts-1.5-max', voice: 'Ashley', languages: ['en'], ...extra }));
}

conformance({
  name: 'inworld',
  vendor: 'Inworld',
  setup: (o) => make(o),
  audioFor: (text) => toneFor(`${text} `),
  keepaliveSeen: (server) => server.messages().some((m) => m.send_text?.text === ''),
  wordTimings: true,
});

test('inworld: Basic auth, path, create → send_text + flush_context per chunk → close_context, all on one contextId', async (t) => {
  const { tts, server, close } = await make({}, { tuning: { speakingRate: 1.3, temperature: 0.7 } });
  t.teardown(close);
  const reply = {};
  await synth(tts, 'Hello there.', { utterance: reply });
  await synth(tts, 'How can I help?', { utterance: reply });
  tts.endUtterance(reply);
  await until(() => server.messages().some((m) => m.close_context), { what: 'close_context', timeoutMs: 5000, everyMs: 5 });
  const u = server.upgrades[0]!;
  t.is(u.path, '/tts/v1/voice:streamBidirectional');
  t.is(u.headers.authorization, `Basic ${KEY}`);
  const msgs = server.messages();
  const ctx = msgs[0].contextId;
  t.deepEqual(msgs[0], {
    create: {
      voiceId: 'Ashley',
      modelId: 'inworld-tts-1.5-max',
      audioConfig: { audioEncoding: 'LINEAR16', sampleRateHertz: 24000, speakingRate: 1.3 },
      temperature: 0.7,
      timestampType: 'WORD',
      autoMode: false,
    },
    contextId: ctx,
  });
  t.deepEqual(msgs.slice(1), [
    { send_text: { text: 'Hello there. ' }, contextId: ctx },
    { flush_context: {}, contextId: ctx },
    { send_text: { text: 'How can I help? ' }, contextId: ctx },
    { flush_context: {}, contextId: ctx },
    { close_context: {}, contextId: ctx },
  ]);
});

test('inworld: the WAV header on a generation\'s first chunk is not played; word times restart at each flush', async (t) => {
  const { tts, close } = await make();
  t.teardown(close);
  const reply = {};
  const a = await synth(tts, 'One two.', { utterance: reply });
  const b = await synth(tts, 'Three four.', { utterance: reply });
  t.deepEqual([...a.pcm.subarray(0, 50)], [...toneFor('One two. ').subarray(0, 50)], 'audio starts with the tone, not header bytes');
  t.deepEqual(a.words.map((w) => w.endSample), [3 * 480, 8 * 480]);
  t.deepEqual(b.words.map((w) => w.endSample), [5 * 480, 11 * 480], 'relative to the second chunk');
});

test('inworld: barge-in closes the context at once', async (t) => {
  const { tts, server, close } = await make({ gapMs: 5 });
  t.teardown(close);
  const ac = new AbortController();
  await synth(tts, 'A long answer that will be interrupted by the caller.', { utterance: {}, signal: ac.signal, onPiece: () => ac.abort() });
  await until(() => server.messages().some((m) => m.close_context), { what: 'close_context', timeoutMs: 5000, everyMs: 5 });
  t.is(server.messages().find((m) => m.close_context).contextId, server.messages()[0].contextId);
});

test('inworld: tuning is clamped (speakingRate 0.5–1.5, temperature (0, 2])', (t) => {
  const mk = (tuning: InworldTtsOptions['tuning']) => new InworldTts({ baseUrl: 'http://127.0.0.1:9', model: 'inworld-tts-2', voice: 'Ashley', languages: ['en'], ...(tuning ? { tuning } : {}) });
  t.like(mk(undefined).createConfig(), { audioConfig: { speakingRate: 1 }, temperature: 1 });
  t.like(mk({ speakingRate: 3, temperature: 0 }).createConfig(), { audioConfig: { speakingRate: 1.5 }, temperature: 0.01 });
  t.like(mk({ speakingRate: 0.1, temperature: 5 }).createConfig(), { audioConfig: { speakingRate: 0.5 }, temperature: 2 });
});

test('inworld: the base URL override keeps its prefix', async (t) => {
  const { tts, server, close } = await make({ base: (b) => `${b}/gw/inworld/` });
  t.teardown(close);
  await tts.connect();
  t.is(server.upgrades[0]!.path, '/gw/inworld/tts/v1/voice:streamBidirectional');
});

test('inworld: an unknown voice or model is a fatal refusal', async (t) => {
  for (const extra of [{ voice: 'NoSuchVoice' }, { model: 'inworld-tts-9' }]) {
    const { tts, close } = await make({}, extra);
    const err = await t.throwsAsync(synth(tts, 'Hello.', { utterance: {} }));
    await close();
    const e = (err as unknown as { engineError: { fatal: boolean; message: string } }).engineError;
    t.true(e.fatal);
    t.regex(e.message, /Inworld TTS refused: .*not found/);
  }
});
