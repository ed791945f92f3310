// The five vendor STT adapters against their local fakes (test/fakes/stt/*): each adapter is built the way a call
// builds it (createEngines with `<ID>_API_KEY` and `<ID>_BASE_URL` pointing at the fake, behind a path prefix), so
// registration, the base-URL override and the vendor's path/auth/query are checked together. Audio is a tone for
// speech and zeros for silence; the fakes decide what was "said" from the audio alone (see _ws-fake.ts).
import test from 'ava';
import { loadConfig } from '../../../core/config.ts';
import { computeCost } from '../../../core/pricing.ts';
import { createEngines, type EngineAgentConfig } from '../../../media/services/index.ts';
import type { SttEvent, SttService, SttStream } from '../../../media/services/types.ts';
import { vendorWsUrl } from '../../../media/services/stt/ws-session.ts';
import { SonioxStt, sonioxConfig } from '../../../media/services/stt/soniox.ts';
import { DeepgramStt, deepgramQuery } from '../../../media/services/stt/deepgram.ts';
import { AssemblyAiStt, assemblyAiQuery } from '../../../media/services/stt/assemblyai.ts';
import { SarvamStt, sarvamQuery } from '../../../media/services/stt/sarvam.ts';
import { CartesiaStt, cartesiaSttQuery } from '../../../media/services/stt/cartesia.ts';
import { silence, tone, type FakeConnection, type WsFake } from '../../fakes/stt/_ws-fake.ts';
import { startSonioxFake } from '../../fakes/stt/soniox.ts';
import { startDeepgramFake } from '../../fakes/stt/deepgram.ts';
import { startAssemblyAiFake } from '../../fakes/stt/assemblyai.ts';
import { startSarvamFake } from '../../fakes/stt/sarvam.ts';
import { startCartesiaSttFake } from '../../fakes/stt/cartesia.ts';

type Fake = WsFake & { apiKey: string };
interface Vendor {
  id: 'soniox' | 'deepgram' | 'assemblyai' | 'sarvam' | 'cartesia';
  env: string;
  path: string;
  start(o: { script: string[]; prefix?: string }): Promise<Fake>;
  /** the auth header the vendor wants, as the fake received it */
  auth(c: FakeConnection, key: string): boolean;
  /** the vendor's end-of-stream message, as recorded last */
  closeMessage(c: FakeConnection): boolean;
  /** refused with an unknown model */
  badModel: string;
}

const vendors: Vendor[] = [
  {
    id: 'soniox',
    env: 'SONIOX',
    path: '/transcribe-websocket',
    start: (o) => startSonioxFake(o),
    auth: (c, k) => c.headers.authorization === `Bearer ${k}`,
    closeMessage: (c) => {
      const m = c.messages.at(-1);
      return m?.kind === 'audio' && m.samples === 0;
    },
    badModel: 'stt-rt-v0',
  },
  {
    id: 'deepgram',
    env: 'DEEPGRAM',
    path: '/v2/listen',
    start: (o) => startDeepgramFake(o),
    auth: (c, k) => c.headers.authorization === `Token ${k}`,
    closeMessage: (c) => lastJson(c)?.type === 'CloseStream',
    badModel: 'nova-3',
  },
  {
    id: 'assemblyai',
    env: 'ASSEMBLYAI',
    path: '/v3/ws',
    start: (o) => startAssemblyAiFake(o),
    auth: (c, k) => c.headers.authorization === k,
    closeMessage: (c) => lastJson(c)?.type === 'Terminate',
    badModel: 'universal-9',
  },
  {
    id: 'sarvam',
    env: 'SARVAM',
    path: '/speech-to-text/ws',
    start: (o) => startSarvamFake(o),
    auth: (c, k) => c.headers['api-subscription-key'] === k,
    // Sarvam has no end-of-stream message: the socket just closes
    closeMessage: (c) => c.closed,
    badModel: 'saarika:v9',
  },
  {
    id: 'cartesia',
    env: 'CARTESIA',
    path: '/stt/turns/websocket',
    start: (o) => startCartesiaSttFake(o),
    auth: (c, k) => c.headers['x-api-key'] === k && c.headers['cartesia-version'] === '2026-03-01',
    closeMessage: (c) => lastJson(c)?.type === 'close',
    badModel: 'ink-0',
  },
];

function lastJson(c: FakeConnection): Record<string, unknown> | undefined {
  const m = c.messages.at(-1);
  return m?.kind === 'json' ? m.data : undefined;
}

const PREFIX = '/vendor-proxy/eu';
const SCRIPT = ['What are your opening hours?', 'Do you open on Sunday?', 'Thank you very much'];

function agent(provider: string, o: { model?: string | null; block?: Record<string, unknown>; languages?: string[] } = {}): EngineAgentConfig {
  return {
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    stt: { provider, model: o.model ?? null, ...(o.block ? { [provider]: o.block } : {}) },
    tts: { provider: 'local', model: null, voice: null },
    languages: o.languages ?? ['en'],
  };
}

function build(v: Vendor, fake: Fake, o: { key?: string; model?: string | null; block?: Record<string, unknown>; languages?: string[] } = {}): SttService {
  const config = loadConfig({ [`${v.env}_API_KEY`]: o.key ?? fake.apiKey, [`${v.env}_BASE_URL`]: fake.url, OPENAI_API_KEY: 'x' });
  return createEngines(config, agent(v.id, o)).stt;
}

