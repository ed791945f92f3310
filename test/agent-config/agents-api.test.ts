// Agents API behaviour: envelope, webhookSecret, list/archive/duplicate, the seven PATCH rules, preview-snapshot,
// catalog endpoints, OpenAPI + docs without a key, organization scoping.
import test from 'ava';
import dns from 'node:dns';
import os from 'node:os';
import { validateAgentConfig } from '../../core/agent-config/index.ts';
import { sql } from '../../core/db/pool.ts';
import { isBlockedAddress, policyFromConfig } from '../../core/net/ssrf.ts';
import { createApiKey } from '../../core/orgs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let key: string;
let orgId: string;
let otherKey: string;

type Body = Record<string, any>;
const base = (over: Body = {}): Body => ({ name: 'Agent', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' }, ...over });

test.before(async () => {
  s = await startTestServer({ temporal: false, env: { OPENAI_API_KEY: 'sk-test', DEEPGRAM_API_KEY: 'dg' } });
  const a = await s.createOrg({ ratePerMinute: 1_000_000 });
  key = a.apiKey;
  orgId = a.orgId;
  otherKey = (await s.createOrg({ ratePerMinute: 1_000_000 })).apiKey;
});
test.after.always(async () => {
  await s?.close();
});

async function create(body: Body = base(), k = key) {
  const r = await s.request('POST', '/agents', { key: k, body });
  if (r.status !== 201) throw new Error(`create failed ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}
const patch = (uuid: string, body: unknown, k = key) => s.request('PATCH', `/agents/${uuid}`, { key: k, body });
const storedSecret = async (uuid: string) => s.db.oneFirst(sql.unsafe`SELECT webhook_secret FROM agents WHERE uuid = ${uuid}`);

test('POST /agents → 201 envelope with resolved config; webhookSecret stored, never returned', async (t) => {
  const r = await s.request('POST', '/agents', { key, body: { ...base(), webhookSecret: 'shh-secret' } });
  t.is(r.status, 201);
  t.deepEqual(Object.keys(r.body).sort(), ['config', 'createdAt', 'status', 'updatedAt', 'uuid']);
  t.regex(r.body.uuid, /^[0-9a-f-]{36}$/);
  t.is(r.body.status, 'active');
  t.false(JSON.stringify(r.body).includes('shh-secret'));
  t.false('webhookSecret' in r.body.config);
  t.is(await storedSecret(r.body.uuid), 'shh-secret');
  const got = await s.request('GET', `/agents/${r.body.uuid}`, { key });
  t.deepEqual(got.body, r.body);
  const list = await s.request('GET', '/agents?per_page=100', { key });
  t.false(JSON.stringify(list.body).includes('shh-secret'));
});

test('webhookSecret must be a non-empty string', async (t) => {
  const r = await s.request('POST', '/agents', { key, body: { ...base(), webhookSecret: 5 } });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'invalid_agent_config');
  t.deepEqual(r.body.detail.details[0].loc, ['webhookSecret']);
});

test('non-object bodies → 400 invalid_agent_config', async (t) => {
  for (const body of [[1, 2], 'x', null]) {
    const r = await s.request('POST', '/agents', { key, raw: JSON.stringify(body) });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.detail.error, 'invalid_agent_config');
  }
  const malformed = await s.request('POST', '/agents', { key, raw: '{"name":' });
  t.is(malformed.status, 400);
});

test('GET /agents/{uuid}: 404 Agent not found for missing, malformed, archived and other-organization agents', async (t) => {
  const mine = await create();
  for (const [path, k] of [
    ['/agents/00000000-0000-4000-8000-000000000000', key],
    ['/agents/not-a-uuid', key],
    [`/agents/${mine.uuid}`, otherKey],
  ] as const) {
    const r = await s.request('GET', path, { key: k });
    t.is(r.status, 404, path);
    t.deepEqual(r.body, { detail: 'Agent not found' });
  }
  for (const [m, p] of [['PATCH', `/agents/${mine.uuid}`], ['DELETE', `/agents/${mine.uuid}`], ['POST', `/agents/${mine.uuid}/duplicate`]] as const) {
    const r = await s.request(m, p, { key: otherKey, body: m === 'PATCH' ? { name: 'x' } : undefined });
    t.is(r.status, 404, `${m} ${p}`);
    t.deepEqual(r.body, { detail: 'Agent not found' });
  }
  const del = await s.request('DELETE', `/agents/${mine.uuid}`, { key });
  t.is(del.status, 200);
  t.is(del.body.status, 'archived');
  const gone = await s.request('GET', `/agents/${mine.uuid}`, { key });
  t.is(gone.status, 404);
  t.deepEqual(gone.body, { detail: 'Agent not found' });
  t.is((await patch(mine.uuid, { name: 'y' })).status, 404);
  t.is((await s.request('DELETE', `/agents/${mine.uuid}`, { key })).status, 404);
});

test('no organization → 400 No organization selected', async (t) => {
  const { key: orgless } = await createApiKey(s.db, null, 'orgless');
  for (const [m, p] of [['GET', '/agents'], ['POST', '/agents'], ['GET', '/agents/models/available'], ['GET', '/user/configurations/providers'], ['POST', '/agents/preview-snapshot']] as const) {
    const r = await s.request(m, p, { key: orgless, body: m === 'POST' ? base() : undefined });
    t.is(r.status, 400, p);
    t.deepEqual(r.body, { detail: 'No organization selected' });
  }
});

test('GET /agents: paginated, newest first, archived hidden unless asked', async (t) => {
  const org = await s.createOrg({ ratePerMinute: 1_000_000 });
  const made: Body[] = [];
  for (let i = 0; i < 5; i++) made.push(await create(base({ name: `L${i}` }), org.apiKey));
  await s.request('DELETE', `/agents/${made[0]!.uuid}`, { key: org.apiKey });
  const page1 = await s.request('GET', '/agents?per_page=2', { key: org.apiKey });
  t.is(page1.status, 200);
  t.deepEqual({ ...page1.body, items: page1.body.items.map((a: Body) => a.config.name) }, { items: ['L4', 'L3'], total: 4, page: 1, perPage: 2, totalPages: 2 });
  const page2 = await s.request('GET', '/agents?per_page=2&page=2', { key: org.apiKey });
  t.deepEqual(page2.body.items.map((a: Body) => a.config.name), ['L2', 'L1']);
  const archived = await s.request('GET', '/agents?status=archived', { key: org.apiKey });
  t.deepEqual(archived.body.items.map((a: Body) => [a.config.name, a.status]), [['L0', 'archived']]);
  const all = await s.request('GET', '/agents?include_archived=true', { key: org.apiKey });
  t.is(all.body.total, 5);
  const byName = await s.request('GET', '/agents?name=l3', { key: org.apiKey });
  t.deepEqual(byName.body.items.map((a: Body) => a.config.name), ['L3']);
  const bad = await s.request('GET', '/agents?per_page=101', { key: org.apiKey });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['query', 'per_page']);
  const nul = await s.request('GET', '/agents?name=a%00b', { key: org.apiKey });
  t.is(nul.status, 422);
  const badStatus = await s.request('GET', '/agents?status=deleted', { key: org.apiKey });
  t.is(badStatus.status, 422);
  // another organization sees none of them
  const other = await s.request('GET', '/agents', { key: otherKey });
  t.false(other.body.items.some((a: Body) => made.some((m) => m.uuid === a.uuid)));
});

test('POST /agents/{uuid}/duplicate copies config under a new uuid', async (t) => {
  const src = await create(base({ name: 'Original', systemPrompt: 'Be nice', webhookSecret: 'dup-secret' }));
  const dup = await s.request('POST', `/agents/${src.uuid}/duplicate`, { key });
  t.is(dup.status, 201);
  t.not(dup.body.uuid, src.uuid);
  t.is(dup.body.config.name, 'Original (copy)');
  t.deepEqual({ ...dup.body.config, name: 'Original' }, src.config);
  t.is(await storedSecret(dup.body.uuid), 'dup-secret');
  const named = await s.request('POST', `/agents/${src.uuid}/duplicate`, { key, body: { name: 'Second' } });
  t.is(named.body.config.name, 'Second');
});

// ---------------------------------------------------------------- PATCH rules
test('PATCH rule 1: objects merge recursively; untouched nested keys preserved', async (t) => {
  const a = await create(base({ greeting: { firstMessages: ['Hi'], agentDelayS: 1 }, stt: { provider: 'deepgram', deepgram: { eotThreshold: 0.8, keyterms: 'Acme' } } }));
  const r = await patch(a.uuid, { greeting: { interruptible: true }, stt: { deepgram: { eotTimeoutMs: 5000 } }, llm: { temperature: 0.3 } });
  t.is(r.status, 200);
  t.deepEqual(r.body.config.greeting, { ...a.config.greeting, interruptible: true });
  t.deepEqual(r.body.config.stt.deepgram, { eotThreshold: 0.8, eotTimeoutMs: 5000, keyterms: 'Acme' });
  t.is(r.body.config.llm.model, 'gpt-4o-mini');
  t.is(r.body.config.llm.temperature, 0.3);
  t.deepEqual((await s.request('GET', `/agents/${a.uuid}`, { key })).body, r.body);
  t.true(r.body.updatedAt >= a.updatedAt);
  t.is(r.body.createdAt, a.createdAt);
});

test('PATCH rule 2: lists, scalars and null replace wholesale', async (t) => {
  const a = await create(base({ languages: ['en', 'hi'], userIdleMessages: ['one', 'two'], greeting: { firstMessages: ['a', 'b'] }, webhook: { url: 'https://h.example.com/x', headers: { 'X-A': '1' } } }));
  const r = await patch(a.uuid, { languages: ['hi'], userIdleMessages: ['three'], greeting: { firstMessages: ['c'] }, webhook: null, maxCallDurationS: 300 });
  t.is(r.status, 200);
  t.deepEqual(r.body.config.languages, ['hi']);
  t.deepEqual(r.body.config.userIdleMessages, ['three']);
  t.deepEqual(r.body.config.greeting.firstMessages, ['c']);
  t.is(r.body.config.webhook, null);
  t.is(r.body.config.maxCallDurationS, 300);
  // tools list replaced (and end_call re-seeded)
  const t1 = await patch(a.uuid, { tools: [{ type: 'testTool', name: 'sim', config: {} }] });
  t.deepEqual(t1.body.config.tools.map((x: Body) => x.name), ['sim', 'end_call']);
  const t2 = await patch(a.uuid, { tools: [{ type: 'testTool', name: 'other', config: { outcome: 'failure' } }] });
  t.deepEqual(t2.body.config.tools.map((x: Body) => x.name), ['other', 'end_call']);
  // a string webhook replaces an object; an object patch merges into the stored object
  const w1 = await patch(a.uuid, { webhook: { url: 'https://h.example.com/1', headers: { 'X-K': 'v' } } });
  const w2 = await patch(a.uuid, { webhook: { url: 'https://h.example.com/2' } });
  t.deepEqual(w2.body.config.webhook, { url: 'https://h.example.com/2', headers: { 'X-K': 'v' } });
  t.is(w1.status, 200);
  const w3 = await patch(a.uuid, { webhook: 'https://h.example.com/3' });
  t.deepEqual(w3.body.config.webhook, { url: 'https://h.example.com/3', headers: {} });
});

test('PATCH rule 3: contextVariables replaced wholesale', async (t) => {
  const a = await create(base({ contextVariables: { a: '1', b: '2' } }));
  const r = await patch(a.uuid, { contextVariables: { c: '3' } });
  t.deepEqual(r.body.config.contextVariables, { c: '3' });
  const cleared = await patch(a.uuid, { contextVariables: {} });
  t.deepEqual(cleared.body.config.contextVariables, {});
});

test('PATCH rule 4: merged result re-validated; failure → 400 and nothing persisted', async (t) => {
  const a = await create(base({ stt: { provider: 'cartesia' } }));
  const cases: Array<[Body, (string | number)[]]> = [
    [{ maxCallDurationS: 615 }, ['maxCallDurationS']],
    [{ stt: { cartesia: { turnEndThreshold: 0.45 } } }, ['stt', 'cartesia', 'turnEndThreshold']],
    [{ llm: { provider: 'anthropic' } }, ['llm', 'model']], // gpt-4o-mini is not an anthropic model
    [{ languages: ['en', 'hi'] }, ['languages']], // ink-2 is English only
    [{ greeting: null }, ['greeting']],
    [{ nope: 1 }, ['nope']],
    [{ tools: [{ type: 'function', name: 'x', config: { server: { url: 'http://10.0.0.1/' } } }] }, ['tools', 0, 'config', 'server', 'url']],
  ];
  for (const [body, loc] of cases) {
    const r = await patch(a.uuid, { ...body, name: 'should-not-stick', webhookSecret: 'nope' });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.detail.error, 'invalid_agent_config');
    t.true(r.body.detail.details.some((d: Body) => JSON.stringify(d.loc) === JSON.stringify(loc)), `${JSON.stringify(loc)} in ${JSON.stringify(r.body.detail.details)}`);
  }
  const got = await s.request('GET', `/agents/${a.uuid}`, { key });
  t.deepEqual(got.body, a);
  t.is(await storedSecret(a.uuid), null);
});

test('PATCH rule 5: webhookSecret popped, written directly, never returned; null clears', async (t) => {
  const a = await create();
  const r = await patch(a.uuid, { webhookSecret: 'new-secret' });
  t.is(r.status, 200);
  t.false(JSON.stringify(r.body).includes('new-secret'));
  t.deepEqual(r.body.config, a.config);
  t.is(await storedSecret(a.uuid), 'new-secret');
  await patch(a.uuid, { systemPrompt: 'x' });
  t.is(await storedSecret(a.uuid), 'new-secret');
  await patch(a.uuid, { webhookSecret: null });
  t.is(await storedSecret(a.uuid), null);
});

test('PATCH rule 7: no organization → 400; missing → 404', async (t) => {
  const { key: orgless } = await createApiKey(s.db, null, 'orgless-2');
  const a = await create();
  const r = await patch(a.uuid, { name: 'x' }, orgless);
  t.is(r.status, 400);
  t.deepEqual(r.body, { detail: 'No organization selected' });
  const m = await patch('00000000-0000-4000-8000-000000000000', { name: 'x' });
  t.deepEqual([m.status, m.body], [404, { detail: 'Agent not found' }]);
});

test('PATCH rule 6: 50 concurrent PATCHes on different nested fields all survive', async (t) => {
  const a = await create(base({ stt: { provider: 'soniox' } }));
  const bodies: Body[] = [
    { greeting: { interruptible: true } },
    { greeting: { speakFirst: 'user' } },
    { greeting: { agentDelayS: 2.5 } },
    { greeting: { userTimeoutS: 4 } },
    { greeting: { firstMessages: ['Hello there'] } },
    { llm: { temperature: 0.25 } },
    { llm: { maxTokens: 999 } },
    { llm: { prewarm: false } },
    { stt: { interruptionMinWords: 3 } },
    { stt: { soniox: { endpointSensitivity: -0.5 } } },
    { stt: { soniox: { endpointLatencyAdjustmentLevel: 0 } } },
    { stt: { soniox: { maxEndpointDelayMs: 2500 } } },
    { stt: { soniox: { contextTerms: 'Acme' } } },
    { stt: { deepgram: { eotThreshold: 0.55 } } },
    { stt: { deepgram: { eotTimeoutMs: 900 } } },
    { stt: { cartesia: { turnEndTimeoutMs: 700 } } },
    { stt: { assemblyai: { mode: 'min_latency' } } },
    { stt: { sarvam: { highVadSensitivity: true } } },
    { tts: { voice: 'voice-123' } },
    { tts: { elevenlabs: { stability: 0.11 } } },
    { tts: { elevenlabs: { similarityBoost: 0.22 } } },
    { tts: { elevenlabs: { style: 0.33 } } },
    { tts: { elevenlabs: { speed: 1.1 } } },
    { tts: { elevenlabs: { useSpeakerBoost: false } } },
    { tts: { elevenlabs: { autoMode: false } } },
    { tts: { elevenlabs: { applyTextNormalization: 'on' } } },
    { tts: { cartesia: { speed: 0.9 } } },
    { tts: { openai: { speed: 1.7 } } },
    { tts: { sarvam: { pace: 1.3 } } },
    { tts: { xai: { optimizeStreamingLatency: 2 } } },
    { tts: { inworld: { speakingRate: 0.6 } } },
    { noiseGate: { enabled: false } },
    { noiseGate: { model: 'noise-suppression' } },
    { noiseGate: { enhancementLevel: 0.1 } },
    { backgroundSound: { enabled: true } },
    { backgroundSound: { volume: 0.5 } },
    { backgroundSound: { sound: 'cafe' } },
    { taskSound: { enabled: true } },
    { taskSound: { startAfterMs: 1200 } },
    { acknowledgeSounds: { enabled: true } },
    { acknowledgeSounds: { probability: 0.5 } },
    { fillerWords: { enabled: true } },
    { fillerWords: { thresholdMs: 700 } },
    { maxCallDurationS: 1200 },
    { userIdleTimeoutS: 12 },
    { userIdleMaxRetries: 4 },
    { systemPrompt: 'concurrent prompt' },
    { description: 'concurrent description' },
    { voicemailDetection: false },
    { enableSummarization: true },
  ];
  t.is(bodies.length, 50);
  const results = await Promise.all(bodies.map((b) => patch(a.uuid, b)));
  t.deepEqual(results.map((r) => r.status), bodies.map(() => 200), JSON.stringify(results.find((r) => r.status !== 200)?.body));
  const final = (await s.request('GET', `/agents/${a.uuid}`, { key })).body.config;
  // every patched leaf carries its value
  const leaves = (o: Body, prefix: string[] = []): Array<[string[], unknown]> =>
    Object.entries(o).flatMap(([k, v]) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? leaves(v, [...prefix, k]) : [[[...prefix, k], v] as [string[], unknown]]));
  for (const b of bodies) {
    for (const [path, value] of leaves(b)) {
      const actual = path.reduce<any>((o, k) => o?.[k], final);
      t.deepEqual(actual, value, path.join('.'));
    }
  }
});

// ---------------------------------------------------------------- preview-snapshot
test('preview-snapshot: exactly one of agentId / agent', async (t) => {
  const a = await create();
  for (const body of [{}, { agentId: a.uuid, agent: base() }, { agentId: null, agent: null }]) {
    const r = await s.request('POST', '/agents/preview-snapshot', { key, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.deepEqual(r.body, { detail: "Must provide either 'agentId' or 'agent'." });
  }
  const missing = await s.request('POST', '/agents/preview-snapshot', { key, body: { agentId: '00000000-0000-4000-8000-000000000000' } });
  t.deepEqual([missing.status, missing.body], [404, { detail: 'Agent not found' }]);
  const foreign = await s.request('POST', '/agents/preview-snapshot', { key: otherKey, body: { agentId: a.uuid } });
  t.is(foreign.status, 404);
});

test('preview-snapshot: validation errors use the POST /call shape; off-catalog model → 422 string', async (t) => {
  const r = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent: base({ stt: { provider: 'deepgram', deepgram: { eotThreshold: 2 } } }) } });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'Agent configuration validation failed');
  t.deepEqual(r.body.detail.details, [{ path: 'agent.stt.deepgram.eotThreshold', message: 'Input should be less than or equal to 0.9', type: 'less_than_equal' }]);
  const badId = await s.request('POST', '/agents/preview-snapshot', { key, body: { agentId: 5 } });
  t.is(badId.status, 400);
  t.deepEqual(badId.body.detail.details.map((d: Body) => [d.path, d.type]), [['agentId', 'string_type']]);
  const extra = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent: base(), extra: 1 } });
  t.is(extra.status, 400);
  t.deepEqual(extra.body.detail.details.map((d: Body) => d.path), ['extra']);
  const model = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent: base({ llm: { provider: 'groq', model: 'mixtral-9000' } }) } });
  t.is(model.status, 422);
  t.is(typeof model.body.detail, 'string');
  t.regex(model.body.detail, /mixtral-9000.*groq/);
});

test('preview-snapshot: precedence saved < call-time non-blank < built-ins; time in the config timezone; numbers literal', async (t) => {
  const a = await create(base({
    timezone: 'America/New_York',
    contextVariables: { name: 'Saved', city: 'Paris', empty: 'kept' },
    systemPrompt: 'Hi {{name}} from {{city}} ({{empty}}), {{ current_date }} {{current_time}}, caller {{user_number}} agent {{agent_number}} {{unknown}}',
    greeting: { firstMessages: ['Hello {{name}}'] },
    userIdleMessages: ['{{name}}, still there?'],
    tools: [{ type: 'function', name: 'crm', config: { server: { url: 'https://crm.example.com/{{city}}/{id}', headers: { 'X-Name': '{{name}}' } }, messages: ['Looking up {{name}}'] } }],
  }));
  const before = new Date();
  const r = await s.request('POST', '/agents/preview-snapshot', { key, body: { agentId: a.uuid, contextVariables: { name: 'Call', city: '  ', current_time: 'hacked', user_number: '+1555' } } });
  const after = new Date();
  t.is(r.status, 200);
  const snap = r.body.snapshot;
  const fmt = (d: Date, o: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York', ...o }).format(d);
  const dates = new Set([fmt(before, { year: 'numeric', month: '2-digit', day: '2-digit' }), fmt(after, { year: 'numeric', month: '2-digit', day: '2-digit' })]);
  const m = /^Hi Call from Paris \(kept\), (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}), caller \{\{user_number\}\} agent \{\{agent_number\}\} \{\{unknown\}\}$/.exec(snap.systemPrompt);
  t.truthy(m, snap.systemPrompt);
  t.true(dates.has(m![1]!), `${m![1]} vs ${[...dates]}`);
  const times = new Set([before, after].map((d) => fmt(d, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })));
  t.true(times.has(m![2]!), `${m![2]} vs ${[...times]}`);
  t.deepEqual(snap.greeting.firstMessages, ['Hello Call']);
  t.deepEqual(snap.userIdleMessages, ['Call, still there?']);
  t.is(snap.tools[0].config.server.url, 'https://crm.example.com/Paris/{id}');
  t.deepEqual(snap.tools[0].config.server.headers, { 'X-Name': 'Call' });
  t.deepEqual(snap.tools[0].config.messages, ['Looking up Call']);
  t.deepEqual(snap.contextVariables, { name: 'Call', city: 'Paris', empty: 'kept' });
  // fully materialised: same keys as the stored config
  t.deepEqual(Object.keys(snap).sort(), Object.keys(a.config).sort());
});

test('preview-snapshot with an inline agent materialises defaults and seeds end_call', async (t) => {
  const r = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent: { name: 'Inline', llm: { provider: 'local', model: null }, stt: { provider: 'local' }, tts: { provider: 'local' }, systemPrompt: 'Hello {{who}}', contextVariables: { who: 'world' } } } });
  t.is(r.status, 200);
  t.is(r.body.snapshot.systemPrompt, 'Hello world');
  t.is(r.body.snapshot.llm.model, 'local-demo');
  t.is(r.body.snapshot.tools.at(-1).name, 'end_call');
  t.is(r.body.snapshot.maxCallDurationS, 610);
  const count = await s.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE name = 'Inline'`);
  t.is(count, 0);
});

// ---------------------------------------------------------------- catalog and docs
test('GET /agents/models/available serves the catalog', async (t) => {
  const r = await s.request('GET', '/agents/models/available', { key });
  t.is(r.status, 200);
  t.is(r.body.languages.length, 22);
  t.deepEqual(r.body.llm.map((p: Body) => p.provider), ['openai', 'google', 'groq', 'anthropic', 'local']);
  t.deepEqual(r.body.stt.map((p: Body) => p.provider), ['soniox', 'deepgram', 'assemblyai', 'sarvam', 'cartesia', 'local']);
  t.deepEqual(r.body.tts.map((p: Body) => p.provider), ['elevenlabs', 'cartesia', 'openai', 'sarvam', 'xai', 'inworld', 'local']);
  const xai = r.body.tts.find((p: Body) => p.provider === 'xai');
  t.deepEqual(xai.voices, ['ara', 'eve', 'leo', 'rex', 'sal']);
  t.false(xai.hasModelSelector);
  const anthropic = r.body.llm.find((p: Body) => p.provider === 'anthropic');
  t.deepEqual(anthropic.temperatureRange, [0, 1]);
  const flux = r.body.stt.find((p: Body) => p.provider === 'deepgram').models.find((m: Body) => m.id === 'flux-general-multi');
  t.deepEqual(flux.languages, ['en', 'hi', 'es', 'fr', 'ja', 'de', 'pt', 'ru']);
  const local = r.body.llm.find((p: Body) => p.provider === 'local');
  t.deepEqual(local.models.map((m: Body) => m.id), ['local-demo', 'qwen2.5-coder-0.5b-instruct']);
  // every default model is in its own list, and every listed model validates
  for (const fam of ['llm', 'stt', 'tts'] as const) for (const p of r.body[fam]) t.true(p.models.some((m: Body) => m.id === p.defaultModel), `${fam}/${p.provider}`);
});

test('GET /user/configurations/providers: credentials configured from env; local always', async (t) => {
  const r = await s.request('GET', '/user/configurations/providers', { key });
  t.is(r.status, 200);
  const get = (family: string, provider: string) => r.body.providers.find((p: Body) => p.family === family && p.provider === provider);
  t.true(get('llm', 'openai').credentialsConfigured);
  t.true(get('tts', 'openai').credentialsConfigured);
  t.true(get('stt', 'deepgram').credentialsConfigured);
  t.false(get('llm', 'anthropic').credentialsConfigured);
  t.false(get('tts', 'elevenlabs').credentialsConfigured);
  for (const fam of ['llm', 'stt', 'tts']) t.true(get(fam, 'local').credentialsConfigured);
  t.is(r.body.providers.length, 5 + 6 + 7);
  t.false(JSON.stringify(r.body).includes('sk-test'));
});

test('OpenAPI 3.1 document and docs page are served without a key', async (t) => {
  const r = await s.request('GET', '/openapi.json', { key: null });
  t.is(r.status, 200);
  t.is(r.body.openapi, '3.1.0');
  t.truthy(r.body.paths['/agents'].post);
  t.truthy(r.body.paths['/tools/{tool_uuid}'].put);
  const cfg = r.body.components.schemas.AgentConfig;
  t.deepEqual([...cfg.required].sort(), ['llm', 'name', 'stt', 'tts']);
  t.is(cfg.additionalProperties, false);
  t.is(cfg.properties.maxCallDurationS.multipleOf, 10);
  t.is(cfg.properties.maxCallDurationS.default, 610);
  t.is(cfg.properties.stt.properties.deepgram.properties.eotThreshold.maximum, 0.9);
  t.deepEqual(cfg.properties.backgroundSound.properties.sound.enum, ['library', 'office', 'cafe', 'restaurant', 'quiet-room']);
  t.is(cfg.properties.voicemailMessage.default, null);
  t.is(JSON.stringify(cfg.properties.voicemailMessage).includes('"maxLength":1000'), true);
  const dtmf = JSON.stringify(r.body.components.schemas.InlineTool);
  t.regex(dtmf, /"const":"sendDtmf"/);
  t.regex(dtmf, /"default":"send_dtmf"/);
  const docs = await fetch(`${s.baseUrl}/docs`);
  t.is(docs.status, 200);
  t.regex(docs.headers.get('content-type') ?? '', /text\/html/);
  const html = await docs.text();
  t.regex(html, /openapi\.json/);
  t.notRegex(html, /<script[^>]+src=/);
  // the rest of the API still needs a key
  t.is((await s.request('GET', '/agents', { key: null })).status, 401);
});

test('the stored config in the database is the resolved config', async (t) => {
  const a = await create();
  const row = await s.db.one(sql.unsafe`SELECT name, config, organization_id::text AS org FROM agents WHERE uuid = ${a.uuid}`) as Body;
  t.deepEqual(row.config, a.config);
  t.is(row.name, 'Agent');
  t.is(row.org, orgId);
});

test('a webhook on a private host is refused at save (400 naming OUTBOUND_ALLOW_HOSTS), unless the setting lists it; a stored one is not judged again', async (t) => {
  const r = await s.request('POST', '/agents', { key, body: base({ webhook: 'http://10.20.30.40:8080/events' }) });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'invalid_agent_config');
  t.is(r.body.detail.details.length, 1);
  t.deepEqual(r.body.detail.details[0].loc, ['webhook', 'url']);
  t.is(r.body.detail.details[0].type, 'value_error');
  t.regex(r.body.detail.details[0].msg, /^webhook\.url is not allowed: address 10\.20\.30\.40 is not a public address: the host is private .* list it in OUTBOUND_ALLOW_HOSTS to allow it$/);
  // a host name resolving to a private address is refused too (this machine's own name resolves locally here)
  const name = os.hostname();
  const addrs = await dns.promises.lookup(name, { all: true }).catch(() => []);
  if (addrs.length > 0 && addrs.every((a) => isBlockedAddress(a.address))) {
    const byName = await s.request('POST', '/agents', { key, body: base({ webhook: `http://${name}:8080/events` }) });
    t.is(byName.status, 400);
    t.regex(byName.body.detail.details[0].msg, /resolves to .* OUTBOUND_ALLOW_HOSTS/);
  }
  // POST /call with an inline agent: the same refusal in the call's error shape
  const call = await s.request('POST', '/call', { key, body: { transport: 'websocket', agent: base({ webhook: { url: 'http://192.168.0.10/hook', headers: {} } }) } });
  t.is(call.status, 400);
  t.is(call.body.detail.error, 'Agent configuration validation failed');
  t.like(call.body.detail.details[0], { path: 'agent.webhook.url', type: 'value_error' });
  t.regex(call.body.detail.details[0].message, /OUTBOUND_ALLOW_HOSTS/);
  // PATCH to a private host: refused, nothing changed
  const a = await create(base({ webhook: 'https://hooks.example.com/x' }));
  const p = await patch(a.uuid, { webhook: 'http://127.0.0.1:9/x' });
  t.is(p.status, 400);
  t.deepEqual(p.body.detail.details[0].loc, ['webhook', 'url']);
  t.is((await s.request('GET', `/agents/${a.uuid}`, { key })).body.config.webhook.url, 'https://hooks.example.com/x');
  // a webhook stored before this check is kept by a PATCH of another field (the send-time guard still applies)
  await s.db.query(sql.unsafe`UPDATE agents SET config = jsonb_set(config, '{webhook}', '{"url": "http://10.1.1.1/old", "headers": {}}') WHERE uuid = ${a.uuid}`);
  const other = await patch(a.uuid, { description: 'still works' });
  t.is(other.status, 200, JSON.stringify(other.body));
  t.is(other.body.config.webhook.url, 'http://10.1.1.1/old');
  // OUTBOUND_ALLOW_HOSTS listing the host (or its network) lets it through
  for (const allow of ['10.20.30.40', '10.0.0.0/8']) {
    const v = await validateAgentConfig(base({ webhook: 'http://10.20.30.40:8080/events' }), { db: s.db, orgId, policy: policyFromConfig({ OUTBOUND_ALLOW_HOSTS: allow, OUTBOUND_BLOCK_HOSTS: '' }) });
    t.true(v.ok, allow);
  }
});
