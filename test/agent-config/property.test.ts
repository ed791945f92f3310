// Property-based (fast-check): thousands of random and mutated bodies to POST /agents and PATCH /agents/{uuid}.
// Properties: never a 5xx; only 201/200 or the 400 invalid_agent_config shape; every accepted body round-trips
// through GET unchanged; a rejected PATCH changes nothing; a resolved config re-posted resolves to itself.
// FC_SEED=<n> replays a run; FC_RUNS scales the run counts.
import test from 'ava';
import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { LANGUAGES } from '../../core/catalog.ts';

let s: TestServer;
let key: string;
let seedConfig: Record<string, unknown>;

const SCALE = Number(process.env.FC_RUNS ?? 1);
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

test.before(async () => {
  s = await startTestServer({ temporal: false });
  key = (await s.createOrg({ ratePerMinute: 10_000_000 })).apiKey;
  const r = await s.request('POST', '/agents', {
    key,
    body: {
      name: 'Seed',
      languages: ['en', 'hi'],
      llm: { provider: 'openai', model: null },
      stt: { provider: 'soniox', deepgram: {}, cartesia: {} },
      tts: { provider: 'elevenlabs', cartesia: {}, xai: {} },
      greeting: { firstMessages: ['Hello'] },
      webhook: { url: 'https://hooks.example.com/x', headers: { 'X-A': 'b' } },
      contextVariables: { name: 'Ann' },
      tools: [
        { type: 'testTool', name: 'sim', config: { messages: ['wait'] } },
        { type: 'transferCall', name: 'xfer', config: { destination: '+14155550100' } },
        { type: 'function', name: 'crm', config: { server: { url: 'https://crm.example.com/{{name}}' }, parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } },
      ],
    },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  seedConfig = r.body.config;
});
test.after.always(async () => {
  await s?.close();
});

// ---------------------------------------------------------------- arbitraries
const interesting = fc.constantFrom<unknown>(
  null, true, false, 0, -1, 0.5, 1, 1.5, 2, 3, 10, 25, 610, 4096, 7200, 1e9, -0.25, '', ' ', 'en', 'hi', 'xx',
  'openai', 'anthropic', 'local', 'deepgram', 'cartesia', 'assemblyai', 'sarvam', 'xai', 'inworld', 'elevenlabs',
  'eve', 'alloy', 'custom', 'audio', 'none', 'random', 'in-order', 'https://ok.example.com/a', 'http://127.0.0.1/',
  'http://10.0.0.1/', 'ftp://x', '+14155550100', 'PJSIP/1', '00000000-0000-4000-8000-000000000000', [], {}, ['en'], [''],
);
const anyString = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'grapheme', maxLength: 8 }));
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: interesting },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: anyString },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e4, max: 1e4 }) },
  { weight: 1, arbitrary: fc.integer({ min: -10, max: 8000 }) },
);
const keyName = fc.oneof(fc.constantFrom('name', 'model', 'voice', 'provider', 'url', 'headers', 'config', 'type', 'enabled', 'foo', 'eotThreshold', '__proto__', 'constructor'), anyString);

type Json = unknown;
function paths(v: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...prefix, i], out));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out);
  return out;
}
function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}
type Mutation = { op: 'set' | 'delete' | 'add'; at: number; value: unknown; key: string };
function mutate(root: Json, muts: Mutation[]): Json {
  let doc = clone(root);
  for (const m of muts) {
    const all = paths(doc);
    const path = all[m.at % all.length]!;
    if (path.length === 0) {
      if (m.op === 'set') doc = m.value;
      else if (m.op === 'add' && doc && typeof doc === 'object' && !Array.isArray(doc)) Object.defineProperty(doc, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
      continue;
    }
    const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], doc);
    const last = path[path.length - 1]!;
    if (m.op === 'set') parent[last] = m.value;
    else if (m.op === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      const target = parent[last];
      if (target && typeof target === 'object' && !Array.isArray(target)) Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
      else if (Array.isArray(target)) target.push(m.value);
      else parent[last] = m.value;
    }
  }
  return doc;
}
const mutation: fc.Arbitrary<Mutation> = fc.record({ op: fc.constantFrom('set', 'set', 'delete', 'add'), at: fc.nat(), value: anyValue, key: keyName }) as fc.Arbitrary<Mutation>;

