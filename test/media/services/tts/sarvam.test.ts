import test from 'ava';
import { SarvamTts, sarvamTtsLanguage, type SarvamTtsOptions } from '../../../../media/services/tts/sarvam.ts';
import { FakeSarvam } from '../../../fakes/tts/sarvam.ts';
import { toneFor } from '../../../fakes/tts/common.ts';
import { adapterOnFake, conformance, type AdapterOnFakeOptions } from './conformance.ts';
import { maxAbs, synth } from './helpers.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'sv-test-key';

function make(o: AdapterOnFakeOptions = {}, extra: Partial<SarvamTtsOptions> = {}) {
  return adapterOnFake(KEY, o, (f) => new FakeSarvam(f).listen(), (common) => new SarvamTts({ ...common, model: 'bulbul:v3', voice: null, languages: ['hi', 'en'], ...extra }));
}

conformance({
  name: 'sarvam',
  vendor: 'Sarvam',
  setup: (o) => make(o),
  audioFor: (text) => toneFor(text),
  keepaliveSeen: (server) => server.messages().some((m) => m.type === 'ping'),
  wordTimings: false,
});

test('sarvam: key header, path and query; config first on every connection, then text + flush per chunk', async (t) => {
  const { tts, server, close } = await make({}, { tuning: { pace: 1.4, temperature: 0.3 } });
  t.teardown(close);
  await synth(tts, 'नमस्ते, कैसे हैं आप?');
  const u = server.upgrades[0]!;
  t.is(u.path, '/text-to-speech/ws');
  t.is(u.headers['api-subscription-key'], KEY);
  t.is(u.query.get('model'), 'bulbul:v3');
  t.is(u.query.get('send_completion_event'), 'true');
  t.deepEqual(server.messages(), [
    { type: 'config', data: { target_language_code: 'hi-IN', speaker: 'shubh', pace: 1.4, temperature: 0.3, speech_sample_rate: 24000, output_audio_codec: 'linear16' } },
    { type: 'text', data: { text: 'नमस्ते, कैसे हैं आप?' } },
    { type: 'flush' },
  ]);
  // a reopened connection is configured again before any text
  server.dropAll();
  await until(() => server.connections === 2 && server.messages(2).length > 0, { what: 'reconnect and config', timeoutMs: 5000, everyMs: 5 });
  t.is(server.messages(2)[0].type, 'config');
});

test('sarvam: barge-in drops the flushed generation up to its final event; the next reply is clean', async (t) => {
  const { tts, close } = await make({ gapMs: 3 });
  t.teardown(close);
  const ac = new AbortController();
  const first = await synth(tts, 'A long answer that will be interrupted by the caller at once.', { signal: ac.signal, onPiece: () => ac.abort() });
  t.is(first.pieces, 1);
  const next = await synth(tts, 'Haan ji?');
  t.is(next.pcm.length, toneFor('Haan ji?').length);
  t.is(maxAbs(next.pcm), maxAbs(toneFor('Haan ji?')));
});

test('sarvam: tuning clamped per model (v3 pace 0.5–2, temperature 0.01–1; v2 pace 0.3–3, no temperature); languages', (t) => {
  const mk = (model: string, tuning: SarvamTtsOptions['tuning']) => new SarvamTts({ baseUrl: 'http://127.0.0.1:9', model, voice: null, languages: ['or'], ...(tuning ? { tuning } : {}) });
  t.like(mk('bulbul:v3', undefined).config(), { pace: 1, temperature: 0.6, speaker: 'shubh', target_language_code: 'od-IN' });
  t.like(mk('bulbul:v3', { pace: 2.5, temperature: 0 }).config(), { pace: 2, temperature: 0.01 });
  const v2 = mk('bulbul:v2', { pace: 2.5, temperature: 0.9 }).config();
  t.like(v2, { pace: 2.5, speaker: 'anushka' });
  t.false('temperature' in v2);
  t.is(sarvamTtsLanguage(['en']), 'en-IN');
});

test('sarvam: an unknown speaker is a fatal refusal', async (t) => {
  const { tts, close } = await make({}, { voice: 'nobody' });
  t.teardown(close);
  const err = await t.throwsAsync(synth(tts, 'Hello.'));
  const e = (err as unknown as { engineError: { fatal: boolean; message: string } }).engineError;
  t.true(e.fatal);
  t.regex(e.message, /Sarvam TTS refused: Invalid speaker/);
});

test('sarvam: the base URL override keeps its prefix', async (t) => {
  const { tts, server, close } = await make({ base: (b) => `${b}/in/sarvam` });
  t.teardown(close);
  await tts.connect();
  t.is(server.upgrades[0]!.path, '/in/sarvam/text-to-speech/ws');
});
