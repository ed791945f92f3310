// The agent-tests API without a conversation: tests (create with defaults filled in, strict bodies and bounds, the
// catalog check, list envelope, PATCH rules, DELETE), runs (202 queued and the workflow agentTest-<runId> with its
// search attributes, refusals that change nothing), and organization scoping (another organization's agent, test
// or run is a 404). No worker polls this file's task queue, so a started run stays queued.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { AgentIdKey, OrganizationIdKey } from '../../core/calls/post-call-names.ts';
import { agentTestWorkflowId } from '../../workflows/agent-test/messages.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let key: string;
let orgId: string;
let otherKey: string;
let agent: string;
let otherAgent: string;

const QUEUE = 'agent-tests-api-no-worker';

type Body = Record<string, any>;
const agentBody = (over: Body = {}): Body => ({
  name: 'Clinic desk',
  systemPrompt: 'You book appointments for a dental clinic.',
  llm: { provider: 'openai', model: 'gpt-4.1-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
  ...over,
});
const testBody = (over: Body = {}): Body => ({
  name: 'Books a cleaning',
  scenario: 'You are Sam, you want a teeth cleaning next Tuesday morning.',
  criteria: ['The agent asks for the caller\'s name', 'The agent confirms a day and time'],
  ...over,
});

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE, OPENAI_API_KEY: 'sk-test', DEEPGRAM_API_KEY: 'dg', ELEVENLABS_API_KEY: 'el' } });
  const a = await s.createOrg({ ratePerMinute: 1_000_000 });
  key = a.apiKey;
  orgId = a.orgId;
  otherKey = (await s.createOrg({ ratePerMinute: 1_000_000 })).apiKey;
  agent = (await s.request('POST', '/agents', { key, body: agentBody() })).body.uuid;
  otherAgent = (await s.request('POST', '/agents', { key: otherKey, body: agentBody() })).body.uuid;
});
test.after.always(async () => {
  await s?.close();
});

