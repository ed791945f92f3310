import test from 'ava';
import WebSocket from 'ws';
import { ElevenLabsTts, type ElevenLabsOptions } from '../../../../media/services/tts/elevenlabs.ts';
import { cutWords } from '../../../../media/session/speech.ts';
import { computeCost, PRICES } from '../../../../core/pricing.ts';
import { FakeElevenLabs } from '../../../fakes/tts/elevenlabs.ts';
import { amplitudeOf, toneFor } from '../../../fakes/tts/common.ts';
import { maxAbs, stageWithPacer, synth } from './helpers.ts';
import { adapterOnFake, conformance } from './conformance.ts';
import { until } from '../../../helpers/wait.ts';

const KEY = 'el-test-key';
const VOICE = 'voice123';

async function setup(t: { teardown(fn: () => unknown): void }, fake: Partial<ConstructorParameters<typeof FakeElevenLabs>[0]> = {}, opts: Partial<ElevenLabsOptions> = {}) {
  const el = await new FakeElevenLabs(fake).listen();
  const tts = new ElevenLabsTts({ baseUrl: el.server.baseUrl, apiKey: KEY, model: 'eleven_flash_v2_5', voice: VOICE, languages: ['en'], ...opts });
  t.teardown(async () => {
    await tts.close();
    await el.close();
  });
  return { el, tts };
}

conformance({
  name: 'elevenlabs (shared)',
  vendor: 'ElevenLabs',
  setup: (o) => adapterOnFake(KEY, o, (f) => new FakeElevenLabs(f).listen(), (common) => new ElevenLabsTts({ ...common, model: 'eleven_flash_v2_5', voice: VOICE, languages: ['en'] })),
  audioFor: (text) => toneFor(`${text} `),
  keepaliveSeen: (server) => server.pings.length > 0,
  wordTimings: true,
});

test('elevenlabs: happy path — path, key header, query, context messages in order, camelCase replies, 24 kHz audio', async (t) => {
  const { el, tts } = await setup(t);
  await tts.connect();
  const utterance = {};
  const r = await synth(tts, 'Hello there.', { utterance });
  tts.endUtterance(utterance);
  t.is(r.pcm.length, toneFor('Hello there. ').length, 'all the audio of the text');
  t.is(maxAbs(r.pcm), maxAbs(toneFor('Hello there. ')));
  const u = el.server.upgrades[0]!;
  t.is(u.path, `/v1/text-to-speech/${VOICE}/multi-stream-input`);
  t.is(u.headers['xi-api-key'], KEY);
  t.is(u.query.get('model_id'), 'eleven_flash_v2_5');
  t.is(u.query.get('output_format'), 'pcm_24000');
  t.is(u.query.get('auto_mode'), 'true');
  t.is(u.query.get('apply_text_normalization'), 'auto');
  t.is(u.query.get('language_code'), 'en');
  await until(() => el.server.messages().some((m) => m.close_context), { what: 'close_context', timeoutMs: 5000, everyMs: 5 });
  const msgs = el.server.messages();
  const ctx = msgs[0].context_id;
  t.truthy(ctx);
  t.deepEqual(msgs[0], { text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.75, style: 0, use_speaker_boost: true, speed: 1 }, context_id: ctx });
  t.deepEqual(msgs[1], { text: 'Hello there. ', context_id: ctx, flush: true });
  t.deepEqual(msgs[2], { context_id: ctx, close_context: true });
  // a chunk of its own (a sound word prepared at call start) is a context opened and closed at once
  const solo = await synth(tts, 'Okay.');
  t.is(solo.pcm.length, toneFor('Okay. ').length);
});

test('elevenlabs: chunks of one reply stream in pieces on one context; a new reply gets a new context; word timings from the alignment', async (t) => {
  const { el, tts } = await setup(t);
  const reply = {};
  const a = await synth(tts, 'First sentence here.', { utterance: reply });
  const b = await synth(tts, 'And a second one.', { utterance: reply });
  tts.endUtterance(reply);
  t.true(a.pieces > 1 && b.pieces > 1, 'audio is streamed in pieces');
  t.is(a.pcm.length, toneFor('First sentence here. ').length);
  t.is(b.pcm.length, toneFor('And a second one. ').length);
  // word ends: 20 ms per character, relative to the chunk's audio
  t.deepEqual(a.words.map((w) => w.word), ['First', 'sentence', 'here.']);
  t.deepEqual(a.words.map((w) => w.endSample), [5 * 480, 14 * 480, 20 * 480]);
  const next = {};
  await synth(tts, 'Third.', { utterance: next });
  const texts = el.server.messages().filter((m) => m.flush);
  t.is(texts[0].context_id, texts[1].context_id, 'same reply, same context');
  t.not(texts[2].context_id, texts[0].context_id, 'new reply, new context');
  t.is(el.server.connections, 1, 'one connection for the whole call');
});

