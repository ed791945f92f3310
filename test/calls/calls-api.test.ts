// POST /call (WebSocket, WebRTC, telephony body rules), GET /calls/{callId} and POST /agents/{uuid}/test-call
// through HTTP: every validation branch with its exact status and body, the gates, rejected rows.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { validateAgentConfig } from '../../core/agent-config/index.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rowById, rowsOf } from './helpers.ts';

let s: TestServer;
test.before(async () => {
  // Calls are admitted only on providers this install can run (core/providers.ts): the LLM needs its key.
  s = await startTestServer({ temporal: false, env: { OPENAI_API_KEY: 'sk-calls-api-test' } });
});
test.after.always(async () => {
  await s?.close();
});

const inline = (extra: Record<string, unknown> = {}) => ({
  name: 'Inline Helper',
  llm: { provider: 'openai', model: 'gpt-4.1-mini' },
  stt: { provider: 'local' },
  tts: { provider: 'local' },
  ...extra,
});

/** A saved agent, stored the way agent creation stores it (the fully resolved config). */
async function saveAgent(orgId: string, input: Record<string, unknown>, secret: string | null = null) {
  const v = await validateAgentConfig(input, { db: s.db, orgId, policy: policyFromConfig(s.config) });
  if (!v.ok) throw new Error(JSON.stringify(v));
  return s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config, webhook_secret)
    VALUES (${orgId}, ${v.config.name}, ${sql.jsonb(v.config as never)}, ${secret}) RETURNING id, uuid::text AS uuid`);
}

async function onlyRejected(orgId: string) {
  const rows = await rowsOf(s.db, orgId);
  t_assertSingle(rows.length);
  return rows[0]!;
}
function t_assertSingle(n: number) {
  if (n !== 1) throw new Error(`expected exactly one call row, found ${n}`);
}

test('WebSocket call with an inline agent: pending row with the frozen resolved snapshot', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', {
    key: apiKey,
    body: { agent: inline({ systemPrompt: 'Hi {{customer}}, today is {{current_date}}. {{unknown}}', contextVariables: { customer: 'Default' } }), contextVariables: { customer: 'Asha' } },
  });
  t.is(r.status, 200);
  t.deepEqual(Object.keys(r.body).sort(), ['audioUrl', 'callId', 'status', 'transport']);
  t.like(r.body, { transport: 'websocket', status: 'pending' });
  t.is(r.body.audioUrl, `ws://127.0.0.1:${new URL(s.origin).port}/api/v1/ws/audio/${r.body.callId}`);
  const row = await rowById(s.db, r.body.callId);
  t.like(row, { organization_id: orgId, status: 'pending', transport: 'websocket', call_source: 'websocket', connection_status: null, ended_reason: null, agent_uuid: null, agent_name: 'Inline Helper' });
  t.deepEqual(row.tags, ['api', 'webcall']);
  t.regex(row.config_snapshot.systemPrompt, /^Hi Asha, today is \d{4}-\d{2}-\d{2}\. \{\{unknown\}\}$/);
  t.true(row.config_snapshot.tools.some((x: { type?: string }) => x.type === 'endCall'), 'end_call seeded');
  t.is(row.config_snapshot.llm.maxTokens, 251, 'defaults materialised');
  t.deepEqual(row.context_variables, { customer: 'Asha' });
});

test('WebRTC call: 201 with offerUrl, stored with transport webrtc and call source webrtc (like test calls)', async (t) => {
  const { apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { transport: 'webrtc', agent: inline() } });
  t.is(r.status, 201);
  t.deepEqual(r.body, { callId: r.body.callId, offerUrl: `${s.baseUrl}/webrtc/offer/${r.body.callId}`, transport: 'webrtc', status: 'pending' });
  const row = await rowById(s.db, r.body.callId);
  t.like(row, { transport: 'webrtc', call_source: 'webrtc', status: 'pending' });
  const list = await s.request('GET', '/calls?transport=web', { key: apiKey });
  t.deepEqual(list.body.items.map((i: { callId: string }) => i.callId), [r.body.callId]);
});