const plausible = fc.record(
  {
    name: fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.string({ maxLength: 130 })),
    description: anyString,
    languages: fc.array(fc.constantFrom(...LANGUAGES, 'xx'), { maxLength: 12 }),
    timezone: fc.constantFrom('UTC', 'Asia/Kolkata', 'Europe/Berlin', 'Nowhere/City', ''),
    systemPrompt: fc.string({ maxLength: 40 }),
    llm: fc.record(
      {
        provider: fc.constantFrom('openai', 'google', 'groq', 'anthropic', 'local', 'azure'),
        model: fc.constantFrom(null, 'gpt-4o', 'gpt-4.1-mini', 'claude-haiku-4-5', 'gemini-2.5-flash', 'local-demo', 'llama-3.3-70b-versatile', 'bogus'),
        temperature: fc.double({ min: -0.5, max: 2.5, noNaN: true }),
        maxTokens: fc.integer({ min: -5, max: 5000 }),
        prewarm: fc.boolean(),
      },
      { requiredKeys: ['provider', 'model'] },
    ),
    stt: fc.record(
      {
        provider: fc.constantFrom('soniox', 'deepgram', 'assemblyai', 'sarvam', 'cartesia', 'local'),
        model: fc.constantFrom(null, 'flux-general-multi', 'stt-rt-v4', 'ink-whisper', 'saaras:v3', 'nope'),
        interruptionMinWords: fc.integer({ min: -1, max: 12 }),
        deepgram: fc.record({ eotThreshold: fc.double({ min: 0.4, max: 1, noNaN: true }), eotTimeoutMs: fc.integer({ min: 400, max: 70000 }) }, { requiredKeys: [] }),
        cartesia: fc.record({ turnStartThreshold: fc.double({ min: 0.4, max: 1, noNaN: true }), turnEagerEndThreshold: fc.double({ min: 0.2, max: 0.9, noNaN: true }), turnEndThreshold: fc.double({ min: 0, max: 0.6, noNaN: true }) }, { requiredKeys: [] }),
        assemblyai: fc.record({ mode: fc.constantFrom('balanced', 'min_latency', 'x'), voiceFocusThreshold: fc.double({ min: -0.1, max: 1.1, noNaN: true }) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['provider'] },
    ),
    tts: fc.record(
      {
        provider: fc.constantFrom('elevenlabs', 'cartesia', 'openai', 'sarvam', 'xai', 'inworld', 'local'),
        model: fc.constantFrom(null, 'eleven_v3', 'sonic-3', 'tts-1', 'bulbul:v2', 'x'),
        voice: fc.constantFrom(null, 'eve', 'rex', 'alloy', 'abc123'),
        elevenlabs: fc.record({ speed: fc.double({ min: 0.5, max: 1.4, noNaN: true }), stability: fc.double({ min: -0.1, max: 1.1, noNaN: true }) }, { requiredKeys: [] }),
        xai: fc.record({ optimizeStreamingLatency: fc.integer({ min: -1, max: 3 }) }, { requiredKeys: [] }),
      },
      { requiredKeys: ['provider'] },
    ),
    greeting: fc.record({ firstMessages: fc.array(fc.string({ maxLength: 10 }), { maxLength: 7 }), agentDelayS: fc.double({ min: -1, max: 5, noNaN: true }), speakFirst: fc.constantFrom('agent', 'user', 'bot') }, { requiredKeys: [] }),
    maxCallDurationS: fc.oneof(fc.integer({ min: 0, max: 7300 }), fc.integer({ min: 1, max: 720 }).map((n) => n * 10)),
    userIdleTimeoutS: fc.integer({ min: 0, max: 30 }),
    userIdleMessages: fc.array(fc.string({ maxLength: 10 }), { maxLength: 7 }),
    userIdleMaxRetries: fc.integer({ min: 0, max: 6 }),
    webhook: fc.oneof(fc.constant(null), fc.constantFrom('https://h.example.com/1', 'ftp://x'), fc.record({ url: fc.constantFrom('https://h.example.com/2', 'nope'), headers: fc.dictionary(fc.constantFrom('X-A', 'Authorization', 'bad header'), fc.string({ maxLength: 5 })) }, { requiredKeys: ['url'] })),
    contextVariables: fc.dictionary(fc.string({ minLength: 0, maxLength: 8 }), fc.string({ maxLength: 10 }), { maxKeys: 5 }),
    backgroundSound: fc.record({ enabled: fc.boolean(), sound: fc.constantFrom('library', 'office', 'jungle'), volume: fc.double({ min: -0.1, max: 1.2, noNaN: true }) }, { requiredKeys: [] }),
    fillerWords: fc.record({ words: fc.string({ maxLength: 20 }), thresholdMs: fc.integer({ min: 0, max: 6000 }) }, { requiredKeys: [] }),
    tools: fc.array(
      fc.oneof(
        fc.constantFrom('00000000-0000-4000-8000-000000000000', 'not-a-uuid'),
        fc.record({ type: fc.constant('testTool'), name: fc.constantFrom('sim', 'sim2', 'Sim', 'bad name'), config: fc.record({ delaySeconds: fc.double({ min: 0, max: 31, noNaN: true }), outcome: fc.constantFrom('success', 'failure') }, { requiredKeys: [] }) }),
        fc.record({ type: fc.constant('endCall'), config: fc.record({ messageType: fc.constantFrom('none', 'custom', 'audio'), customMessages: fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }) }, { requiredKeys: [] }) }, { requiredKeys: ['type', 'config'] }),
        fc.record({ type: fc.constant('transferCall'), name: fc.constant('xfer'), config: fc.record({ destination: fc.constantFrom('+14155550100', 'SIP/1', 'x'), timeout: fc.integer({ min: 0, max: 400 }) }, { requiredKeys: ['destination'] }) }),
        fc.record({ type: fc.constant('function'), name: fc.constantFrom('fn', 'end_call', 'safe_calculator'), config: fc.record({ server: fc.record({ url: fc.constantFrom('https://api.example.com/{{x}}', 'http://127.0.0.1/', 'https://{{host}}/a') }) }) }),
      ),
      { maxLength: 4 },
    ),
  },
  { requiredKeys: ['name', 'llm', 'stt', 'tts'] },
);