interface Opened {
  stream: SttStream;
  events: SttEvent[];
  wait(pred: (e: SttEvent, i: number) => boolean, what: string): Promise<SttEvent>;
}

async function open(svc: SttService, o: { languages?: string[]; keyterms?: string[] } = {}): Promise<Opened> {
  const events: SttEvent[] = [];
  const stream = await svc.open({ languages: o.languages ?? ['en'], keyterms: o.keyterms ?? [], onEvent: (e) => events.push(e) });
  return {
    stream,
    events,
    wait: (pred, what) => until(() => events.find((e, i) => pred(e, i)), what),
  };
}

async function until<T>(fn: () => T | undefined | null | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Write audio in 20 ms frames, as a call does. */
function write(stream: SttStream, pcm: Int16Array): void {
  for (let off = 0; off < pcm.length; off += 320) stream.write(pcm.subarray(off, Math.min(pcm.length, off + 320)));
}
/** One spoken utterance: speech then enough silence for the vendor's end of turn. */
function say(stream: SttStream, speechMs = 600, silenceMs = 1200): void {
  write(stream, silence(60));
  write(stream, tone(speechMs));
  write(stream, silence(silenceMs));
}

/** Sarvam has no end of turn of its own (the call's turn model decides): each utterance comes as one final. */
const ownTurns = (v: { id: string }) => v.id !== 'sarvam';
/** What a vendor heard, one entry per spoken utterance: its turns, or for Sarvam its finals. */
const heard = (v: { id: string }, events: SttEvent[]) => (ownTurns(v) ? turns(events) : events.flatMap((e) => (e.type === 'final' ? [e.text] : [])));
const endOf = (v: { id: string }) => (ownTurns(v) ? 'turn_end' : 'final');

/** The turn as the turn manager assembles it: finals joined, then the turn_end text. */
function turns(events: SttEvent[]): string[] {
  const out: string[] = [];
  let acc: string[] = [];
  for (const e of events) {
    if (e.type === 'final') acc.push(e.text);
    if (e.type === 'turn_end') {
      out.push([...acc, e.text].filter(Boolean).join(' '));
      acc = [];
    }
  }
  return out;
}

const strip = (s: string) => s.toLowerCase().replace(/[^a-z ]/g, '');

// ── the same behaviour from every vendor ─────────────────────────────────────────────────────────────────
for (const v of vendors) {
  test(`${v.id}: a turn over the vendor's path, auth and prefix: speech start, interims, end of turn, clean close`, async (t) => {
    const fake = await v.start({ script: SCRIPT, prefix: PREFIX });
    t.teardown(() => fake.close());
    const svc = build(v, fake);
    t.is(svc.provider, v.id);
    t.is(svc.hasTurnDetection, ownTurns(v));
    const s = await open(svc);
    // the connection is up once open() resolves: the first turn pays no handshake
    t.is(fake.connections.length, 1);
    const c = fake.connections[0]!;
    t.is(c.path, `${PREFIX}${v.path}`);
    t.true(v.auth(c, fake.apiKey), 'auth header');

    say(s.stream);
    await s.wait((e) => e.type === endOf(v), endOf(v));
    t.deepEqual(heard(v, s.events), [SCRIPT[0]]);
    const types = s.events.map((e) => e.type);
    t.true(types.indexOf('speech_started') >= 0 && types.indexOf('speech_started') < types.indexOf(endOf(v)), `speech_started first: ${types.join(',')}`);
    if (!ownTurns(v)) t.false(types.includes('turn_end'), 'no end of turn of its own');
    if (v.id !== 'sarvam') {
      // interims grow word by word (Sarvam sends one final per utterance and no interims)
      const interims = s.events.filter((e): e is Extract<SttEvent, { type: 'interim' }> => e.type === 'interim').map((e) => strip(e.text));
      t.true(interims.length >= 2, `interims: ${interims.join(' | ')}`);
      t.true(strip(SCRIPT[0]!).startsWith(interims[0]!));
    }
    t.false(s.events.some((e) => e.type === 'error'));

    // a second turn on the same connection
    say(s.stream);
    await until(() => heard(v, s.events).length === 2, 'second turn');
    t.is(strip(heard(v, s.events)[1]!), strip(SCRIPT[1]!));
    t.is(fake.connections.length, 1);

    await s.stream.close();
    await until(() => c.closed, 'vendor socket closed');
    t.true(v.closeMessage(c), "the vendor's end-of-stream message is the last thing sent");
  });

  test(`${v.id}: a wrong key is a refusal: one fatal error naming the vendor and the status, never the key`, async (t) => {
    const fake = await v.start({ script: SCRIPT });
    t.teardown(() => fake.close());
    const s = await open(build(v, fake, { key: 'wrong-secret-key-123' }));
    const e = (await s.wait((x) => x.type === 'error', 'error')) as Extract<SttEvent, { type: 'error' }>;
    t.true(e.error.fatal);
    t.false(e.error.retryable);
    t.regex(e.error.message, new RegExp(`^${v.id} STT refused: HTTP 40[13]`));
    t.false(e.error.message.includes('wrong-secret-key-123'));
    t.is(fake.connections.length, 0);
    // audio after the refusal goes nowhere and nothing is retried
    write(s.stream, tone(200));
    await s.stream.close();
    t.is(s.events.filter((x) => x.type === 'error').length, 1);
  });

  test(`${v.id}: an unknown model is a refusal (fatal error)`, async (t) => {
    const fake = await v.start({ script: SCRIPT });
    t.teardown(() => fake.close());
    const svc = build(v, fake, { model: v.badModel });
    t.is(svc.model, v.badModel);
    const s = await open(svc);
    const e = (await s.wait((x) => x.type === 'error', 'error')) as Extract<SttEvent, { type: 'error' }>;
    t.true(e.error.fatal);
    t.true(e.error.message.startsWith(`${v.id} STT refused:`), e.error.message);
    t.regex(e.error.message, /model/i);
    await s.stream.close();
  });

  test(`${v.id}: the vendor drops the connection mid-call: the adapter reconnects, audio meanwhile is kept, the call goes on`, async (t) => {
    const fake = await v.start({ script: SCRIPT });
    t.teardown(() => fake.close());
    const s = await open(build(v, fake));
    say(s.stream);
    await until(() => heard(v, s.events).length === 1, 'first turn');
    fake.dropAll(1011, 'internal error');
    await until(() => fake.connections[0]!.closed, 'first connection closed');
    // the caller keeps talking while the adapter reconnects
    say(s.stream, 800);
    await until(() => heard(v, s.events).length === 2, 'turn after reconnect');
    t.is(strip(heard(v, s.events)[1]!), strip(SCRIPT[1]!));
    t.is(fake.connections.length, 2);
    t.true(v.auth(fake.connections[1]!, fake.apiKey));
    t.false(s.events.some((e) => e.type === 'error'), 'a transient close is not an error');
    if (v.id === 'soniox') t.is((fake.connections[1]!.messages[0] as unknown as { data: { model: string } }).data.model, 'stt-rt-v5', 'config sent again first');
    await s.stream.close();
  });
}

test('a vendor that keeps refusing the reconnect (503) ends in one fatal error after bounded retries', async (t) => {
  const fake = await startDeepgramFake({ script: SCRIPT });
  t.teardown(() => fake.close());
  const s = await open(build(vendors[1]!, fake));
  fake.refuseUpgrades({ status: 503, body: { err_msg: 'Service Unavailable' } });
  fake.dropAll(1011);
  // audio written while down is buffered, bounded (5 s): 8 s of audio never grows the buffer beyond that
  write(s.stream, silence(8000));
  const e = (await s.wait((x) => x.type === 'error', 'fatal error')) as Extract<SttEvent, { type: 'error' }>;
  t.true(e.error.fatal);
  t.regex(e.error.message, /^deepgram STT refused: connection lost and 5 reconnects failed \(last: HTTP 503: Service Unavailable\)/);
  await s.stream.close();
});

test('audio written while the vendor is away is kept up to 5 s (the oldest dropped), then delivered on reconnect', async (t) => {
  const fake = await startDeepgramFake({ script: SCRIPT });
  t.teardown(() => fake.close());
  const s = await open(new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'flux-general-en', keepaliveMs: 60_000 }));
  fake.refuseUpgrades({ status: 503, body: { err_msg: 'Service Unavailable' } });
  fake.dropAll(1011);
  await until(() => fake.connections[0]!.closed, 'first connection closed');
  write(s.stream, silence(8000));
  fake.refuseUpgrades(null);
  await until(() => fake.connections.length === 2 && fake.connections[1]!.samples > 0, 'reconnected with the buffered audio');
  const c = fake.connections[1]!;
  // Flux's audio goes out in 80 ms messages: the newest whole messages that fit in 5 s (62, 4.96 s)
  const kept = Math.floor(5000 / 80) * 1280;
  await until(() => c.samples >= kept, 'five seconds delivered');
  t.is(c.samples, kept, 'exactly the newest 5 s of the 8 s written');
  t.false(s.events.some((e) => e.type === 'error'));
  await s.stream.close();
});

