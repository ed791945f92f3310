// Agent-test runs on the vendor fakes, end to end through the real api, media and a worker: the workflow places a
// real WebSocket call through POST /call, the simulated caller speaks with its TTS (the Cartesia fake) and hears the
// agent with its STT (the Soniox fake), its lines come from its LLM (Groq, the OpenAI-format fake); the agent runs on
// Anthropic / Deepgram / ElevenLabs fakes; the judge (OpenAI) answers with Structured Outputs. Asserted: the
// transcript as the caller heard it, the verdicts, passed / failed, the call in history (tagged, billed), the
// signed test.completed, the judge's request (strict json_schema, valid JSON Schema by ajv, the criteria as an enum);
// text mode; and an agent that never answers ending `error` with the reason.
import test from 'ava';
import { execFile } from 'node:child_process';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { createWorker, workflowsPath } from '../../activities/worker.ts';
import { createActivities } from '../../activities/index.ts';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { signBody } from '../../core/webhook.ts';
import { verdictsSchema } from '../../core/agent-tests/judge.ts';
import { createEngines } from '../../media/services/index.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { agentTestWorkflowId } from '../../workflows/agent-test/messages.ts';
import { until } from '../helpers/wait.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { FakeVad } from '../fakes/engines.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-sse.ts';
import { startFakeAnthropic, type FakeVendor } from '../fakes/llm-vendors-sse.ts';
import { startDeepgramFake, type DeepgramFake } from '../fakes/stt/deepgram.ts';
import { startSonioxFake, type SonioxFake } from '../fakes/stt/soniox.ts';
import { FakeElevenLabs } from '../fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import { startReceiver } from '../helpers/http.ts';

const QUEUE = 'agent-tests-run';
const ajv = new Ajv2020({ strict: false });

// the agent's engines are the vendor adapters of its config; only its VAD is the tone-detecting fake
const mediaEngines: EngineFactory = async ({ config, appConfig }) => ({ engines: createEngines(appConfig, config as never), vad: new FakeVad() });

let s: TestServer;
let worker: { worker: Worker; run: Promise<void>; close(): Promise<void> };
let judge: FakeOpenAi;
let callerLlm: FakeOpenAi;
let agentLlm: FakeVendor;
let agentStt: DeepgramFake;
let callerStt: SonioxFake;
let agentTts: FakeElevenLabs;
let callerTts: FakeCartesia;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let key: string;

const GREETING = 'Hello, Bright Smile Dental, how can I help you?';
const AGENT_1 = 'Sure. May I have your name, please?';
const AGENT_2 = 'Thank you, Sam. You are booked for Tuesday at ten in the morning. Goodbye!';
const CALLER_1 = 'Hi, I would like to book a teeth cleaning for next Tuesday.';
const CALLER_2 = 'It is Sam Lee.';
const CRITERIA = ["The agent asks for the caller's name", 'The agent confirms a day and a time'];