test('saved agent: context variables saved < call-time non-blank < built-ins; agent captured on the row', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const agent = await saveAgent(orgId, inline({
    name: 'Saved Sam',
    systemPrompt: '{{a}}|{{b}}|{{current_date}}',
    contextVariables: { a: 'saved-a', b: 'saved-b' },
  }));
  const r = await s.request('POST', '/call', { key: apiKey, body: { agentId: agent.uuid, contextVariables: { a: '   ', b: 'call-b', current_date: 'forged' } } });
  t.is(r.status, 200);
  const row = await rowById(s.db, r.body.callId);
  const [a, b, date] = (row.config_snapshot.systemPrompt as string).split('|');
  t.is(a, 'saved-a', 'blank call-time value does not override');
  t.is(b, 'call-b');
  t.regex(date!, /^\d{4}-\d{2}-\d{2}$/, 'built-ins cannot be overridden');
  t.like(row, { agent_uuid: agent.uuid, agent_name: 'Saved Sam' });
  const detail = await s.request('GET', `/calls/${r.body.callId}`, { key: apiKey });
  t.like(detail.body, { agentId: agent.uuid, agentName: 'Saved Sam', status: 'pending', transport: 'websocket' });
});

test("neither agentId nor agent → 400 string; rejected row schema_validation", async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  for (const body of [{}, { agentId: null, agent: null, contextVariables: { x: 'y' } }]) {
    const r = await s.request('POST', '/call', { key: apiKey, body });
    t.is(r.status, 400);
    t.deepEqual(r.body, { detail: "Must provide either 'agentId' or 'agent'." });
  }
  const rows = await rowsOf(s.db, orgId);
  t.is(rows.length, 2, 'validation rejections are not throttled');
  t.like(rows[0], { status: 'error', connection_status: 'schema_validation', ended_reason: null, transport: 'websocket', call_source: 'websocket' });
  t.deepEqual(rows[0]!.tags, ['api', 'webcall', 'rejected']);
  t.is(rows[0]!.logs.validation_error, "Must provide either 'agentId' or 'agent'.");
});

test('both agentId and agent → 400 validation object', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { agentId: '6f1c2a57-4f5e-4c43-9a55-0d6f0b0c1a11', agent: inline() } });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'Agent configuration validation failed');
  t.deepEqual(r.body.detail.details, [{ path: '', message: "Provide exactly one of 'agentId' or 'agent', not both", type: 'value_error' }]);
  const row = await onlyRejected(orgId);
  t.like(row, { connection_status: 'schema_validation', agent_name: 'Inline Helper' });
  t.deepEqual(row.logs.validation_error, r.body.detail);
});

test('schema failures: 400 object with dot-joined paths, envelope and inline agent together', async (t) => {
  const { apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', {
    key: apiKey,
    body: { agent: { name: 'X', llm: { provider: 'openai', model: 'gpt-4.1-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' }, maxCallDurationS: 15, bogus: 1 }, transport: 'carrier-pigeon', extra: true },
  });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'Agent configuration validation failed');
  const byPath = Object.fromEntries(r.body.detail.details.map((d: { path: string; type: string }) => [d.path, d.type]));
  t.is(byPath.transport, 'literal_error');
  t.is(byPath.extra, 'extra_forbidden');
  t.is(byPath['agent.bogus'], 'extra_forbidden');
  t.is(byPath['agent.maxCallDurationS'], 'multiple_of');
  for (const d of r.body.detail.details) t.deepEqual(Object.keys(d).sort(), ['message', 'path', 'type']);

  const missing = await s.request('POST', '/call', { key: apiKey, body: { agent: { name: 'X' } } });
  t.is(missing.status, 400);
  t.true(missing.body.detail.details.some((d: { path: string; type: string }) => d.path === 'agent.llm' && d.type === 'missing'));

  const notObject = await s.request('POST', '/call', { key: apiKey, raw: '[1,2]' });
  t.is(notObject.status, 400);
  t.deepEqual(notObject.body.detail.details, [{ path: '', message: 'Input should be a valid dictionary or object', type: 'dict_type' }]);

  const badVars = await s.request('POST', '/call', { key: apiKey, body: { agent: inline(), contextVariables: { n: 5 } } });
  t.is(badVars.status, 400);
  t.deepEqual(badVars.body.detail.details, [{ path: 'contextVariables.n', message: 'Input should be a valid string', type: 'string_type' }]);

  const badId = await s.request('POST', '/call', { key: apiKey, body: { agentId: 'not-a-uuid' } });
  t.is(badId.status, 400);
  t.is(badId.body.detail.details[0].path, 'agentId');
});