test('base URL override: http→ws, https→wss, the prefix kept, the vendor path and query after it', (t) => {
  t.is(vendorWsUrl('https://api.deepgram.com', '/v2/listen', [['model', 'flux-general-en']]), 'wss://api.deepgram.com/v2/listen?model=flux-general-en');
  t.is(vendorWsUrl('http://127.0.0.1:9999/proxy/', '/v3/ws'), 'ws://127.0.0.1:9999/proxy/v3/ws');
  t.is(vendorWsUrl('https://eu.example.com:8443/a/b', '/speech-to-text/ws', [['language-code', 'hi-IN']]), 'wss://eu.example.com:8443/a/b/speech-to-text/ws?language-code=hi-IN');
  // defaults are the vendors' real hosts
  const c = loadConfig({});
  t.is(c.SONIOX_BASE_URL, 'https://stt-rt.soniox.com');
  t.is(c.DEEPGRAM_BASE_URL, 'https://api.deepgram.com');
  t.is(c.ASSEMBLYAI_BASE_URL, 'https://streaming.assemblyai.com');
  t.is(c.SARVAM_BASE_URL, 'https://api.sarvam.ai');
  t.is(c.CARTESIA_BASE_URL, 'https://api.cartesia.ai');
});

test('no key configured: a fatal error that names the variable, no connection attempted', async (t) => {
  const fake = await startSonioxFake({ script: SCRIPT });
  t.teardown(() => fake.close());
  const svc = createEngines(loadConfig({ SONIOX_BASE_URL: fake.url }), agent('soniox')).stt;
  const s = await open(svc);
  const e = (await s.wait((x) => x.type === 'error', 'error')) as Extract<SttEvent, { type: 'error' }>;
  t.is(e.error.message, 'soniox STT refused: SONIOX_API_KEY is not set');
  t.true(e.error.fatal);
  t.is(fake.connections.length, 0);
});

