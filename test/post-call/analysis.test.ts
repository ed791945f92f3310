// Post-call analysis on the real Temporal dev server: a real WebSocket call whose agent asks for structured data
// and a verdict gets the OpenAI fake's Structured Outputs answer on GET /calls/{callId}, in call.completed, in its
// usage and cost, in the GET /calls filters and in the campaign report CSV; an answer that does not validate is
// asked again once and then stored as failed with ajv's message; a provider outage fails the analysis (its reason
// stored) and leaves the rest of post-call complete; a call with nothing said is skipped; the local model's
// grammar path (when the model is installed); the workflow history replays.
import test from 'ava';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseCsv } from 'csv-parse/sync';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { Worker } from '@temporalio/worker';
import { workflowsPath } from '../../activities/worker.ts';
import { sql } from '../../core/db/pool.ts';
import { computeCost } from '../../core/pricing.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { modelInstalled } from '../../media/services/model-files.ts';
import { callEndedSignal, callSearchAttributes, postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import type { postCallWorkflow } from '../../workflows/post-call/workflow.ts';
import { agentConfig as liveAgentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { fakeEngines } from '../fakes/engines.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-sse.ts';
import { agentConfig, insertEndedCall, USAGE } from './helpers.ts';
import { startReceiver } from '../helpers/http.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const QUEUE = 'post-call-analysis';
const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'post-call-analysis-history.json');
// protobufjs's JSON form of the History message (as test/post-call/post-call.test.ts stores its fixture)
const { History } = proto.temporal.api.history.v1;
const ajv = new Ajv2020({ strict: true, allErrors: true });
const withQwen = (await modelInstalled('qwen2.5-coder-0.5b-instruct')) ? test.serial : test.skip;

const SCHEMA = {
  type: 'object',
  properties: {
    confirmed: { type: 'boolean', description: 'Did the caller confirm the appointment?' },
    day: { type: 'string', enum: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'] },
    wants_callback: { type: 'boolean' },
  },
  required: ['confirmed', 'wants_callback'],
  additionalProperties: false,
};
const ANALYSIS = { structuredData: { schema: SCHEMA, prompt: 'Only what the caller said.' }, successEvaluation: { rubric: 'pass_fail', prompt: 'The caller confirmed a day.' }, llm: null };
const ANSWER = { structuredData: { confirmed: true, day: 'tuesday', wants_callback: false }, successEvaluation: { passed: true, reason: 'The caller confirmed Tuesday.' } };

let s: TestServer;
let openai: FakeOpenAi;
let worker: RunningWorker;

const factory: EngineFactory = async () => {
  const e = fakeEngines({
    stt: { utterances: ['yes tuesday works for me'] },
    llm: [{ text: 'Great, you are confirmed for Tuesday. Goodbye!', firstTokenMs: 20 }],
  });
  Object.defineProperties(e.engines.llm, { provider: { value: 'openai' }, model: { value: 'gpt-4o-mini' } });
  Object.defineProperties(e.engines.tts, { provider: { value: 'elevenlabs' }, model: { value: 'eleven_flash_v2_5' } });
  Object.defineProperties(e.engines.stt, { provider: { value: 'deepgram' }, model: { value: 'flux-general-en' } });
  return e;
};

test.before(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-analysis' });
  s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', OPENAI_BASE_URL: openai.url, OPENAI_API_KEY: 'sk-analysis' },
    media: { engines: factory },
  });
  worker = await startTestWorker(s, QUEUE);
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await openai?.close();
});

/** What media does at the end of a call. */
async function finishCall(callId: string, orgId: string) {
  const handle = await s.temporal!.client.workflow.signalWithStart<typeof postCallWorkflow, [{ callId: string }]>('postCallWorkflow', {
    workflowId: postCallWorkflowId(callId),
    taskQueue: QUEUE,
    args: [{ callId }],
    signal: callEndedSignal,
    signalArgs: [{ callId }],
    typedSearchAttributes: callSearchAttributes({ organizationId: orgId, agentId: null, callId }),
  });
  return handle.result();
}

const analysisRequests = (from: number) => openai.requests.slice(from).filter((r) => r.body?.response_format?.type === 'json_schema');