test.before(async () => {
  [judge, callerLlm, agentLlm, agentStt, callerStt, receiver] = await Promise.all([
    startFakeOpenAi({ apiKey: 'sk-judge' }),
    startFakeOpenAi({ apiKey: 'gsk-caller' }),
    startFakeAnthropic(),
    // the agent hears the caller's lines; the caller hears the agent's (utterances end on the audio's silences)
    startDeepgramFake({ apiKey: 'dg-key', script: [CALLER_1, CALLER_2, 'perfect thanks bye'].map(unformatted) }),
    startSonioxFake({ apiKey: 'sx-key', script: [GREETING, AGENT_1, AGENT_2].map(unformatted), endpointMs: 400 }),
    startReceiver(),
  ]);
  agentTts = await new FakeElevenLabs({ apiKey: 'el-key' }).listen();
  callerTts = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  s = await startTestServer({
    env: {
      TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      OPENAI_BASE_URL: judge.url, OPENAI_API_KEY: 'sk-judge', GROQ_BASE_URL: callerLlm.url, GROQ_API_KEY: 'gsk-caller',
      ANTHROPIC_BASE_URL: agentLlm.url, ANTHROPIC_API_KEY: 'ak-agent',
      DEEPGRAM_BASE_URL: agentStt.url, DEEPGRAM_API_KEY: 'dg-key', SONIOX_BASE_URL: callerStt.url, SONIOX_API_KEY: 'sx-key',
      ELEVENLABS_BASE_URL: agentTts.server.baseUrl, ELEVENLABS_API_KEY: 'el-key', CARTESIA_BASE_URL: callerTts.server.baseUrl, CARTESIA_API_KEY: 'ca-key',
    },
    media: { engines: mediaEngines },
  });
  key = (await s.createOrg({ balanceUsd: 50, ratePerMinute: 100_000 })).apiKey;
  const logger = createLogger({ level: 'silent' });
  const activities = createActivities({
    config: s.config, db: s.db, logger, storage: s.storage,
    agentTests: { timing: { openerWaitMs: 3000, agentTurnEndMs: 700 } },
  });
  const { worker: w, connection } = await createWorker({ config: s.config, db: s.db, logger, taskQueue: QUEUE, activities });
  const run = w.run();
  worker = { worker: w, run, close: async () => { w.shutdown(); await run.catch(() => undefined); await connection.close(); } };
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await Promise.allSettled([judge?.close(), callerLlm?.close(), agentLlm?.close(), agentStt?.close(), callerStt?.close(), agentTts?.close(), callerTts?.close(), receiver?.close()]);
});