test('usage: provider and model (the defaults chosen from the languages) are priced per second of audio', (t) => {
  const cfg = loadConfig({});
  const model = (p: string, languages: string[], m: string | null = null) => createEngines(cfg, agent(p, { languages, model: m })).stt.model;
  t.is(model('soniox', ['en']), 'stt-rt-v5');
  t.is(model('deepgram', ['en']), 'flux-general-en');
  t.is(model('deepgram', ['en', 'es']), 'flux-general-multi');
  t.is(model('assemblyai', ['en']), 'universal-streaming-english');
  t.is(model('assemblyai', ['en', 'de']), 'universal-streaming-multilingual');
  t.is(model('assemblyai', ['hi']), 'universal-3-5-pro');
  t.is(model('assemblyai', ['en'], 'u3-rt-pro'), 'u3-rt-pro');
  t.is(model('sarvam', ['hi']), 'saaras:v3');
  t.is(model('cartesia', ['en']), 'ink-2');
  t.is(model('cartesia', ['en', 'fr']), 'ink-whisper');
  for (const [provider, m] of [
    ['soniox', 'stt-rt-v5'],
    ['deepgram', 'flux-general-en'],
    ['assemblyai', 'u3-rt-pro'],
    ['sarvam', 'saaras:v3'],
    ['cartesia', 'ink-2'],
  ] as const) {
    const cost = computeCost({ stt: { provider, model: m, seconds: 60 } });
    t.true(cost.stt > 0, `${provider}/${m} priced`);
    t.deepEqual(cost.unpriced, []);
  }
  // one minute of Deepgram Flux is its public per-minute price
  t.is(computeCost({ stt: { provider: 'deepgram', model: 'flux-general-en', seconds: 60 } }).stt, 0.0077);
  t.true(computeCost({ stt: { provider: 'assemblyai', model: 'u3-rt-pro', seconds: 3600 } }).stt > computeCost({ stt: { provider: 'assemblyai', model: 'universal-streaming-english', seconds: 3600 } }).stt);
});

// ── Soniox ───────────────────────────────────────────────────────────────────────────────────────────────
test('soniox: the start message maps the tuning block (clamped), language hints and context terms', (t) => {
  t.deepEqual(sonioxConfig('stt-rt-v5', { endpointSensitivity: 0.3, endpointLatencyAdjustmentLevel: 2, maxEndpointDelayMs: 2000 }, ['en', 'es'], ['Acme', ' Zorblax ']), {
    model: 'stt-rt-v5',
    audio_format: 'pcm_s16le',
    sample_rate: 16000,
    num_channels: 1,
    enable_endpoint_detection: true,
    language_hints: ['en', 'es'],
    context: { terms: ['Acme', 'Zorblax'] },
    endpoint_sensitivity: 0.3,
    endpoint_latency_adjustment_level: 2,
    max_endpoint_delay_ms: 2000,
  });
  const clamped = sonioxConfig('stt-rt-v5', { endpointSensitivity: 7, endpointLatencyAdjustmentLevel: 9, maxEndpointDelayMs: 100 }, [], []);
  t.is(clamped.endpoint_sensitivity, 1);
  t.is(clamped.endpoint_latency_adjustment_level, 3);
  t.is(clamped.max_endpoint_delay_ms, 500);
  t.false('context' in clamped);
  // defaults (empty block) are the spec's; v4 has no endpoint_sensitivity
  const v4 = sonioxConfig('stt-rt-v4', {}, ['en'], []);
  t.false('endpoint_sensitivity' in v4);
  t.is(v4.max_endpoint_delay_ms, 2000);
  t.is(v4.endpoint_latency_adjustment_level, 2);
});