const post = (path: string, body: unknown, k = key) => s.request('POST', path, { key: k, body });
const get = (path: string, k = key) => s.request('GET', path, { key: k });
/** Rows of these agents (the tests of this file run at once: each counts its own agents' rows). */
const countRows = (table: 'agent_tests' | 'agent_test_runs', agents: string[]) =>
  s.db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM ${sql.identifier([table])} x JOIN agents a ON a.id = x.agent_id WHERE a.uuid = ANY(${sql.array(agents, 'uuid')})`);

test('create: 201 with the stored test, defaults filled in (local caller engines, the caller\'s LLM as judge)', async (t) => {
  const r = await post(`/agents/${agent}/tests`, testBody());
  t.is(r.status, 201, JSON.stringify(r.body));
  t.deepEqual(Object.keys(r.body).sort(), ['agentId', 'answerTimeoutS', 'caller', 'createdAt', 'criteria', 'id', 'judge', 'maxDurationS', 'maxTurns', 'name', 'scenario', 'updatedAt']);
  t.like(r.body, { agentId: agent, name: 'Books a cleaning', maxTurns: 6, maxDurationS: 300, answerTimeoutS: 60 });
  t.deepEqual(r.body.caller, {
    llm: { provider: 'local', model: 'qwen2.5-coder-0.5b-instruct' },
    stt: { provider: 'local', model: 'whisper-tiny.en' },
    tts: { provider: 'local', model: 'piper', voice: 'default' },
  });
  t.deepEqual(r.body.judge, { provider: 'local', model: 'qwen2.5-coder-0.5b-instruct' });
  t.deepEqual((await get(`/agents/${agent}/tests/${r.body.id}`)).body, r.body);
});

test('create: strict bodies and the bounds of every field, all failures in one 422, nothing stored', async (t) => {
  const agent = (await s.request('POST', '/agents', { key, body: agentBody({ name: 'Strict' }) })).body.uuid;
  const bad = await post(`/agents/${agent}/tests`, {
    name: '', scenario: 'x'.repeat(4001), criteria: [], maxTurns: 21, extra: true, caller: { llm: { provider: 'openai', temperature: 1 } },
  });
  t.is(bad.status, 422);
  const locs = bad.body.detail.map((d: any) => `${d.loc.join('.')}:${d.type}`).sort();
  t.deepEqual(locs, [
    'body.caller.llm.temperature:extra_forbidden', 'body.criteria:too_short', 'body.extra:extra_forbidden', 'body.maxTurns:less_than_equal',
    'body.name:string_too_short', 'body.scenario:string_too_long',
  ]);
  const cases: Array<[Body, string]> = [
    [testBody({ criteria: Array.from({ length: 11 }, (_, i) => `c${i}`) }), 'body.criteria:too_long'],
    [testBody({ criteria: ['ok', 'y'.repeat(501)] }), 'body.criteria.1:string_too_long'],
    [testBody({ criteria: ['ok', '   '] }), 'body.criteria.1:string_too_short'],
    [testBody({ maxTurns: 0 }), 'body.maxTurns:greater_than_equal'],
    [testBody({ answerTimeoutS: 301 }), 'body.answerTimeoutS:less_than_equal'],
    [testBody({ maxTurns: 2.5 }), 'body.maxTurns:int_type'],
    [testBody({ name: 'n'.repeat(121) }), 'body.name:string_too_long'],
    [testBody({ caller: { stt: { provider: 'whisper' } } }), 'body.caller.stt.provider:literal_error'],
    [testBody({ caller: { llm: { provider: 'openai', model: 'gpt-9' } } }), 'body.caller.llm.model:value_error'],
    [testBody({ caller: { tts: { provider: 'xai', voice: 'bob' } } }), 'body.caller.tts.voice:value_error'],
    [testBody({ judge: { provider: 'local', model: 'local-demo' } }), 'body.judge.model:value_error'],
    [testBody({ caller: { llm: { provider: 'local', model: 'local-demo' } } }), 'body.caller.llm.model:value_error'],
  ];
  for (const [body, expected] of cases) {
    const r = await post(`/agents/${agent}/tests`, body);
    t.is(r.status, 422, JSON.stringify(body));
    t.deepEqual(r.body.detail.map((d: any) => `${d.loc.join('.')}:${d.type}`), [expected], JSON.stringify(r.body));
  }
  const notJson = await s.request('POST', `/agents/${agent}/tests`, { key, raw: '[1, 2' });
  t.is(notJson.status, 400);
  t.is(await countRows('agent_tests', [agent]), 0);
});

test('vendor engines for the caller and a judge: the catalog defaults of each', async (t) => {
  const r = await post(`/agents/${agent}/tests`, testBody({
    caller: { llm: { provider: 'openai' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs', voice: 'EXAVITQu4vr4xnSDxMaL' } },
    judge: { provider: 'anthropic', model: 'claude-haiku-4-5' },
  }));
  t.is(r.status, 201, JSON.stringify(r.body));
  t.deepEqual(r.body.caller, {
    llm: { provider: 'openai', model: 'gpt-4.1-mini' },
    stt: { provider: 'deepgram', model: 'flux-general-en' },
    tts: { provider: 'elevenlabs', model: 'eleven_flash_v2_5', voice: 'EXAVITQu4vr4xnSDxMaL' },
  });
  t.deepEqual(r.body.judge, { provider: 'anthropic', model: 'claude-haiku-4-5' });
});

test('list: the pagination envelope, newest first, only this agent\'s live tests; page parameters checked', async (t) => {
  const a = (await s.request('POST', '/agents', { key, body: agentBody({ name: 'Lister' }) })).body.uuid;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await post(`/agents/${a}/tests`, testBody({ name: `t${i}` }))).body.id);
  const p1 = await get(`/agents/${a}/tests?per_page=2`);
  t.is(p1.status, 200);
  t.like(p1.body, { total: 3, page: 1, perPage: 2, totalPages: 2 });
  t.deepEqual(p1.body.items.map((x: any) => x.name), ['t2', 't1']);
  const p2 = await get(`/agents/${a}/tests?per_page=2&page=2`);
  t.deepEqual(p2.body.items.map((x: any) => x.id), [ids[0]]);
  const bad = await get(`/agents/${a}/tests?per_page=101`);
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['query', 'per_page']);
  t.is((await s.request('DELETE', `/agents/${a}/tests/${ids[1]}`, { key })).status, 204);
  t.deepEqual((await get(`/agents/${a}/tests`)).body.items.map((x: any) => x.name), ['t2', 't0']);
});

test('PATCH: fields replace, an engine given replaces that engine, judge null is the caller\'s LLM again; bad input changes nothing', async (t) => {
  const created = (await post(`/agents/${agent}/tests`, testBody({ judge: { provider: 'openai' } }))).body;
  const path = `/agents/${agent}/tests/${created.id}`;
  const r = await s.request('PATCH', path, { key, body: { name: 'Renamed', maxTurns: 3, caller: { llm: { provider: 'openai' } } } });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { name: 'Renamed', maxTurns: 3, scenario: created.scenario });
  t.deepEqual(r.body.criteria, created.criteria);
  t.deepEqual(r.body.caller.llm, { provider: 'openai', model: 'gpt-4.1-mini' });
  t.deepEqual(r.body.caller.stt, created.caller.stt);
  t.deepEqual(r.body.judge, { provider: 'openai', model: 'gpt-4.1-mini' });
  t.true(r.body.updatedAt > created.updatedAt);

  const reset = await s.request('PATCH', path, { key, body: { judge: null, caller: { llm: { provider: 'groq', model: 'llama-3.3-70b-versatile' } } } });
  t.is(reset.status, 200, JSON.stringify(reset.body));
  t.deepEqual(reset.body.judge, { provider: 'groq', model: 'llama-3.3-70b-versatile' });

  for (const body of [{ nope: 1 }, { criteria: [] }, { caller: { tts: { provider: 'openai', model: 'tts-9' } } }, { maxDurationS: 10 }]) {
    const bad = await s.request('PATCH', path, { key, body });
    t.is(bad.status, 422, JSON.stringify(body));
  }
  t.deepEqual((await get(path)).body, reset.body);
});

test('DELETE: 204, then 404 everywhere; the runs stay in the database with their calls', async (t) => {
  const created = (await post(`/agents/${agent}/tests`, testBody())).body;
  const path = `/agents/${agent}/tests/${created.id}`;
  const run = await post(`${path}/runs`, {});
  t.is(run.status, 202, JSON.stringify(run.body));
  const del = await s.request('DELETE', path, { key });
  t.is(del.status, 204);
  t.is(del.body, null);
  for (const [method, p] of [['GET', path], ['PATCH', path], ['DELETE', path], ['GET', `${path}/runs`], ['POST', `${path}/runs`], ['GET', `${path}/runs/${run.body.id}`]] as const) {
    const r = await s.request(method, p, { key, body: method === 'PATCH' ? { name: 'x' } : method === 'POST' ? {} : undefined });
    t.is(r.status, 404, `${method} ${p}`);
    t.is(r.body.detail, 'Test not found');
  }
  const kept = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM agent_test_runs WHERE id = ${run.body.id}`);
  t.is(kept, 1);
});