test('elevenlabs: keepalive — an open context waiting for text gets {text:""}, an idle socket gets pings', async (t) => {
  const { el, tts } = await setup(t, {}, { keepaliveMs: 20 });
  await tts.connect();
  await until(() => el.server.pings.length > 0, { what: 'a ping on the idle socket', timeoutMs: 5000, everyMs: 5 });
  const reply = {};
  await synth(tts, 'Let me check.', { utterance: reply }); // a tool runs now: the context stays open
  const ctx = el.server.messages()[0].context_id;
  await until(() => el.server.messages().some((m) => m.text === '' && m.context_id === ctx), { what: 'a keepalive on the open context', timeoutMs: 5000, everyMs: 5 });
  t.pass();
});

test('elevenlabs: barge-in closes the context at once and nothing of it plays after', async (t) => {
  const { el, tts } = await setup(t, { gapMs: 5 });
  const ac = new AbortController();
  const long = 'This is a long answer that the caller is going to interrupt right away.';
  const first = await synth(tts, long, { utterance: {}, signal: ac.signal, onPiece: (_p, n) => n === 1 && ac.abort() });
  t.is(first.pieces, 1, 'the reader stops at the abort');
  const ctx = el.server.messages()[0].context_id;
  await until(() => el.server.messages().some((m) => m.close_context && m.context_id === ctx), { what: 'close_context on barge-in', timeoutMs: 5000, everyMs: 5 });
  const next = await synth(tts, 'Sure, go ahead.', { utterance: {} });
  t.is(next.pcm.length, toneFor('Sure, go ahead. ').length, 'the next reply gets exactly its own audio');
  t.is(maxAbs(next.pcm), maxAbs(toneFor('Sure, go ahead. ')), 'no stale audio of the interrupted reply');
  t.not(amplitudeOf(long), amplitudeOf('Sure, go ahead.'));
});

test('elevenlabs: a wrong key is a fatal engine error naming the vendor, never the key', async (t) => {
  const el = await new FakeElevenLabs().listen();
  const tts = new ElevenLabsTts({ baseUrl: el.server.baseUrl, apiKey: 'sk-wrong-secret', model: 'eleven_flash_v2_5', voice: VOICE, languages: ['en'] });
  t.teardown(async () => {
    await tts.close();
    await el.close();
  });
  const err = await t.throwsAsync(tts.connect());
  const e = (err as unknown as { engineError: { fatal: boolean; message: string } }).engineError;
  t.true(e.fatal);
  t.regex(e.message, /ElevenLabs/);
  t.regex(e.message, /401/);
  t.false(e.message.includes('sk-wrong-secret'));
  // synthesis refuses the same way, without reconnect storms
  await t.throwsAsync(synth(tts, 'Hello.'), { message: /ElevenLabs TTS refused/ });
  t.is(el.server.upgrades.length, 1);
});

test('elevenlabs: an in-band quota refusal is fatal', async (t) => {
  const { tts } = await setup(t, { refuseWith: 'You have exceeded your character quota' });
  const err = await t.throwsAsync(synth(tts, 'Hello.', { utterance: {} }));
  t.true((err as unknown as { engineError: { fatal: boolean } }).engineError.fatal);
});

test('elevenlabs: a dropped connection reopens by itself; the call goes on with the next reply', async (t) => {
  const { el, tts } = await setup(t);
  await synth(tts, 'Before.', { utterance: {} });
  el.server.dropAll();
  await until(() => el.server.connections === 2 && el.server.open.size === 1, { what: 'the adapter reconnected on its own', timeoutMs: 5000, everyMs: 5 });
  const after = await synth(tts, 'After the drop.', { utterance: {} });
  t.is(after.pcm.length, toneFor('After the drop. ').length);
  // an idle close by the vendor is also reopened
  el.server.closeAll(1000, 'inactivity timeout');
  await until(() => el.server.connections === 3 && el.server.open.size === 1, { what: 'reopened after the idle close', timeoutMs: 5000, everyMs: 5 });
});

test('elevenlabs: usage — characters per call with provider and model, priced from the table', async (t) => {
  const { tts } = await setup(t);
  const st = stageWithPacer(tts);
  const s = st.speak(['Hello there.', 'How are you?']);
  await until(() => s.textComplete && s.chunks.every((c) => c.samples > 0), { what: 'synthesis', timeoutMs: 5000, everyMs: 5 });
  t.is(st.characters, 'Hello there.'.length + 'How are you?'.length);
  const usage = { tts: { provider: tts.provider, model: tts.model, characters: st.characters } };
  t.deepEqual([tts.provider, tts.model], ['elevenlabs', 'eleven_flash_v2_5']);
  t.is(computeCost(usage).tts, Math.round(st.characters * PRICES.tts.elevenlabs!.eleven_flash_v2_5!.perCharacter * 1e6) / 1e6);
  t.deepEqual(computeCost(usage).unpriced, []);
});