test('soniox: config first, then audio; finalize at end of speech brings the words back final (<fin>), <end> ends the turn', async (t) => {
  const fake = await startSonioxFake({ script: ['please book a table for four'] });
  t.teardown(() => fake.close());
  const s = await open(build(vendors[0]!, fake, { block: { contextTerms: 'Acme', endpointSensitivity: -3 } }), { languages: ['en', 'fr'], keyterms: ['Acme'] });
  const c = fake.connections[0]!;
  write(s.stream, tone(460)); // four words so far (onset after 60 ms, a word per 100 ms)
  s.stream.finalize();
  s.stream.finalize(); // a second finalize within a second is not sent (Soniox disconnects on too many)
  const fin = (await s.wait((e) => e.type === 'final', 'final after finalize')) as { text: string };
  t.is(fin.text, 'please book a table');
  t.true(s.events.some((e) => e.type === 'interim' && e.text === 'please book a table'));
  write(s.stream, tone(200));
  write(s.stream, silence(600));
  const end = (await s.wait((e) => e.type === 'turn_end', 'turn_end')) as { text: string };
  t.is(end.text, 'for four');
  t.deepEqual(turns(s.events), ['please book a table for four']);
  const first = c.messages[0] as { kind: string; data: Record<string, unknown> };
  t.is(first.kind, 'json');
  t.is(first.data.model, 'stt-rt-v5');
  t.deepEqual(first.data.language_hints, ['en', 'fr']);
  t.is(first.data.endpoint_sensitivity, -1);
  t.deepEqual(first.data.context, { terms: ['Acme'] });
  t.false('api_key' in first.data, 'the key travels in the header, not the start message');
  const kinds = c.messages.map((m) => (m.kind === 'json' ? String(m.data.type ?? 'config') : m.kind));
  t.is(kinds.filter((k) => k === 'finalize').length, 1);
  t.true(kinds.indexOf('audio') > 0 && kinds.indexOf('finalize') > kinds.indexOf('audio'));
  await s.stream.close();
});

test('soniox: keepalive messages through silence keep the session open past its idle timeout', async (t) => {
  // the idle close is 15 keepalive periods: a loaded machine delaying timers does not close the socket by itself
  const fake = await startSonioxFake({ script: SCRIPT, idleCloseMs: 1500 });
  t.teardown(() => fake.close());
  const svc = new SonioxStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'stt-rt-v5', keepaliveMs: 100 });
  const s = await open(svc);
  const c = fake.connections[0]!;
  // no audio at all: keepalives go out; twenty-five of them span well past the vendor's idle close
  await until(() => c.messages.filter((m) => m.kind === 'json' && m.data.type === 'keepalive').length >= 25, 'twenty-five keepalives');
  t.false(c.closed);
  t.is(fake.connections.length, 1);
  t.false(s.events.some((e) => e.type === 'error'));
  await s.stream.close();
});

// ── Deepgram Flux ────────────────────────────────────────────────────────────────────────────────────────
test('deepgram: the query maps the tuning block (clamped to the vendor range), keyterms and language hints', (t) => {
  const q = (model: string, block: Record<string, unknown>, languages: string[], keyterms: string[] = []) => new URLSearchParams(deepgramQuery(model, block, languages, keyterms).map(([k, v]): [string, string] => [k, String(v)]));
  const a = q('flux-general-en', { eotThreshold: 0.7, eotTimeoutMs: 2000 }, ['en'], ['Acme', 'Zorblax']);
  t.is(a.get('model'), 'flux-general-en');
  t.is(a.get('encoding'), 'linear16');
  t.is(a.get('sample_rate'), '16000');
  t.is(a.get('eot_threshold'), '0.7');
  t.is(a.get('eager_eot_threshold'), '0.5');
  t.is(a.get('eot_timeout_ms'), '2000');
  t.deepEqual(a.getAll('keyterm'), ['Acme', 'Zorblax']);
  t.deepEqual(a.getAll('language_hint'), []);
  const b = q('flux-general-multi', { eotThreshold: 0.4, eotTimeoutMs: 999999 }, ['en', 'es', 'ta']);
  t.is(b.get('eot_threshold'), '0.5');
  t.is(b.get('eager_eot_threshold'), '0.3');
  t.is(b.get('eot_timeout_ms'), '60000');
  t.deepEqual(b.getAll('language_hint'), ['en', 'es']);
  t.is(q('flux-general-en', {}, ['en']).get('eot_timeout_ms'), '2000');
});

test('deepgram: EagerEndOfTurn starts the speculative reply, TurnResumed only after it, EndOfTurn ends the turn', async (t) => {
  const fake = await startDeepgramFake({ script: ['I want to cancel', 'my order please'] });
  t.teardown(() => fake.close());
  const s = await open(build(vendors[1]!, fake, { block: { eotThreshold: 0.8, eotTimeoutMs: 3000, keyterms: 'Acme' } }), { keyterms: ['Acme'] });
  const c = fake.connections[0]!;
  t.is(c.query.get('eot_threshold'), '0.8');
  t.is(c.query.get('eot_timeout_ms'), '3000');
  t.deepEqual(c.query.getAll('keyterm'), ['Acme']);
  // written in one go (the vendor hears it in order, whatever the machine's speed): speech, a pause long enough
  // for EagerEndOfTurn but not EndOfTurn, more speech, then the end of the turn
  write(s.stream, tone(400));
  write(s.stream, silence(260));
  write(s.stream, tone(200));
  write(s.stream, silence(800));
  await s.wait((e) => e.type === 'turn_end', 'turn_end');
  const types = s.events.map((e) => e.type).filter((x) => x !== 'interim');
  t.deepEqual(types.slice(0, 5), ['speech_started', 'eager_turn_end', 'turn_resumed', 'eager_turn_end', 'turn_end']);
  const eager = s.events.filter((e) => e.type === 'eager_turn_end').at(-1) as { text: string };
  t.is(eager.text, 'I want to cancel');
  t.deepEqual(turns(s.events), ['I want to cancel']);
  // a turn without a pause: no TurnResumed at all
  const before = s.events.length;
  say(s.stream, 400, 800);
  await until(() => turns(s.events).length === 2, 'second turn');
  t.false(s.events.slice(before).some((e) => e.type === 'turn_resumed'));
  // Flux sent TurnResumed only after an EagerEndOfTurn
  const events = c.sent.filter((m) => m.type === 'TurnInfo').map((m) => m.event);
  t.true(events.every((e, i) => e !== 'TurnResumed' || events[i - 1] === 'EagerEndOfTurn' || events.slice(0, i).lastIndexOf('EagerEndOfTurn') > events.slice(0, i).lastIndexOf('StartOfTurn')));
  await s.stream.close();
});