test.serial('a real call: the Structured Outputs answer on the call, in call.completed, in usage, cost, filters and the campaign CSV', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId, apiKey } = await s.createOrg({ balanceUsd: 20 });
  const config = liveAgentConfig({
    systemPrompt: 'You confirm dental appointments.',
    webhook: { url: `${receiver.url}/events`, headers: {} },
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: true },
    analysis: ANALYSIS,
  });
  const agent = await s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config) VALUES (${orgId}, 'analysed', ${JSON.stringify(config)}::jsonb) RETURNING id, uuid`);
  const callId = await insertPendingCall(s.db, { orgId, config, agentId: agent.id, agentUuid: agent.uuid });
  openai.reply({ json: ANSWER, usage: { prompt_tokens: 700, completion_tokens: 40 } });
  const n = openai.requests.length;

  const caller = TestCaller.connect(s.origin, callId, apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?');
  await caller.waitAgentQuiet();
  await caller.speak(900);
  await caller.silence(400);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /Tuesday/.test(e.payload!.text));
  await caller.waitAgentQuiet();
  caller.close();
  const ended = await endedRow(s.db, callId);

  const events = await receiver.waitFor(3);
  const completed = events.find((e) => e.json.event === 'call.completed')!.json;
  const expected = { status: 'completed', ...ANSWER, error: null, model: { provider: 'openai', model: 'gpt-4o-mini' } };
  t.deepEqual(completed.analysis, expected);
  t.true(ajv.validate(SCHEMA, completed.analysis.structuredData) as boolean);

  // One Structured Outputs request with the transcript, the agent's schema and the rubric's verdict schema.
  const [req, ...more] = analysisRequests(n);
  t.is(more.length, 0);
  t.is(req!.body.model, 'gpt-4o-mini');
  t.like(req!.body.response_format.json_schema, { name: 'call_analysis', strict: true });
  const answerSchema = req!.body.response_format.json_schema.schema;
  t.deepEqual(Object.keys(answerSchema.properties), ['structuredData', 'successEvaluation']);
  t.true(ajv.validate(answerSchema, ANSWER) as boolean, 'the fake answer is valid against what was asked');
  const prompt = JSON.stringify(req!.body.messages);
  t.regex(prompt, /yes tuesday works for me/);
  t.regex(prompt, /You confirm dental appointments/);
  t.regex(prompt, /The caller confirmed a day/);

  // GET /calls/{callId} shows it; usage has the analysis tokens and the cost prices them.
  const detail = await s.request('GET', `/calls/${callId}`, { key: apiKey });
  t.deepEqual(detail.body.analysis, expected);
  const llmUsage = detail.body.usage.llm as Array<Record<string, unknown>>;
  t.true(Array.isArray(llmUsage));
  t.deepEqual(llmUsage.at(-1), { provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 700, completion_tokens: 40, purpose: 'analysis' });
  t.deepEqual(completed.usage, detail.body.usage);
  const withoutAnalysis = computeCost(ended.usage, { fallbackSttSeconds: ended.duration_seconds }).total;
  const withAnalysisCost = computeCost(detail.body.usage, { fallbackSttSeconds: ended.duration_seconds }).total;
  t.true(withAnalysisCost > withoutAnalysis);
  t.is(detail.body.cost, withAnalysisCost);

  // Filters: success and analysis_status (with exact totals).
  const hit = await s.request('GET', '/calls?success=true&analysis_status=completed', { key: apiKey });
  t.deepEqual(hit.body.items.map((c: { callId: string }) => c.callId), [callId]);
  t.is(hit.body.total, 1);
  t.is((await s.request('GET', '/calls?success=false', { key: apiKey })).body.total, 0);
  t.is((await s.request('GET', '/calls?analysis_status=failed,skipped', { key: apiKey })).body.total, 0);
  const bad = await s.request('GET', '/calls?success=maybe&analysis_status=done', { key: apiKey });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail.map((d: { loc: string[] }) => d.loc).sort(), [['query', 'analysis_status'], ['query', 'success']]);

  // The campaign report: one column per top-level structured-data property, from the contact's last call.
  const campaign = await s.db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO campaigns (organization_id, name, agent_id, source_type, source_id, source_key, telephony_configuration_id, max_concurrency, retry_config, circuit_breaker)
    VALUES (${orgId}, 'analysed', ${agent.id}, 'csv', 'contacts.csv', 'files/contacts.csv', 1, 1, '{}'::jsonb, '{}'::jsonb) RETURNING id`);
  await s.db.query(sql.unsafe`
    INSERT INTO campaign_contacts (campaign_id, row_number, phone_number, status, attempts, last_call_id, last_status, last_ended_reason, last_duration_seconds)
    VALUES (${campaign}, 1, '+14155550100', 'done', 1, ${callId}, 'completed', 'user_hangup', 12.5),
           (${campaign}, 2, '+14155550101', 'queued', 0, NULL, NULL, NULL, NULL)`);
  const report = await fetch(`${s.baseUrl}/campaign/${campaign}/report`, { headers: { 'x-api-key': apiKey } });
  const lines = (await report.text()).trim().split('\r\n');
  const header = lines[0]!.split(',');
  t.deepEqual(header.slice(9, 14), ['voicemail_left', 'analysis_status', 'success', 'success_score', 'success_reason']);
  t.deepEqual(header.slice(14), ['confirmed', 'day', 'wants_callback'], 'one column per top-level property, by name');
  const cells = lines[1]!.split(',');
  const col = (name: string) => cells[header.indexOf(name)];
  t.deepEqual([col('analysis_status'), col('success'), col('success_score'), col('success_reason')], ['completed', 'true', '', 'The caller confirmed Tuesday.']);
  t.deepEqual([col('confirmed'), col('day'), col('wants_callback')], ['true', 'tuesday', 'false']);
  t.is(lines[2], `2,+14155550101,queued,0,,,,,,,,,,,${',,'}`);

  // A property named like a fixed column gets a `data.` prefix; arrays are JSON text (CSV-quoted).
  await s.db.query(sql.unsafe`UPDATE agents SET config = jsonb_set(jsonb_set(config, '{analysis,structuredData,schema,properties,attempts}', '{"type":"integer"}'),
    '{analysis,structuredData,schema,properties,notes}', '{"type":"array","items":{"type":"string"}}') WHERE id = ${agent.id}`);
  await s.db.query(sql.unsafe`UPDATE calls SET analysis = jsonb_set(jsonb_set(analysis, '{structuredData,attempts}', '3'), '{structuredData,notes}', '["a, b","c \\"d\\""]') WHERE id = ${callId}`);
  const again = parseCsv(await (await fetch(`${s.baseUrl}/campaign/${campaign}/report`, { headers: { 'x-api-key': apiKey } })).text()) as string[][];
  t.deepEqual(again[0]!.slice(14), ['data.attempts', 'confirmed', 'day', 'notes', 'wants_callback']);
  t.deepEqual(again[1]!.slice(14), ['3', 'true', 'tuesday', '["a, b","c \\"d\\""]', 'false']);
  t.is(again[1]![3], '1', 'the fixed attempts column is untouched');

  // The history (patched path) replays against today's workflow code.
  const history = await s.temporal!.client.workflow.getHandle(postCallWorkflowId(callId)).fetchHistory();
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history));
  if (process.env.RECORD_FIXTURES === '1') {
    writeFileSync(FIXTURE, `${JSON.stringify(History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String }), null, 1)}\n`);
  }
});