test('values jsonb cannot store are a 400, not a 500, and still leave a rejected row', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { agent: inline(), contextVariables: { v: 'nul\u0000byte' } } });
  t.is(r.status, 400);
  t.is(r.body.detail.details[0].path, 'contextVariables.v');
  const row = await onlyRejected(orgId);
  t.is(row.connection_status, 'schema_validation');
  t.is(row.config_snapshot.contextVariables.v, 'nul\uFFFDbyte');
});

test('off-catalog model on an inline agent → 422 string naming model and provider; row model_validation', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { agent: inline({ llm: { provider: 'openai', model: 'gpt-9-ultra' } }) } });
  t.is(r.status, 422);
  t.is(typeof r.body.detail, 'string');
  t.true(r.body.detail.includes('gpt-9-ultra'));
  t.true(r.body.detail.includes('openai'));
  t.like(await onlyRejected(orgId), { connection_status: 'model_validation', status: 'error', agent_name: 'Inline Helper' });
});

test("agentId not in this organization → 400 'agent_not_found'; row agent_not_found", async (t) => {
  const a = await s.createOrg();
  const b = await s.createOrg();
  const agent = await saveAgent(a.orgId, inline());
  for (const id of [agent.uuid, '0e5bbd43-3c67-4c9b-a1a4-8e2f1f4f6f00']) {
    const r = await s.request('POST', '/call', { key: b.apiKey, body: { agentId: id } });
    t.is(r.status, 400);
    t.deepEqual(r.body, { detail: 'agent_not_found' });
  }
  await s.db.query(sql.unsafe`UPDATE agents SET status = 'archived' WHERE uuid = ${agent.uuid}`);
  const archived = await s.request('POST', '/call', { key: a.apiKey, body: { agentId: agent.uuid } });
  t.deepEqual(archived.body, { detail: 'agent_not_found' });
  const rows = await rowsOf(s.db, b.orgId);
  t.is(rows.length, 2);
  t.true(rows.every((r) => r.connection_status === 'agent_not_found' && r.agent_uuid === null));
});

test('snapshot validation: a call-time value that makes a tool URL target a private host → snapshot_validation', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const agent = await saveAgent(orgId, inline({
    tools: [{ type: 'function', name: 'lookup', config: { server: { url: 'https://{{host}}/lookup' } } }],
    contextVariables: { host: 'api.example.com' },
  }));
  const r = await s.request('POST', '/call', { key: apiKey, body: { agentId: agent.uuid, contextVariables: { host: '127.0.0.1' } } });
  t.is(r.status, 400);
  t.is(r.body.detail.error, 'Agent configuration validation failed');
  t.is(r.body.detail.details[0].path, 'tools.0.config.server.url');
  t.like(await onlyRejected(orgId), { connection_status: 'snapshot_validation', agent_uuid: agent.uuid });
});