test('deepgram: when the caller audio stops mid-turn, silence keeps flowing so Flux can end the turn', async (t) => {
  const fake = await startDeepgramFake({ script: ['hello there'] });
  t.teardown(() => fake.close());
  const s = await open(new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'flux-general-en', keepaliveMs: 50 }));
  write(s.stream, tone(300)); // and then nothing: the transport went quiet
  const end = (await s.wait((e) => e.type === 'turn_end', 'turn_end from keepalive silence')) as { text: string };
  t.is(end.text, 'hello there');
  await s.stream.close();
});

test('deepgram: 20 ms frames go out as 80 ms messages (Flux\'s recommended size); a part left when the audio stops goes out, in order, before CloseStream', async (t) => {
  const fake = await startDeepgramFake({ script: ['hello there'] });
  t.teardown(() => fake.close());
  const s = await open(new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'flux-general-en', keepaliveMs: 10_000 }));
  const c = fake.connections[0]!;
  write(s.stream, tone(300)); // 15 frames: three 80 ms messages and 60 ms gathered
  const audio = () => c.messages.filter((m): m is { kind: 'audio'; samples: number } => m.kind === 'audio').map((m) => m.samples);
  await until(() => audio().length >= 3, 'three full messages');
  t.deepEqual(audio().slice(0, 3), [1280, 1280, 1280]);
  // the caller's audio stopped: the gathered 60 ms goes out within the socket's tick, not with the next audio
  await until(() => audio().length === 4, 'the gathered part');
  t.is(audio()[3], 960);
  t.is(c.samples, 4800, 'every sample delivered once');
  write(s.stream, tone(40)); // a part again, then the end of the stream: the audio before CloseStream
  await s.stream.close();
  t.deepEqual(audio().slice(4), [640]);
  t.is(lastJson(c)?.type, 'CloseStream');
});

test('deepgram: the quiet second after speech goes out frame by frame (the end of turn falls there), then 80 ms messages again', async (t) => {
  const fake = await startDeepgramFake({ script: ['hello there'], endMs: 5000 });
  t.teardown(() => fake.close());
  const s = await open(new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'flux-general-en', keepaliveMs: 10_000 }));
  const c = fake.connections[0]!;
  const audio = () => c.messages.filter((m): m is { kind: 'audio'; samples: number } => m.kind === 'audio').map((m) => m.samples);
  write(s.stream, silence(160)); // before any speech: gathered
  write(s.stream, tone(300)); // speech: gathered on
  write(s.stream, silence(1200)); // the first 1 000 ms frame by frame, then gathered again
  await until(() => c.samples === (160 + 300 + 1200) * 16, 'all the audio');
  const sizes = audio();
  // 460 ms gathered: five 80 ms messages and 60 ms, sent ahead of the first quiet frame after speech
  t.deepEqual(sizes.slice(0, 6), [1280, 1280, 1280, 1280, 1280, 960]);
  t.deepEqual(sizes.slice(6, 56), new Array<number>(50).fill(320), 'one message per 20 ms frame for 1 s after speech');
  t.deepEqual(sizes.slice(56), [1280, 1280, 640], 'then gathered again (the last part flushed when the audio stopped)');
  await s.stream.close();
});

// ── AssemblyAI ───────────────────────────────────────────────────────────────────────────────────────────
test('assemblyai: the query maps the tuning block for the Universal-3 Pro family only, keyterms limited and clamped', (t) => {
  const q = (model: string, block: Record<string, unknown>, keyterms: string[] = []) => new URLSearchParams(assemblyAiQuery(model, block, keyterms).map(([k, v]): [string, string] => [k, String(v)]));
  const long = 'x'.repeat(51);
  const terms = ['Acme', long, ...Array.from({ length: 120 }, (_, i) => `term${i}`)];
  const a = q('u3-rt-pro', { mode: 'max_accuracy', voiceFocus: 'far-field', voiceFocusThreshold: 1.7 }, terms);
  t.is(a.get('speech_model'), 'u3-rt-pro');
  t.is(a.get('sample_rate'), '16000');
  t.is(a.get('encoding'), 'pcm_s16le');
  t.is(a.get('format_turns'), 'true');
  t.is(a.get('mode'), 'max_accuracy');
  t.is(a.get('voice_focus'), 'far-field');
  t.is(a.get('voice_focus_threshold'), '1');
  const kt = JSON.parse(a.get('keyterms_prompt')!) as string[];
  t.is(kt.length, 100);
  t.is(kt[0], 'Acme');
  t.false(kt.includes(long));
  const off = q('universal-3-5-pro', { voiceFocus: 'off' });
  t.is(off.get('mode'), 'balanced');
  t.false(off.has('voice_focus'));
  t.false(off.has('voice_focus_threshold'));
  const eng = q('universal-streaming-english', { mode: 'min_latency', voiceFocus: 'near-field' });
  t.false(eng.has('mode'));
  t.false(eng.has('voice_focus'));
  t.false(eng.has('keyterms_prompt'));
});