function unformatted(text: string): string {
  return text.toLowerCase().replace(/\[hang up\]/g, '').replace(/[^\p{L}\p{N}\s']/gu, '').replace(/\s+/g, ' ').trim();
}

async function createAgent(over: Record<string, unknown> = {}): Promise<string> {
  const r = await s.request('POST', '/agents', {
    key,
    body: {
      name: 'Bright Smile desk', systemPrompt: 'You book cleanings for Bright Smile Dental.',
      greeting: { firstMessages: [GREETING] },
      llm: { provider: 'anthropic', model: 'claude-haiku-4-5', prewarm: false },
      stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
      webhook: { url: `${receiver.url}/events`, headers: { 'X-Team': 'qa' } }, webhookSecret: 'test-secret',
      ...over,
    },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.uuid;
}

async function createTest(agent: string, over: Record<string, unknown> = {}): Promise<string> {
  const r = await s.request('POST', `/agents/${agent}/tests`, {
    key,
    body: {
      name: 'Books a cleaning', scenario: 'You are Sam Lee. You want a teeth cleaning next Tuesday morning.', criteria: CRITERIA, maxTurns: 4,
      caller: { llm: { provider: 'groq', model: 'llama-3.3-70b-versatile' }, stt: { provider: 'soniox' }, tts: { provider: 'cartesia' } },
      judge: { provider: 'openai', model: 'gpt-4.1-mini' },
      ...over,
    },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.id;
}

const verdictsReply = (passed: [boolean, boolean]) => ({
  text: [JSON.stringify({ verdicts: CRITERIA.map((criterion, i) => ({ criterion, passed: passed[i], reason: passed[i] ? 'It was said.' : 'It was not said.' })) })],
});

async function finished(path: string) {
  return until(async () => {
    const r = await s.request('GET', path, { key });
    return ['passed', 'failed', 'error'].includes(r.body.status) ? r.body : null;
  }, { what: `run ${path} to end`, timeoutMs: 90_000, everyMs: 200 });
}

test.serial('audio run on the vendor fakes: a real call, the conversation as heard, a judge with Structured Outputs, passed, one signed test.completed', async (t) => {
  const agent = await createAgent();
  const testId = await createTest(agent);
  callerLlm.reply({ text: [CALLER_1] }, { text: [CALLER_2] }, { text: ['Perfect, thanks. Bye! ', '[HANG UP]'] });
  agentLlm.reply({ text: [AGENT_1] }, { text: [AGENT_2] }, { text: ['Bye.'] });
  judge.reply(verdictsReply([true, true]));
  const judgeRequests = judge.requests.length;

  const started = await s.request('POST', `/agents/${agent}/tests/${testId}/runs`, { key, body: { mode: 'audio' } });
  t.is(started.status, 202, JSON.stringify(started.body));
  const path = `/agents/${agent}/tests/${testId}/runs/${started.body.id}`;
  const run = await finished(path);
  t.is(run.status, 'passed', JSON.stringify(run));
  t.is(run.error, null);
  t.is(run.endedBy, 'caller');
  t.is(run.attempts, 1);
  t.deepEqual(run.transcript.map((l: any) => [l.role, l.text]), [
    ['agent', unformatted(GREETING)], ['caller', 'Hi, I would like to book a teeth cleaning for next Tuesday.'],
    ['agent', unformatted(AGENT_1)], ['caller', 'It is Sam Lee.'],
    ['agent', unformatted(AGENT_2)], ['caller', 'Perfect, thanks. Bye!'],
  ]);
  for (const l of run.transcript) t.false(Number.isNaN(Date.parse(l.at)));
  t.deepEqual(run.verdicts, CRITERIA.map((criterion) => ({ criterion, passed: true, reason: 'It was said.' })));
  t.true(ajv.validate(verdictsSchema(CRITERIA), { verdicts: run.verdicts }), JSON.stringify(ajv.errors));

  // the caller's LLM was prompted with the scenario and heard the agent
  const firstCaller = callerLlm.requests.at(-3)!.body;
  t.regex(firstCaller.messages[0].content, /Sam Lee/);
  t.deepEqual(firstCaller.messages.slice(1).map((m: any) => [m.role, m.content]), [['user', unformatted(GREETING)]]);

  // the judge: one strict json_schema request with the transcript, the criteria as the enum
  t.is(judge.requests.length, judgeRequests + 1);
  const jr = judge.requests.at(-1)!.body;
  t.falsy(jr.stream);
  t.is(jr.response_format.type, 'json_schema');
  t.is(jr.response_format.json_schema.strict, true);
  t.is(jr.response_format.json_schema.name, 'agent_test_verdicts');
  const schema = jr.response_format.json_schema.schema;
  t.true(ajv.validateSchema(schema) as boolean, JSON.stringify(ajv.errors));
  t.deepEqual(schema.properties.verdicts.items.properties.criterion.enum, CRITERIA);
  t.true(ajv.validate(schema, JSON.parse(verdictsReply([true, true]).text[0]!)), JSON.stringify(ajv.errors));
  t.regex(jr.messages.at(-1).content, /Caller: It is Sam Lee\./);
  t.regex(jr.messages.at(-1).content, /1\. The agent asks for the caller's name/);

  // the call: a normal WebSocket call of the agent in history, tagged, ended by the caller, priced and debited
  const call = await until(async () => {
    const r = await s.request('GET', `/calls/${run.callId}`, { key });
    return r.body.cost !== null && r.body.cost !== undefined ? r.body : null;
  }, { what: 'the call to be priced', timeoutMs: 60_000, everyMs: 200 });
  t.is(call.agentId, agent);
  t.is(call.transport, 'websocket');
  t.is(call.endedReason, 'user_hangup');
  t.true(call.tags.includes('agent_test'), JSON.stringify(call.tags));
  t.true(call.cost > 0);
  // the debit follows the price in the post-call workflow
  const debits = () => s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM wallet_transactions WHERE call_id = ${run.callId} AND kind = 'call_debit'`);
  await until(async () => (await debits()) > 0, { what: 'the debit', timeoutMs: 60_000 });
  t.is(await debits(), 1);
  const tagged = await s.request('GET', `/calls?tag=agent_test&agent_id=${agent}`, { key });
  t.deepEqual(tagged.body.items.map((c: any) => c.callId), [run.callId]);
  // the run's own API key is gone
  const keys = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM api_keys WHERE name = ${`agent-test:${run.id}`}`);
  t.is(keys, 0);

  // test.completed: once, signed with the agent's secret, with the agent's headers
  const events = await until(() => {
    const e = receiver.events.filter((x) => x.json?.event === 'test.completed' && x.json.runId === run.id);
    return e.length ? e : null;
  }, { what: 'test.completed', timeoutMs: 30_000 });
  t.is(events.length, 1);
  const ev = events[0]!;
  t.is(ev.headers['x-service-signature'], signBody('test-secret', ev.raw));
  t.is(ev.headers['x-team'], 'qa');
  t.like(ev.json, { runId: run.id, testId, agentId: agent, testName: 'Books a cleaning', status: 'passed', callId: run.callId, mode: 'audio', endedBy: 'caller', error: null });
  t.deepEqual(ev.json.verdicts, run.verdicts);
  t.deepEqual(ev.json.transcript, run.transcript);

  const handle = s.temporal!.client.workflow.getHandle(agentTestWorkflowId(run.id));
  t.like(await handle.result(), { runId: run.id, status: 'passed', callId: run.callId, ended: true, testCompleted: 'sent' });
  // the workflow code replays its own history (deterministic)
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory()));
});

test.serial('text mode: the same session and tools without audio; a criterion the judge fails makes the run failed', async (t) => {
  const agent = await createAgent({ name: 'Text desk' });
  const testId = await createTest(agent, { maxTurns: 2 });
  callerLlm.reply({ text: [CALLER_1] }, { text: [CALLER_2] });
  agentLlm.reply({ text: [AGENT_1] }, { text: ['Thank you, Sam.'] });
  judge.reply(verdictsReply([true, false]));
  const sttBefore = agentStt.connections.length + callerStt.connections.length;

  const started = await s.request('POST', `/agents/${agent}/tests/${testId}/runs`, { key, body: { mode: 'text' } });
  t.is(started.status, 202);
  const run = await finished(`/agents/${agent}/tests/${testId}/runs/${started.body.id}`);
  t.is(run.status, 'failed', JSON.stringify(run));
  t.is(run.mode, 'text');
  t.is(run.endedBy, 'max_turns');
  t.deepEqual(run.transcript.map((l: any) => [l.role, l.text]), [
    ['agent', GREETING], ['caller', CALLER_1], ['agent', AGENT_1], ['caller', CALLER_2], ['agent', 'Thank you, Sam.'],
  ]);
  t.deepEqual(run.verdicts.map((v: any) => v.passed), [true, false]);
  t.is(agentStt.connections.length + callerStt.connections.length, sttBefore, 'no speech recognition in text mode');

  // the agent's side: a normal call row with the agent's transcript, no speech engines in its usage
  const call = await until(async () => {
    const r = await s.request('GET', `/calls/${run.callId}`, { key });
    return r.body.status === 'completed' && r.body.usage ? r.body : null;
  }, { what: 'the text-mode call to end', timeoutMs: 30_000 });
  t.deepEqual(call.transcript.filter((e: any) => e.role === 'user').map((e: any) => e.content), [CALLER_1, CALLER_2]);
  t.deepEqual(call.transcript.filter((e: any) => e.role === 'assistant').map((e: any) => e.content), [GREETING, AGENT_1, 'Thank you, Sam.']);
  t.is(call.usage.llm.provider, 'anthropic');
  t.falsy(call.usage.stt);
  const ev = await until(() => receiver.events.find((x) => x.json?.event === 'test.completed' && x.json.runId === run.id), { what: 'test.completed', timeoutMs: 30_000 });
  t.is(ev.json.status, 'failed');
});

/** `npm run agent-test -- …` as a CI job runs it: its own process against the service, its exit status. */
function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/agent-test.ts', ...args], { env: { ...process.env, VOICE_AGENT_URL: s.origin, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 99) : 0, out: stdout + stderr });
    });
  });
}