test('telephony body rules: toNumber, unknown provider, streaming carrier auth; inline auth checked per carrier', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const cc = { provider: 'twilio', phoneNumber: '+14155550100', auth: { accountSid: 'AC1', authToken: 'secret-token' } };
  const cases: Array<[unknown, number, unknown]> = [
    [{ type: 'outbound', callConfig: cc, agent: inline() }, 400, "'toNumber' is required when type='outbound'"],
    [{ type: 'inbound', callConfig: cc, toNumber: '+14155550101', agent: inline() }, 400, "'toNumber' is not allowed when type='inbound'"],
    [{ type: 'outbound', callConfig: { ...cc, provider: 'carrier-x' }, toNumber: '+14155550101', agent: inline() }, 400, 'unknown_provider: carrier-x'],
  ];
  for (const [body, status, detail] of cases) {
    const r = await s.request('POST', '/call', { key: apiKey, body });
    t.is(r.status, status);
    t.deepEqual(r.body, { detail });
  }
  const streaming = await s.request('POST', '/call', { key: apiKey, body: { type: 'outbound', toNumber: '+14155550101', callConfig: { ...cc, provider: 'smartflo' }, agent: inline() } });
  t.is(streaming.status, 400);
  t.deepEqual(streaming.body.detail.details, [{ path: 'callConfig.smartflo.auth', message: 'Extra inputs are not permitted', type: 'extra_forbidden' }]);

  // Every carrier of the set has an adapter now (test/telephony): inline auth is checked against that carrier's own
  // shape — Twilio-shaped credentials sent for plivo are a schema failure naming the fields, and are scrubbed.
  const plivo = { ...cc, provider: 'plivo' };
  const outbound = await s.request('POST', '/call', { key: apiKey, body: { type: 'outbound', toNumber: '+14155550101', callConfig: plivo, agent: inline() } });
  t.is(outbound.status, 400);
  t.is(outbound.body.detail.error, 'Agent configuration validation failed');
  t.true(outbound.body.detail.details.length > 0);
  t.true(outbound.body.detail.details.every((d: { path: string }) => d.path.startsWith('callConfig.auth')), JSON.stringify(outbound.body.detail.details));
  const inbound = await s.request('POST', '/call', { key: apiKey, body: { type: 'inbound', callConfig: plivo, agent: inline() } });
  t.is(inbound.status, 400);
  t.is(inbound.body.detail.error, 'Agent configuration validation failed');

  const rows = await rowsOf(s.db, orgId);
  t.is(rows.length, 6);
  const out = rows.filter((r) => r.connection_status === 'schema_validation' && r.transport === 'outbound').at(-1)!;
  t.like(out, { call_source: 'api_outbound', status: 'error' });
  t.deepEqual(out.tags, ['api', 'outbound', 'rejected']);
  t.is(out.config_snapshot.callConfig.auth, undefined, 'inline carrier credentials are scrubbed');
  t.is(out.config_snapshot.callConfig.phoneNumber, '+14155550100');
  t.false(JSON.stringify(rows.map((r) => r.config_snapshot)).includes('secret-token'));
  t.true(rows.some((r) => r.transport === 'inbound' && r.call_source === 'api_inbound'));
});

test('web calls refuse toNumber and callConfig', async (t) => {
  const { apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { agent: inline(), toNumber: '+14155550100', callConfig: { provider: 'twilio' } } });
  t.is(r.status, 400);
  t.deepEqual(r.body.detail.details.map((d: { path: string }) => d.path).sort(), ['callConfig', 'toNumber']);
});

test('gates over HTTP: wallet 402 object, quota 402 string, both persisted as rejected rows', async (t) => {
  const poor = await s.createOrg({ balanceUsd: 0.1 });
  const r = await s.request('POST', '/call', { key: poor.apiKey, body: { agent: inline() } });
  t.is(r.status, 402);
  t.deepEqual(r.body.detail, {
    error_code: 'insufficient_balance',
    error_message: r.body.detail.error_message,
    balance_usd: '0.10',
    threshold_usd: '0.50',
  });
  t.is(typeof r.body.detail.error_message, 'string');
  t.like(await onlyRejected(poor.orgId), { connection_status: 'insufficient_balance', agent_name: 'Inline Helper' });

  const capped = await s.createOrg({ monthlyMinutes: 0 });
  const q = await s.request('POST', '/call', { key: capped.apiKey, body: { transport: 'webrtc', agent: inline() } });
  t.is(q.status, 402);
  t.is(typeof q.body.detail, 'string');
  t.regex(q.body.detail, /monthly call minutes quota/);
  t.like(await onlyRejected(capped.orgId), { connection_status: 'insufficient_balance', transport: 'webrtc' });

  // the monthly calls quota: the spec's plain-string 402 variant
  const counted = await s.createOrg({ monthlyCalls: 1 });
  t.is((await s.request('POST', '/call', { key: counted.apiKey, body: { agent: inline() } })).status, 200);
  const over = await s.request('POST', '/call', { key: counted.apiKey, body: { agent: inline() } });
  t.deepEqual([over.status, over.body.detail], [402, 'The organization has exceeded its monthly calls quota (1 of 1 calls started this month)']);
  const countedRows = await rowsOf(s.db, counted.orgId);
  t.deepEqual(countedRows.filter((r) => r.tags.includes('rejected')).map((r) => r.connection_status), ['insufficient_balance']);
  t.is(countedRows.length, 2);

  // another wallet reason: 403 with the 402's object shape, its code as connectionStatus (POST /call and the test call)
  const { setWalletStatus } = await import('../../core/orgs.ts');
  const held = await s.createOrg({ balanceUsd: 10 });
  await setWalletStatus(s.db, held.orgId, 'suspended', 'fraud review');
  const w = await s.request('POST', '/call', { key: held.apiKey, body: { agent: inline() } });
  t.is(w.status, 403);
  t.deepEqual(Object.keys(w.body.detail).sort(), ['balance_usd', 'error_code', 'error_message', 'threshold_usd']);
  t.like(w.body.detail, { error_code: 'wallet_rejected', balance_usd: '10.00', threshold_usd: '0.50' });
  t.regex(w.body.detail.error_message, /suspended: fraud review/);
  const saved = await saveAgent(held.orgId, inline());
  const tc = await s.request('POST', `/agents/${saved.uuid}/test-call`, { key: held.apiKey, body: {} });
  t.is(tc.status, 403);
  t.is(tc.body.detail.error_code, 'wallet_rejected');
  const listed = await s.request('GET', '/calls?connection_status=wallet_rejected', { key: held.apiKey });
  t.is(listed.status, 200);
  t.true(listed.body.total >= 1);
  t.like(listed.body.items[0], { connectionStatus: 'wallet_rejected', status: 'error', endedReason: null });
  t.true(listed.body.items[0].tags.includes('rejected'));
});