test('run: 202 queued, the run listed and readable, the workflow agentTest-<runId> with the agent and organization search attributes', async (t) => {
  const created = (await post(`/agents/${agent}/tests`, testBody())).body;
  const path = `/agents/${agent}/tests/${created.id}/runs`;
  const r = await post(path, { mode: 'text' });
  t.is(r.status, 202, JSON.stringify(r.body));
  t.like(r.body, { testId: created.id, agentId: agent, status: 'queued', mode: 'text', callId: null, error: null, endedAt: null, attempts: 0 });
  t.deepEqual(r.body.transcript, []);
  t.deepEqual(r.body.verdicts, []);
  const noBody = await s.request('POST', path, { key });
  t.is(noBody.status, 202);
  t.is(noBody.body.mode, 'audio');

  const list = await get(path);
  t.like(list.body, { total: 2, page: 1, perPage: 50, totalPages: 1 });
  t.deepEqual(list.body.items.map((x: any) => x.id), [noBody.body.id, r.body.id]);
  t.deepEqual((await get(`${path}/${r.body.id}`)).body, r.body);

  const handle = s.temporal!.client.workflow.getHandle(agentTestWorkflowId(r.body.id));
  const d = await handle.describe();
  t.is(d.type, 'agentTestWorkflow');
  t.is(d.taskQueue, QUEUE);
  t.is(d.status.name, 'RUNNING');
  t.is(d.typedSearchAttributes.get(OrganizationIdKey), orgId);
  t.is(d.typedSearchAttributes.get(AgentIdKey), agent);
  await handle.terminate('test over');
  await s.temporal!.client.workflow.getHandle(agentTestWorkflowId(noBody.body.id)).terminate('test over');
});