test('the recorded history of a post-call workflow with an analysis replays cleanly', async (t) => {
  t.true(existsSync(FIXTURE), 'fixture present (regenerate with RECORD_FIXTURES=1)');
  const history = History.fromObject(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  t.true(JSON.stringify(history).includes('analyzeCall'));
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history, 'postCall-analysis-fixture'));
});

test.serial('an answer that does not validate is asked again once (with the validator’s message), then stored as failed', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const config = { ...agentConfig({ webhookUrl: null }), analysis: ANALYSIS };
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config });
  const invalid = { structuredData: { confirmed: 'yes', day: 'someday', wants_callback: false }, successEvaluation: { passed: true, reason: 'ok' } };
  openai.reply({ json: invalid, usage: { prompt_tokens: 500, completion_tokens: 30 } }, { json: invalid, usage: { prompt_tokens: 560, completion_tokens: 30 } });
  const n = openai.requests.length;
  const result = await finishCall(callId, orgId);
  t.is(result.analysis, 'failed');
  t.deepEqual(result.failedSteps, []);
  const reqs = analysisRequests(n);
  t.is(reqs.length, 2);
  const retry = reqs[1]!.body.messages as Array<{ role: string; content: string }>;
  t.is(retry.at(-2)!.role, 'assistant');
  t.regex(retry.at(-1)!.content, /not accepted: the answer does not match the schema: .*\/structuredData\/confirmed must be boolean/);
  const detail = (await s.request('GET', `/calls/${callId}`, { key: apiKey })).body;
  t.like(detail.analysis, { status: 'failed', structuredData: null, successEvaluation: null, model: { provider: 'openai', model: 'gpt-4o-mini' } });
  t.regex(detail.analysis.error, /\/structuredData\/confirmed must be boolean/);
  t.regex(detail.analysis.error, /\/structuredData\/day must be equal to one of the allowed values/);
  // both requests' tokens are counted
  t.like(detail.usage.llm.at(-1), { purpose: 'analysis', prompt_tokens: 1060, completion_tokens: 60 });
  t.is(detail.cost, computeCost(detail.usage).total);
  t.is((await s.request('GET', '/calls?analysis_status=failed', { key: apiKey })).body.total, 1);

  // invalid once, valid the second time: completed
  const second = await insertEndedCall(s.db, { orgId, agent: null, config });
  openai.reply({ json: invalid }, { json: ANSWER });
  t.is((await finishCall(second, orgId)).analysis, 'completed');
  t.like((await s.request('GET', `/calls/${second}`, { key: apiKey })).body.analysis, { status: 'completed', ...ANSWER });
});