test('assemblyai: 20 ms frames go out as 50–1000 ms messages; the formatted end of turn ends the turn once; Terminate on close', async (t) => {
  const fake = await startAssemblyAiFake({ script: ['what is my balance?'] });
  t.teardown(() => fake.close());
  const s = await open(build(vendors[2]!, fake, { model: 'u3-rt-pro', block: { mode: 'min_latency', voiceFocus: 'near-field', voiceFocusThreshold: 0.5 } }));
  const c = fake.connections[0]!;
  t.is(c.query.get('mode'), 'min_latency');
  t.is(c.query.get('voice_focus_threshold'), '0.5');
  say(s.stream, 500, 700);
  s.stream.finalize(); // flushes the gathered remainder, padded to 50 ms
  await s.wait((e) => e.type === 'turn_end', 'turn_end');
  t.deepEqual(turns(s.events), ['what is my balance?']);
  t.is(s.events.filter((e) => e.type === 'turn_end').length, 1);
  const interims = s.events.filter((e) => e.type === 'interim') as Array<{ text: string }>;
  t.is(interims[0]!.text, 'what');
  const audio = c.messages.filter((m): m is { kind: 'audio'; samples: number } => m.kind === 'audio');
  t.true(audio.length > 0);
  t.true(audio.every((m) => m.samples >= 800 && m.samples <= 16000), 'every message 50–1000 ms');
  t.false(c.closed, 'no 3007 input duration violation');
  await s.stream.close();
  t.deepEqual(lastJson(c), { type: 'Terminate' });
  t.true(c.sent.some((m) => m.type === 'Termination'));
});

test('assemblyai: when the caller audio stops, silence keeps flowing in valid 50 ms+ messages and the turn still ends', async (t) => {
  const fake = await startAssemblyAiFake({ script: ['check my order'] });
  t.teardown(() => fake.close());
  const s = await open(new AssemblyAiStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'universal-streaming-english', keepaliveMs: 60 }));
  const c = fake.connections[0]!;
  write(s.stream, tone(420)); // then nothing
  s.stream.finalize();
  const end = (await s.wait((e) => e.type === 'turn_end', 'turn_end from keepalive silence')) as { text: string };
  t.is(end.text, 'check my order');
  t.false(c.closed, 'no input duration violation');
  t.true(c.messages.filter((m) => m.kind === 'audio').every((m) => (m as { samples: number }).samples >= 800));
  await s.stream.close();
});

// ── Sarvam ───────────────────────────────────────────────────────────────────────────────────────────────
test('sarvam: query uses the hyphenated language-code, the mode and VAD sensitivity; codemix for English + Hindi', (t) => {
  const q = (block: Record<string, unknown>, languages: string[]) => new URLSearchParams(sarvamQuery('saaras:v3', block, languages));
  const a = q({ mode: 'verbatim', highVadSensitivity: true }, ['ta']);
  t.is(a.get('language-code'), 'ta-IN');
  t.false(a.has('language_code'));
  t.is(a.get('mode'), 'verbatim');
  t.is(a.get('high_vad_sensitivity'), 'true');
  t.is(a.get('vad_signals'), 'true');
  t.is(a.get('input_audio_codec'), 'pcm_s16le');
  t.is(a.get('sample_rate'), '16000');
  t.is(q({}, ['or']).get('language-code'), 'od-IN');
  t.is(q({}, ['ta', 'te']).get('language-code'), 'unknown');
  t.is(q({}, ['fr']).get('language-code'), 'unknown');
  t.is(q({}, ['hi']).get('mode'), 'transcribe');
  t.is(q({}, ['hi']).get('high_vad_sensitivity'), 'false');
  const mix = q({ mode: 'translit' }, ['en', 'hi']);
  t.is(mix.get('mode'), 'codemix');
});

test('sarvam: base64 JSON audio; flush at the end of the turn gives the words now, the rest comes as a final at END_SPEECH (no end of turn of its own)', async (t) => {
  const fake = await startSarvamFake({ script: ['mera order kahan hai'] });
  t.teardown(() => fake.close());
  const s = await open(build(vendors[3]!, fake, { block: { mode: 'codemix', highVadSensitivity: true }, languages: ['hi'] }), { languages: ['hi'] });
  const c = fake.connections[0]!;
  t.is(c.query.get('language-code'), 'hi-IN');
  t.is(c.query.get('high_vad_sensitivity'), 'true');
  t.is(c.query.get('mode'), 'codemix');
  // in one go, as the vendor hears it: speech, the flush at the VAD's end of speech, a last word, silence
  write(s.stream, silence(40));
  write(s.stream, tone(400));
  s.stream.finalize();
  write(s.stream, tone(100));
  write(s.stream, silence(600));
  await until(() => s.events.filter((e) => e.type === 'final').length === 2, 'the last word');
  t.deepEqual(
    s.events.map((e) => e.type),
    ['speech_started', 'final', 'final'],
  );
  t.is((s.events[1] as { text: string }).text, 'mera order kahan');
  t.deepEqual(heard({ id: 'sarvam' }, s.events), ['mera order kahan', 'hai']);
  const audioMsg = c.messages.find((m) => m.kind === 'json' && 'audio' in m.data) as unknown as { data: { audio: { sample_rate: number; encoding: string; data: string } } };
  t.is(audioMsg.data.audio.sample_rate, 16000);
  t.is(audioMsg.data.audio.encoding, 'audio/wav');
  t.true(c.messages.some((m) => m.kind === 'json' && m.data.type === 'flush'));
  await s.stream.close();
});