test('concurrency over HTTP: ceiling 5, 100 simultaneous POST /call → exactly 5 admitted, 95 × 429', async (t) => {
  const { orgId, apiKey } = await s.createOrg({ concurrency: 5 });
  const agent = await saveAgent(orgId, inline());
  const results = await Promise.all(Array.from({ length: 100 }, () => s.request('POST', '/call', { key: apiKey, body: { agentId: agent.uuid } })));
  const codes = results.map((r) => r.status);
  t.is(codes.filter((c) => c === 200).length, 5);
  t.is(codes.filter((c) => c === 429).length, 95);
  const limited = results.find((r) => r.status === 429)!;
  t.deepEqual(Object.keys(limited.body.detail).sort(), ['code', 'current_active', 'current_limit', 'message']);
  t.like(limited.body.detail, { code: 'concurrency_limit_reached', current_limit: 5, current_active: 5 });
  const rows = await rowsOf(s.db, orgId);
  t.is(rows.filter((r) => r.status === 'pending').length, 5);
  const rejected = rows.filter((r) => r.tags.includes('rejected'));
  t.is(rejected.length, 1, 'throttled: one row per organization + reason per minute');
  t.like(rejected[0], { connection_status: 'concurrency_limit_reached', agent_uuid: agent.uuid, config_snapshot: { agentId: agent.uuid } });
});

test('GET /calls/{callId}: detail fields; another organization or a malformed id → 404', async (t) => {
  const a = await s.createOrg();
  const b = await s.createOrg();
  const r = await s.request('POST', '/call', { key: a.apiKey, body: { agent: inline({ webhook: { url: 'https://hooks.example.com/x', headers: { Authorization: 'Bearer abc', 'X-Team': 'blue' } } }), contextVariables: { k: 'v' } } });
  t.is(r.status, 200);
  const d = await s.request('GET', `/calls/${r.body.callId}`, { key: a.apiKey });
  t.is(d.status, 200);
  t.deepEqual(Object.keys(d.body).sort(), [
    'agentId', 'agentName', 'analysis', 'callId', 'callSource', 'campaignId', 'configSnapshot', 'connectionStatus', 'contextVariables', 'cost', 'createdAt',
    'customerNumber', 'durationSeconds', 'endedAt', 'endedReason', 'logs', 'pipelineSource', 'platformNumber', 'recordingUrl',
    'startedAt', 'status', 'summary', 'tags', 'telephonyProvider', 'telephonySim', 'transcript', 'transcriptUrl', 'transport',
    'updatedAt', 'usage',
  ]);
  t.like(d.body, { callId: r.body.callId, pipelineSource: 'agent', status: 'pending', connectionStatus: null, contextVariables: { k: 'v' }, transcript: null, usage: null, analysis: null });
  t.is(d.body.configSnapshot.analysis, null, 'the snapshot materialises analysis: null');
  t.is(d.body.configSnapshot.webhook.headers.Authorization, '[REDACTED]', 'shown scrubbed');
  t.is(d.body.configSnapshot.webhook.headers['X-Team'], 'blue');
  const stored = await rowById(s.db, r.body.callId);
  t.is(stored.config_snapshot.webhook.headers.Authorization, 'Bearer abc', 'the pipeline keeps what it must send');
  for (const [key, id] of [[b.apiKey, r.body.callId], [a.apiKey, 'nope'], [a.apiKey, '00000000-0000-4000-8000-000000000000']] as const) {
    const x = await s.request('GET', `/calls/${id}`, { key });
    t.is(x.status, 404);
    t.deepEqual(x.body, { detail: 'Call not found' });
  }
});