test.serial('agent-test CLI: exit 0 when every run passed, 1 when one failed, 2 when nothing could be run', async (t) => {
  const agent = await createAgent({ name: 'CLI desk' });
  const testId = await createTest(agent, { maxTurns: 1, name: 'One exchange' });

  callerLlm.reply({ text: [CALLER_1] });
  agentLlm.reply({ text: [AGENT_1] });
  judge.reply(verdictsReply([true, true]));
  const pass = await cli(['--agent', agent, '--mode', 'text'], { VOICE_AGENT_API_KEY: key });
  t.is(pass.code, 0, pass.out);
  t.regex(pass.out, /PASSED One exchange {2}2\/2 criteria/);
  t.regex(pass.out, /1 of 1 passed/);

  callerLlm.reply({ text: [CALLER_1] });
  agentLlm.reply({ text: [AGENT_1] });
  judge.reply(verdictsReply([true, false]));
  const fail = await cli(['--agent', agent, '--test', testId, '--mode', 'text', '--key', key, '--json']);
  t.is(fail.code, 1, fail.out);
  const report = JSON.parse(fail.out);
  t.false(report.passed);
  t.is(report.runs[0].status, 'failed');
  t.deepEqual(report.runs[0].verdicts.map((v: any) => v.passed), [true, false]);

  const unknown = await cli(['--agent', '00000000-0000-4000-8000-000000000000', '--key', key]);
  t.is(unknown.code, 2);
  t.regex(unknown.out, /Agent not found/);
  t.is((await cli(['--agent', agent])).code, 2, 'no key');
  t.is((await cli(['--agent', agent, '--key', 'vak_wrong'])).code, 2);
  t.is((await cli(['--test', testId, '--key', key])).code, 2, 'no agent');
  t.is((await cli(['--agent', agent, '--key', key, '--mode', 'video'])).code, 2);
});