test('elevenlabs: tuning mapping and clamping; v3/v4 read only stability', (t) => {
  const mk = (model: string, tuning: ElevenLabsOptions['tuning']) => new ElevenLabsTts({ baseUrl: 'http://127.0.0.1:9', model, voice: 'v', languages: ['en'], tuning });
  t.deepEqual(mk('eleven_turbo_v2_5', { stability: 0.3, similarityBoost: 0.9, style: 0.2, useSpeakerBoost: false, speed: 1.5 }).voiceSettings(), {
    stability: 0.3,
    similarity_boost: 0.9,
    style: 0.2,
    use_speaker_boost: false,
    speed: 1.2,
  });
  t.deepEqual(mk('eleven_flash_v2_5', { speed: 0.5 }).voiceSettings().speed, 0.7);
  t.deepEqual(mk('eleven_turbo_v4', { stability: 0.3, speed: 1.1 }).voiceSettings(), { stability: 0.3 });
  t.deepEqual(mk('eleven_v3', { stability: 0.3 }).voiceSettings(), { stability: 0.5 });
  t.deepEqual(mk('eleven_v3', { stability: 0.9 }).voiceSettings(), { stability: 1 });
});

test('elevenlabs: tuning reaches the query (auto_mode, apply_text_normalization) and the base URL keeps its prefix', async (t) => {
  const el = await new FakeElevenLabs().listen();
  const tts = new ElevenLabsTts({ baseUrl: `${el.server.baseUrl}/regional/proxy/`, apiKey: KEY, model: 'eleven_flash_v2_5', voice: VOICE, languages: ['hi', 'en'], tuning: { autoMode: false, applyTextNormalization: 'off' } });
  t.teardown(async () => {
    await tts.close();
    await el.close();
  });
  await tts.connect();
  const u = el.server.upgrades[0]!;
  t.is(u.path, `/regional/proxy/v1/text-to-speech/${VOICE}/multi-stream-input`);
  t.is(u.query.get('auto_mode'), 'false');
  t.is(u.query.get('apply_text_normalization'), 'off');
  t.is(u.query.get('language_code'), 'hi');
});

test('elevenlabs: eleven_v3 is refused on the WebSocket, so it is served by the HTTP streaming endpoint', async (t) => {
  const { el, tts } = await setup(t, {}, { model: 'eleven_v3', tuning: { stability: 0.2 } });
  // the quirk itself: the WebSocket refuses eleven_v3
  const ws = new WebSocket(`ws://127.0.0.1:${el.server.port}/v1/text-to-speech/${VOICE}/multi-stream-input?model_id=eleven_v3`, { headers: { 'xi-api-key': KEY } });
  const status = await new Promise<number>((ok) => ws.on('unexpected-response', (_q, res) => ok(res.statusCode ?? 0)));
  t.is(status, 403);
  await tts.connect(); // nothing to open
  const r = await synth(tts, 'Speaking with version three.');
  t.is(r.pcm.length, toneFor('Speaking with version three.').length);
  const req = el.server.http.at(-1)!;
  t.is(req.method, 'POST');
  t.is(req.path, `/v1/text-to-speech/${VOICE}/stream?output_format=pcm_24000`);
  t.is(req.headers['xi-api-key'], KEY);
  t.like(JSON.parse(req.body), { text: 'Speaking with version three.', model_id: 'eleven_v3', voice_settings: { stability: 0 } });
  t.false('language_code' in JSON.parse(req.body), 'only the v2.5 models take a language to enforce');
  t.is(el.server.upgrades.length, 1, 'only the probe above used the WebSocket');
});

test('elevenlabs: an interrupted reply is cut at the last word actually played (alignment), not by share of audio', async (t) => {
  const { tts } = await setup(t);
  const st = stageWithPacer(tts);
  const text = 'Supercalifragilisticexpialidocious is a long word to say';
  const s = st.speak([text]);
  await until(() => s.chunks[0]!.samples === toneFor(`${text} `).length, { what: 'the whole chunk synthesized', timeoutMs: 5000, everyMs: 5 });
  // 20 ms per character: "is" ends at 740 ms, "a" at 780 ms; 760 ms have started playing
  st.advance(740);
  st.interrupt(s);
  const c = s.chunks[0]!;
  t.is(c.played, 38 * 480);
  t.is(s.playedText(), 'Supercalifragilisticexpialidocious is');
  t.not(cutWords(text, c.played / c.samples), s.playedText(), 'the share of audio would have said more');
});