/** Bodies valid with high probability (so the round-trip property is exercised often). */
const unit = fc.double({ min: 0, max: 1, noNaN: true });
const validish = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 30 }).filter((n) => n.trim().length > 0),
    description: fc.string({ maxLength: 20 }),
    languages: fc.subarray(['en', 'es', 'fr', 'de'], { minLength: 1 }),
    timezone: fc.constantFrom('UTC', 'Asia/Kolkata', 'America/Sao_Paulo'),
    llm: fc.tuple(
      fc.constantFrom(['openai', null], ['openai', 'gpt-4o'], ['anthropic', 'claude-sonnet-4-5'], ['google', null], ['groq', 'openai/gpt-oss-20b'], ['local', 'local-demo']),
      fc.double({ min: 0, max: 2, noNaN: true }),
      fc.integer({ min: 1, max: 4096 }),
    ).map(([[provider, model], temperature, maxTokens]) => ({ provider, model, temperature, maxTokens })),
    stt: fc.constantFrom({ provider: 'soniox' }, { provider: 'deepgram', model: 'flux-general-multi', deepgram: { eotThreshold: 0.5 } }, { provider: 'cartesia', model: 'ink-whisper' }),
    tts: fc.oneof(
      fc.record({ provider: fc.constant('elevenlabs'), elevenlabs: fc.record({ stability: unit, style: unit, speed: fc.double({ min: 0.7, max: 1.2, noNaN: true }) }, { requiredKeys: [] }) }),
      fc.record({ provider: fc.constant('xai'), voice: fc.constantFrom('ara', 'eve', 'leo', 'rex', 'sal', null) }),
      fc.record({ provider: fc.constantFrom('cartesia', 'openai', 'inworld') }),
    ),
    greeting: fc.record({ firstMessages: fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }), agentDelayS: fc.double({ min: 0, max: 4, noNaN: true }), interruptible: fc.boolean() }, { requiredKeys: [] }),
    maxCallDurationS: fc.integer({ min: 1, max: 720 }).map((n) => n * 10),
    userIdleTimeoutS: fc.integer({ min: 3, max: 25 }),
    userIdleMessages: fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }),
    backgroundSound: fc.record({ enabled: fc.boolean(), volume: unit }, { requiredKeys: [] }),
    acknowledgeSounds: fc.record({ probability: unit, thresholdS: fc.double({ min: 0.5, max: 30, noNaN: true }) }, { requiredKeys: [] }),
    contextVariables: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__'), fc.string({ maxLength: 10 }), { maxKeys: 5 }),
    webhook: fc.constantFrom(null, 'https://h.example.com/1', { url: 'https://h.example.com/2', headers: { 'X-A': 'b' } }),
    tools: fc.subarray([
      { type: 'testTool', name: 'sim', config: { delaySeconds: 1 } },
      { type: 'transferCall', name: 'xfer', config: { destination: '+14155550100', timeout: 60 } },
      { type: 'endCall', config: { messageType: 'none' } },
    ]),
  },
  { requiredKeys: ['name', 'llm', 'stt', 'tts'] },
);