test('test-call: pending WebRTC call of a saved agent, telephonySim and contextVariables stored', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const agent = await saveAgent(orgId, inline({ name: 'Tester', systemPrompt: 'Hello {{who}}' }));
  const r = await s.request('POST', `/agents/${agent.uuid}/test-call`, { key: apiKey, body: { contextVariables: { who: 'QA' }, telephonySim: true } });
  t.is(r.status, 200);
  t.deepEqual(r.body, { callId: r.body.callId, offerUrl: `${s.baseUrl}/webrtc/offer/${r.body.callId}`, status: 'pending', agentName: 'Tester' });
  const row = await rowById(s.db, r.body.callId);
  t.like(row, { status: 'pending', transport: 'webrtc', call_source: 'webrtc', telephony_sim: true, agent_uuid: agent.uuid, context_variables: { who: 'QA' } });
  t.is(row.config_snapshot.systemPrompt, 'Hello QA');
  t.deepEqual(row.tags, ['webcall', 'test_call']);

  const noBody = await s.request('POST', `/agents/${agent.uuid}/test-call`, { key: apiKey });
  t.is(noBody.status, 200);
  t.false((await rowById(s.db, noBody.body.callId)).telephony_sim);

  const bad = await s.request('POST', `/agents/${agent.uuid}/test-call`, { key: apiKey, body: { telephonySim: 'yes' } });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['body', 'telephonySim']);
  // a refused body leaves its rejected row like every pre-pipeline refusal (spec "Rejected calls")
  const rejected = (await rowsOf(s.db, orgId)).filter((x) => x.tags.includes('rejected'));
  t.is(rejected.length, 1);
  t.like(rejected[0], { status: 'error', connection_status: 'schema_validation', ended_reason: null, transport: 'webrtc', agent_uuid: agent.uuid, telephony_sim: false });
  t.deepEqual(rejected[0]!.config_snapshot, { agentId: agent.uuid, telephonySim: 'yes' });
  t.deepEqual(rejected[0]!.logs.validation_error[0].loc, ['body', 'telephonySim']);
});

test('test-call errors: 404 Agent not found (other org, archived, malformed), 402 wallet, 400 no organization', async (t) => {
  const a = await s.createOrg();
  const b = await s.createOrg({ balanceUsd: 0 });
  const agentA = await saveAgent(a.orgId, inline());
  const agentB = await saveAgent(b.orgId, inline());
  for (const id of [agentA.uuid, 'not-a-uuid']) {
    const r = await s.request('POST', `/agents/${id}/test-call`, { key: b.apiKey });
    t.is(r.status, 404);
    t.deepEqual(r.body, { detail: 'Agent not found' });
  }
  const w = await s.request('POST', `/agents/${agentB.uuid}/test-call`, { key: b.apiKey });
  t.is(w.status, 402);
  t.like(w.body.detail, { error_code: 'insufficient_balance', balance_usd: '0.00', threshold_usd: '0.50' });
  const rows = await rowsOf(s.db, b.orgId);
  t.deepEqual(rows.map((r) => r.connection_status).sort(), ['agent_not_found', 'agent_not_found', 'insufficient_balance']);
  const { createApiKey } = await import('../../core/orgs.ts');
  const { key } = await createApiKey(s.db, null, 'orgless');
  const n = await s.request('POST', `/agents/${agentA.uuid}/test-call`, { key });
  t.deepEqual(n.body, { detail: 'No organization selected' });
});

test('POST /call without an organization → 400 No organization selected, nothing stored', async (t) => {
  const { createApiKey } = await import('../../core/orgs.ts');
  const { key } = await createApiKey(s.db, null, 'orgless');
  const r = await s.request('POST', '/call', { key, body: { agent: inline() } });
  t.is(r.status, 400);
  t.deepEqual(r.body, { detail: 'No organization selected' });
});