test('run refusals change nothing: bad body 422, an engine whose key is unset 400, an empty wallet 402', async (t) => {
  const agent = (await s.request('POST', '/agents', { key, body: agentBody({ name: 'Refusals' }) })).body.uuid;
  const created = (await post(`/agents/${agent}/tests`, testBody())).body;
  const path = `/agents/${agent}/tests/${created.id}/runs`;
  const bad = await post(path, { mode: 'video', extra: 1 });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail.map((d: any) => d.loc.join('.')).sort(), ['body.extra', 'body.mode']);

  // the caller on a vendor whose key this install lacks
  const noKey = (await post(`/agents/${agent}/tests`, testBody({ caller: { stt: { provider: 'soniox' } } }))).body;
  const r400 = await post(`/agents/${agent}/tests/${noKey.id}/runs`, {});
  t.is(r400.status, 400);
  t.is(r400.body.detail, "the simulated caller: stt provider 'soniox' needs SONIOX_API_KEY");
  // text mode needs only the caller's LLM
  const textOnly = await post(`/agents/${agent}/tests/${noKey.id}/runs`, { mode: 'text' });
  t.is(textOnly.status, 202);
  await s.temporal!.client.workflow.getHandle(agentTestWorkflowId(textOnly.body.id)).terminate('test over');

  // an agent whose engine has no adapter here
  const google = (await s.request('POST', '/agents', { key, body: agentBody({ llm: { provider: 'google', model: 'gemini-2.5-flash' } }) })).body.uuid;
  const gTest = (await post(`/agents/${google}/tests`, testBody())).body;
  const r4xx = await post(`/agents/${google}/tests/${gTest.id}/runs`, {});
  t.is(r4xx.status, 400, JSON.stringify(r4xx.body));
  t.is(r4xx.body.detail, "llm provider 'google' needs GOOGLE_API_KEY");

  const poor = await s.createOrg({ balanceUsd: 0.1, ratePerMinute: 1_000_000 });
  const poorAgent = (await s.request('POST', '/agents', { key: poor.apiKey, body: agentBody() })).body.uuid;
  const poorTest = (await post(`/agents/${poorAgent}/tests`, testBody(), poor.apiKey)).body;
  const r402 = await post(`/agents/${poorAgent}/tests/${poorTest.id}/runs`, {}, poor.apiKey);
  t.is(r402.status, 402);
  t.is(r402.body.detail.error_code, 'insufficient_balance');
  // only the text-mode run was queued
  t.is(await countRows('agent_test_runs', [agent, google, poorAgent]), 1);
});

test('organization scoping: another organization\'s agent, test and run are 404, never visible or changed', async (t) => {
  const mine = (await post(`/agents/${agent}/tests`, testBody())).body;
  const theirs = (await post(`/agents/${otherAgent}/tests`, testBody(), otherKey)).body;
  const run = await post(`/agents/${otherAgent}/tests/${theirs.id}/runs`, {}, otherKey);
  t.is(run.status, 202);
  await s.temporal!.client.workflow.getHandle(agentTestWorkflowId(run.body.id)).terminate('test over');

  const agent404 = [`/agents/${otherAgent}/tests`, `/agents/${otherAgent}/tests/${theirs.id}`, `/agents/${otherAgent}/tests/${theirs.id}/runs`, `/agents/${otherAgent}/tests/${theirs.id}/runs/${run.body.id}`];
  for (const p of agent404) {
    const r = await get(p);
    t.is(r.status, 404, p);
    t.is(r.body.detail, 'Agent not found');
  }
  t.is((await post(`/agents/${otherAgent}/tests`, testBody())).status, 404);
  t.is((await post(`/agents/${otherAgent}/tests/${theirs.id}/runs`, {})).status, 404);
  // their test id under my agent, my test id under theirs
  for (const [p, k] of [[`/agents/${agent}/tests/${theirs.id}`, key], [`/agents/${otherAgent}/tests/${mine.id}`, otherKey]] as const) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const r = await s.request(method, p, { key: k, body: method === 'PATCH' ? { name: 'stolen' } : undefined });
      t.is(r.status, 404, `${method} ${p}`);
      t.is(r.body.detail, 'Test not found');
    }
  }
  // their run under my test
  const r = await get(`/agents/${agent}/tests/${mine.id}/runs/${run.body.id}`);
  t.is(r.status, 404);
  t.is(r.body.detail, 'Test run not found');
  for (const p of [`/agents/not-a-uuid/tests`, `/agents/${agent}/tests/not-a-uuid`, `/agents/${agent}/tests/${mine.id}/runs/not-a-uuid`]) t.is((await get(p)).status, 404, p);
  t.is((await get(`/agents/${otherAgent}/tests/${theirs.id}`, otherKey)).body.name, theirs.name);
});

test('the OpenAPI document names every agent-test operation, its body schema strict', async (t) => {
  const doc = (await s.request('GET', '/openapi.json', { key: null })).body;
  const ops = (p: string) => Object.keys(doc.paths[p] ?? {}).sort();
  t.deepEqual(ops('/agents/{agent_uuid}/tests'), ['get', 'post']);
  t.deepEqual(ops('/agents/{agent_uuid}/tests/{test_id}'), ['delete', 'get', 'patch']);
  t.deepEqual(ops('/agents/{agent_uuid}/tests/{test_id}/runs'), ['get', 'post']);
  t.deepEqual(ops('/agents/{agent_uuid}/tests/{test_id}/runs/{run_id}'), ['get']);
  const schema = doc.paths['/agents/{agent_uuid}/tests'].post.requestBody.content['application/json'].schema;
  t.false(schema.additionalProperties);
  t.deepEqual(schema.required.sort(), ['criteria', 'name', 'scenario']);
});