test.serial('a provider outage fails the analysis with its reason; recording, transcript, cost, summary and call.completed still happen', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId, apiKey } = await s.createOrg({ balanceUsd: 10 });
  const config = { ...agentConfig({ webhookUrl: receiver.url, summarize: true, provider: 'local', model: 'local-demo' }), analysis: { ...ANALYSIS, llm: { provider: 'openai', model: 'gpt-4o-mini' } } };
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config });
  openai.outage = { status: 503, errorMessage: 'The server is overloaded' };
  t.teardown(() => { openai.outage = null; });
  const n = openai.requests.length;
  const result = await finishCall(callId, orgId);
  openai.outage = null;
  t.is(result.analysis, 'failed');
  t.deepEqual(result.failedSteps, ['analysis']);
  t.is(result.transcriptUrl, `${s.config.cdnUrl}/transcripts/${callId}.json`);
  t.truthy(result.summary);
  t.is(result.cost, computeCost(USAGE).total, 'priced without analysis tokens');
  t.true(result.debited);
  t.is(result.callCompleted, 'sent');
  t.is(analysisRequests(n).length, 4, 'retried with backoff: the activity’s four attempts');
  const [event] = await receiver.waitFor(1);
  t.like(event!.json.analysis, { status: 'failed', structuredData: null });
  t.regex(event!.json.analysis.error, /503.*overloaded/i);
  const detail = (await s.request('GET', `/calls/${callId}`, { key: apiKey })).body;
  t.deepEqual(detail.analysis, event!.json.analysis);
  t.regex(detail.logs.post_call_errors[0].step, /analysis/);
});

test.serial('a refused key is not retried; a call with nothing said is skipped; an agent without analysis shows null', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const refusedKey = { ...agentConfig({ webhookUrl: null }), analysis: ANALYSIS };
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config: refusedKey });
  openai.outage = { status: 401, errorMessage: 'Incorrect API key provided' };
  t.teardown(() => { openai.outage = null; });
  const n = openai.requests.length;
  const result = await finishCall(callId, orgId);
  openai.outage = null;
  t.is(result.analysis, 'failed');
  t.is(analysisRequests(n).length, 1);
  t.regex((await s.request('GET', `/calls/${callId}`, { key: apiKey })).body.analysis.error, /401/);

  const silent = await insertEndedCall(s.db, { orgId, agent: null, config: refusedKey, transcript: [] });
  const m = openai.requests.length;
  t.is((await finishCall(silent, orgId)).analysis, 'skipped');
  t.is(analysisRequests(m).length, 0);
  t.like((await s.request('GET', `/calls/${silent}`, { key: apiKey })).body.analysis, { status: 'skipped', structuredData: null, error: 'nothing was said on the call' });

  const plain = await insertEndedCall(s.db, { orgId, agent: null, config: agentConfig({ webhookUrl: null }) });
  const r = await finishCall(plain, orgId);
  t.false('analysis' in r, 'no analysis step: the earlier command sequence');
  t.is((await s.request('GET', `/calls/${plain}`, { key: apiKey })).body.analysis, null);
  t.is((await s.request('GET', '/calls?analysis_status=skipped', { key: apiKey })).body.total, 1);
});

withQwen('the local model: a local agent’s call gets structured data that validates (JSON-schema grammar)', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const config = {
    ...agentConfig({ webhookUrl: null, provider: 'local', model: 'qwen2.5-coder-0.5b-instruct' }),
    stt: { provider: 'local' }, tts: { provider: 'local' },
    analysis: { ...ANALYSIS, successEvaluation: { rubric: 'score_1_10', prompt: null } },
  };
  const transcript = [
    { role: 'assistant', content: 'Hello, this is Acme Dental calling to confirm your cleaning appointment. Does Tuesday work?', timestamp: '2026-01-01T10:00:01.000Z' },
    { role: 'user', content: 'Yes, Tuesday works for me. No need to call me back.', timestamp: '2026-01-01T10:00:05.000Z' },
    { role: 'assistant', content: 'Great, you are confirmed for Tuesday. Goodbye!', timestamp: '2026-01-01T10:00:08.000Z' },
  ];
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config, transcript });
  const result = await finishCall(callId, orgId);
  const a = (await s.request('GET', `/calls/${callId}`, { key: apiKey })).body.analysis;
  t.is(result.analysis, 'completed', JSON.stringify(a));
  t.like(a, { status: 'completed', error: null, model: { provider: 'local', model: 'qwen2.5-coder-0.5b-instruct' } });
  t.true(ajv.validate(SCHEMA, a.structuredData) as boolean, JSON.stringify(a.structuredData));
  t.true(Number.isInteger(a.successEvaluation.score) && a.successEvaluation.score >= 1 && a.successEvaluation.score <= 10, JSON.stringify(a.successEvaluation));
});