test.serial('usage reports can leave the test calls out: exclude_tag=agent_test', async (t) => {
  const all = await s.request('GET', '/organizations/reports/usage-summary', { key });
  t.is(all.status, 200);
  t.true(all.body.total_calls > 0);
  t.true(all.body.spend_usd > 0);
  const without = await s.request('GET', '/organizations/reports/usage-summary?exclude_tag=agent_test', { key });
  t.like(without.body, { total_calls: 0, connected_calls: 0, billed_minutes: 0, spend_usd: 0 });
  t.is((await s.request('GET', '/wallet/dashboard/usage-summary?exclude_tag=campaign,other', { key })).body.total_calls, all.body.total_calls);
  const bad = await s.request('GET', `/organizations/reports/usage-summary?exclude_tag=${'x'.repeat(101)}`, { key });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['query', 'exclude_tag']);
});

test.serial('an agent that never answers: the run ends error with the reason, judged by nobody, one test.completed', async (t) => {
  // no greeting (the opener would come from the LLM) and an LLM whose every answer hangs
  const agent = await createAgent({ name: 'Mute desk', greeting: { firstMessages: [] } });
  const testId = await createTest(agent, { answerTimeoutS: 6 });
  callerLlm.reply({ text: ['Hello? Is anyone there?'] });
  // (last in this file: a stalled reply the run did not ask for would be the next test's)
  agentLlm.reply({ text: [], stallAfter: 0 }, { text: [], stallAfter: 0 }, { text: [], stallAfter: 0 });
  const judgeRequests = judge.requests.length;

  const started = await s.request('POST', `/agents/${agent}/tests/${testId}/runs`, { key, body: {} });
  const run = await finished(`/agents/${agent}/tests/${testId}/runs/${started.body.id}`);
  t.is(run.status, 'error');
  t.regex(run.error, /^the agent did not answer: nothing was heard from it for 6 s after the caller's turn 1/);
  t.deepEqual(run.verdicts, []);
  t.deepEqual(run.transcript.map((l: any) => l.role), ['caller']);
  t.is(judge.requests.length, judgeRequests, 'no judge');
  t.truthy(run.callId);
  const call = await until(async () => {
    const r = await s.request('GET', `/calls/${run.callId}`, { key });
    return r.body.status === 'completed' ? r.body : null;
  }, { what: 'the call to end', timeoutMs: 30_000 });
  t.is(call.endedReason, 'user_hangup');
  const events = await until(() => {
    const e = receiver.events.filter((x) => x.json?.event === 'test.completed' && x.json.runId === run.id);
    return e.length ? e : null;
  }, { what: 'test.completed', timeoutMs: 30_000 });
  t.is(events.length, 1);
  t.like(events[0]!.json, { status: 'error', error: run.error });
  const handle = s.temporal!.client.workflow.getHandle(agentTestWorkflowId(run.id));
  t.like(await handle.result(), { status: 'error', ended: true });
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory()));
});