const randomBody = fc.oneof(
  { weight: 3, arbitrary: validish as fc.Arbitrary<unknown> },
  { weight: 3, arbitrary: plausible as fc.Arbitrary<unknown> },
  { weight: 4, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }).map((m) => mutate(seedConfig, m)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

const isEnvelopeError = (body: any) =>
  body && typeof body === 'object' && body.detail && body.detail.error === 'invalid_agent_config' && Array.isArray(body.detail.details) && body.detail.details.length > 0 &&
  body.detail.details.every((d: any) => Array.isArray(d.loc) && typeof d.msg === 'string' && typeof d.type === 'string');

function report(t: any, run: () => Promise<void>) {
  return run().catch((err: Error) => t.fail(err.message.slice(0, 4000)));
}

test('POST /agents: random and mutated bodies never 5xx; accepted ones round-trip and are fixed points', async (t) => {
  let accepted = 0;
  let rejected = 0;
  await report(t, () =>
    fc.assert(
      fc.asyncProperty(randomBody, async (body) => {
        const r = await s.request('POST', '/agents', { key, body });
        if (r.status === 201) {
          accepted++;
          const got = await s.request('GET', `/agents/${r.body.uuid}`, { key });
          if (got.status !== 200 || JSON.stringify(sortKeys(got.body)) !== JSON.stringify(sortKeys(r.body))) throw new Error(`GET differs: ${JSON.stringify(got.body)} vs ${JSON.stringify(r.body)}`);
          if (accepted % 5 === 0) {
            const again = await s.request('POST', '/agents', { key, body: r.body.config });
            if (again.status !== 201 || JSON.stringify(sortKeys(again.body.config)) !== JSON.stringify(sortKeys(r.body.config))) throw new Error(`not a fixed point: ${again.status} ${JSON.stringify(again.body)}`);
          }
          return;
        }
        rejected++;
        if (r.status !== 400 || !isEnvelopeError(r.body)) throw new Error(`status ${r.status}: ${JSON.stringify(r.body)} for ${JSON.stringify(body)}`);
      }),
      { numRuns: Math.round(1200 * SCALE), seed, endOnFailure: true },
    ),
  );
  t.log(`POST: ${accepted} accepted, ${rejected} rejected`);
  t.true(accepted > 200, `too few accepted bodies (${accepted}) for the round-trip property to mean anything`);
  t.true(rejected > 50);
});

test('PATCH /agents/{uuid}: random and mutated patches never 5xx; accepted ones round-trip, rejected ones change nothing', async (t) => {
  const created = await s.request('POST', '/agents', { key, body: seedConfig });
  const uuid = created.body.uuid as string;
  let current = (await s.request('GET', `/agents/${uuid}`, { key })).body;
  let accepted = 0;
  const patchBody = fc.oneof(
    { weight: 3, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }).map((m) => mutate(seedConfig, m)) },
    { weight: 2, arbitrary: validish.chain((p) => fc.subarray(Object.keys(p), { minLength: 1 }).map((keys) => Object.fromEntries(keys.map((k) => [k, (p as any)[k]])))) },
    { weight: 2, arbitrary: plausible.chain((p) => fc.subarray(Object.keys(p), { minLength: 1 }).map((keys) => Object.fromEntries(keys.map((k) => [k, (p as any)[k]])))) },
    { weight: 1, arbitrary: fc.dictionary(keyName, anyValue, { maxKeys: 3 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
  await report(t, () =>
    fc.assert(
      fc.asyncProperty(patchBody, async (body) => {
        const r = await s.request('PATCH', `/agents/${uuid}`, { key, body });
        const got = await s.request('GET', `/agents/${uuid}`, { key });
        if (r.status === 200) {
          accepted++;
          if (JSON.stringify(sortKeys(got.body)) !== JSON.stringify(sortKeys(r.body))) throw new Error('GET differs from PATCH response');
          current = got.body;
          return;
        }
        if (r.status !== 400 || !isEnvelopeError(r.body)) throw new Error(`status ${r.status}: ${JSON.stringify(r.body)} for ${JSON.stringify(body)}`);
        if (JSON.stringify(sortKeys(got.body)) !== JSON.stringify(sortKeys(current))) throw new Error(`rejected PATCH changed the agent: ${JSON.stringify(body)}`);
      }),
      { numRuns: Math.round(800 * SCALE), seed, endOnFailure: true },
    ),
  );
  t.log(`PATCH: ${accepted} accepted`);
  t.true(accepted > 100, `too few accepted patches (${accepted})`);
});

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  return v;
}