test('sarvam: silence through quiet periods keeps the socket past the idle close', async (t) => {
  const fake = await startSarvamFake({ script: SCRIPT, idleCloseMs: 1500 });
  t.teardown(() => fake.close());
  const s = await open(new SarvamStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'saaras:v3', keepaliveMs: 100 }));
  const c = fake.connections[0]!;
  await until(() => c.messages.filter((m) => m.kind === 'json' && 'audio' in m.data).length >= 25, 'twenty-five silent chunks');
  t.false(c.closed);
  t.is(fake.connections.length, 1);
  await s.stream.close();
});

// ── Cartesia ─────────────────────────────────────────────────────────────────────────────────────────────
test('cartesia: the query maps the turn thresholds (eager clamped to 0.6), timeout and keyterms (≤ 1200 chars)', (t) => {
  const q = (block: Record<string, unknown>, keyterms: string[] = []) => new URLSearchParams(cartesiaSttQuery('ink-2', block, keyterms).map(([k, v]): [string, string] => [k, String(v)]));
  const a = q({ turnStartThreshold: 0.85, turnEagerEndThreshold: 0.8, turnEndThreshold: 0.1, turnEndTimeoutMs: 5000 }, ['Acme']);
  t.is(a.get('model'), 'ink-2');
  t.is(a.get('encoding'), 'pcm_s16le');
  t.is(a.get('sample_rate'), '16000');
  t.is(a.get('turn_start_threshold'), '0.85');
  t.is(a.get('turn_eager_end_threshold'), '0.6');
  t.is(a.get('turn_end_threshold'), '0.1');
  t.is(a.get('turn_end_timeout_ms'), '5000');
  t.deepEqual(a.getAll('keyterm'), ['Acme']);
  t.false(a.has('language'));
  const w = new URLSearchParams(cartesiaSttQuery('ink-whisper', {}, [], ['fr', 'en']).map(([k, v]): [string, string] => [k, String(v)]));
  t.is(w.get('language'), 'fr');
  const d = q({});
  t.is(d.get('turn_start_threshold'), '0.8');
  t.is(d.get('turn_eager_end_threshold'), '0.4');
  t.is(d.get('turn_end_threshold'), '0.2');
  t.is(d.get('turn_end_timeout_ms'), '2000');
  const many = q({}, Array.from({ length: 150 }, (_, i) => `keyterm-${String(i).padStart(3, '0')}`));
  const kept = many.getAll('keyterm');
  t.true(kept.join('').length <= 1200);
  t.true(kept.length <= 100);
  t.is(kept[0], 'keyterm-000');
});

test('cartesia: eager end and resume; when the caller audio stops mid-turn, silence makes turn.end come', async (t) => {
  const fake = await startCartesiaSttFake({ script: ['can you help me', 'with my bill'] });
  t.teardown(() => fake.close());
  const s = await open(new CartesiaStt({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'ink-2', keepaliveMs: 40 }));
  // speech, a pause (eager end), more speech (resume); then the transport goes quiet mid-turn: Cartesia would never
  // send turn.end without audio, the adapter's silence makes it come
  write(s.stream, tone(400));
  write(s.stream, silence(240));
  write(s.stream, tone(200));
  await s.wait((e) => e.type === 'eager_turn_end', 'eager end');
  await s.wait((e) => e.type === 'turn_resumed', 'resume');
  const end = (await s.wait((e) => e.type === 'turn_end', 'turn.end thanks to silence')) as { text: string };
  t.is(end.text, 'can you help me');
  await s.stream.close();
});

// ── optional live tests: registered only when the real key is in the environment ──────────────────────────
const live: Array<[string, string]> = [
  ['soniox', 'SONIOX_API_KEY'],
  ['deepgram', 'DEEPGRAM_API_KEY'],
  ['assemblyai', 'ASSEMBLYAI_API_KEY'],
  ['sarvam', 'SARVAM_API_KEY'],
  ['cartesia', 'CARTESIA_API_KEY'],
];
const missing = live.filter(([, env]) => !process.env[env]).map(([id, env]) => `${id} (${env})`);
if (missing.length) console.log(`live STT vendor tests not registered, no key in the environment: ${missing.join(', ')}`);
for (const [id, env] of live) {
  if (!process.env[env]) continue;
  test(`live ${id}: connects with the real key and streams a second of silence without a refusal`, async (t) => {
    const config = loadConfig(process.env);
    const svc = createEngines(config, agent(id)).stt;
    const s = await open(svc);
    write(s.stream, silence(1000));
    await new Promise((r) => setTimeout(r, 1500));
    await s.stream.close();
    t.false(s.events.some((e) => e.type === 'error' && e.error.fatal), JSON.stringify(s.events));
  });
}
