// The postCall workflow on the real Temporal dev server: what a finished call leaves behind (WAV, transcript file,
// usage/cost, summary from a fake OpenAI server, one signed call.completed, one wallet debit), partial failures,
// re-runs and a worker killed mid-workflow.
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { workflowsPath } from '../../activities/worker.ts';
import { sql } from '../../core/db/pool.ts';
import { computeCost } from '../../core/pricing.ts';
import { type Storage } from '../../core/storage/index.ts';
import { parseWavHeader } from '../../core/audio/wav.ts';
import { signBody } from '../../core/webhook.ts';
import { callEndedSignal, callSearchAttributes, postCallWorkflowId, spoolRecordingKey } from '../../workflows/post-call/messages.ts';
import type { postCallWorkflow } from '../../workflows/post-call/workflow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { agentConfig, insertAgent, insertEndedCall, makeWav, startFakeOpenAI, USAGE } from './helpers.ts';
import { startReceiver } from '../helpers/http.ts';

const QUEUE = 'post-call-test';
const FAILING_QUEUE = 'post-call-test-failing-storage';
const KILL_QUEUE = 'post-call-test-kill';
const SUMMARY = 'The caller asked to move a cleaning appointment. The agent rescheduled it with the reschedule tool. ' +
  'The new slot is Tuesday at 3 PM. The caller thanked the agent and hung up.';
const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'post-call-history.json');

let s: TestServer;
let llm: Awaited<ReturnType<typeof startFakeOpenAI>>;
const workers: RunningWorker[] = [];

async function runWorker(taskQueue: string, storage?: Storage) {
  const w = await startTestWorker(s, taskQueue, storage ? { storage } : {});
  workers.push(w);
  return w;
}

test.before(async () => {
  llm = await startFakeOpenAI(`Summary: ${SUMMARY}`);
  s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', OPENAI_BASE_URL: llm.baseUrl, OPENAI_API_KEY: 'sk-test-key' },
  });
  await runWorker(QUEUE);
  // A worker whose storage refuses recordings: the "upload fails" case through the activities factory.
  const failing: Storage = {
    ...s.storage,
    async put(key, body, opts) {
      if (key.startsWith('recordings/')) {
        (body as { destroy?: () => void }).destroy?.();
        throw new Error('simulated storage outage: bucket unavailable');
      }
      return s.storage.put(key, body, opts);
    },
  };
  await runWorker(FAILING_QUEUE, failing);
});

test.after.always(async () => {
  for (const w of workers) await w.close();
  await s?.close();
  await llm?.close();
});

/** What media does at the end of a call. */
async function finishCall(callId: string, orgId: string, agentId: string | null, taskQueue = QUEUE) {
  const handle = await s.temporal!.client.workflow.signalWithStart<typeof postCallWorkflow, [{ callId: string }]>('postCallWorkflow', {
    workflowId: postCallWorkflowId(callId),
    taskQueue,
    args: [{ callId }],
    signal: callEndedSignal,
    signalArgs: [{ callId }],
    typedSearchAttributes: callSearchAttributes({ organizationId: orgId, agentId, callId }),
  });
  return handle.result();
}

// Stored as protobufjs's JSON form of the History message (historyToJSON from @temporalio/common trips over the
// duplicated protobufjs copies in node_modules; toObject/fromObject of @temporalio/proto round-trip exactly).
const { History } = proto.temporal.api.history.v1;
function historyToObject(history: proto.temporal.api.history.v1.IHistory) {
  return proto.temporal.api.history.v1.History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
}

const ledger = (callId: string) =>
  s.db.any(sql.type(z.object({ amount_usd: z.number() }))`SELECT amount_usd FROM wallet_transactions WHERE call_id = ${callId} AND kind = 'call_debit'`);
const balance = (orgId: string) => s.db.oneFirst(sql.type(z.object({ balance_usd: z.number() }))`SELECT balance_usd FROM organizations WHERE id = ${orgId}`);
const callRow = (callId: string) =>
  s.db.one(sql.type(z.object({ recording_url: z.string().nullable(), transcript_url: z.string().nullable(), summary: z.string().nullable(), cost: z.number().nullable(), logs: z.any() }))`
    SELECT recording_url, transcript_url, summary, cost, logs FROM calls WHERE id = ${callId}`);

test.serial('a finished call: WAV, transcript file, cost, summary, one signed call.completed, one debit; a re-run changes nothing', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId } = await s.createOrg({ balanceUsd: 100 });
  const secret = 'whsec-post-call-test';
  const headers = { 'X-Tenant': 'acme', 'x-service-signature': 'spoofed-by-agent-config' };
  const agent = await insertAgent(s.db, orgId, { webhookUrl: `${receiver.url}/hooks`, secret, headers, summarize: true });
  const callId = await insertEndedCall(s.db, { orgId, agent, config: agentConfig({ webhookUrl: `${receiver.url}/hooks`, headers, summarize: true }) });
  const wav = makeWav(3, 24000);
  await s.storage.put(spoolRecordingKey(callId), wav);

  const result = await finishCall(callId, orgId, agent.uuid);
  const expectedCost = computeCost(USAGE, {}).total;
  t.true(expectedCost > 0);
  t.deepEqual(result, {
    callId,
    recordingUrl: `${s.config.cdnUrl}/recordings/${callId}.wav`,
    transcriptUrl: `${s.config.cdnUrl}/transcripts/${callId}.json`,
    cost: expectedCost,
    summary: SUMMARY,
    debited: true,
    callCompleted: 'sent',
    failedSteps: [],
  });

  // The recording is served at {cdn_url}, playable: same bytes, 24 kHz mono, 3 s.
  const rec = await fetch(result.recordingUrl!);
  t.is(rec.status, 200);
  t.is(rec.headers.get('content-type'), 'audio/wav');
  const recBytes = Buffer.from(await rec.arrayBuffer());
  t.true(recBytes.equals(wav));
  const info = parseWavHeader(recBytes, recBytes.length);
  t.is(info.sampleRate, 24000);
  t.is(info.channels, 1);
  t.is(info.durationSeconds, 3);
  t.false(await s.storage.exists(spoolRecordingKey(callId)), 'spool copy removed once published');

  const tr = await fetch(result.transcriptUrl!);
  t.is(tr.status, 200);
  const row = await s.db.one(sql.type(z.object({ transcript: z.any() }))`SELECT transcript FROM calls WHERE id = ${callId}`);
  t.deepEqual(await tr.json(), { messages: row.transcript });

  // The summary came from the agent's provider (fake OpenAI) with the agent's model and the transcript.
  const req = llm.requests.find((r) => JSON.stringify(r.body).includes('move my cleaning appointment'));
  t.truthy(req);
  t.is(req!.body.model, 'gpt-4o-mini');
  t.is(req!.headers.authorization, 'Bearer sk-test-key');

  // Exactly one call.completed, every field of the spec, signature over the raw bytes.
  const [event, ...extra] = await receiver.waitFor(1);
  t.is(extra.length, 0);
  t.deepEqual(Object.keys(event!.json).sort(), ['agentId', 'analysis', 'callId', 'connectionStatus', 'duration', 'endedReason', 'event', 'recordingUrl', 'summary', 'transcript', 'transcriptUrl', 'usage'].sort());
  t.is(event!.json.analysis, null, 'the agent asks for no analysis');
  t.like(event!.json, {
    event: 'call.completed', callId, agentId: agent.uuid, endedReason: 'user_hangup', connectionStatus: 'completed', duration: 42.5,
    recordingUrl: result.recordingUrl, transcriptUrl: result.transcriptUrl, summary: SUMMARY,
  });
  t.deepEqual(event!.json.usage, USAGE);
  t.deepEqual(event!.json.transcript, row.transcript);
  t.is(event!.headers['content-type'], 'application/json');
  t.is(event!.headers['x-tenant'], 'acme');
  t.is(event!.headers['x-service-signature'], signBody(secret, event!.raw));

  t.deepEqual(await ledger(callId), [{ amount_usd: -expectedCost }]);
  t.is(Math.round((await balance(orgId)) * 1e6), Math.round((100 - expectedCost) * 1e6));
  const logs = (await callRow(callId)).logs;
  t.is(logs.webhooks.length, 1);
  t.like(logs.webhooks[0], { event: 'call.completed', ok: true, status: 200 });

  // Media signalling again (or an operator re-running the workflow) sends nothing and debits nothing.
  const again = await finishCall(callId, orgId, agent.uuid);
  t.is(again.callCompleted, 'already_sent');
  t.false(again.debited);
  t.is(again.recordingUrl, result.recordingUrl);
  t.is(again.summary, SUMMARY);
  t.is(receiver.events.length, 1);
  t.is((await ledger(callId)).length, 1);

  // The history replays deterministically against today's workflow code.
  const history = await s.temporal!.client.workflow.getHandle(postCallWorkflowId(callId)).fetchHistory();
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history));
  if (process.env.RECORD_FIXTURES === '1') writeFileSync(FIXTURE, `${JSON.stringify(historyToObject(history), null, 1)}\n`);
});

test('the recorded post-call history in test/fixtures replays cleanly', async (t) => {
  t.true(existsSync(FIXTURE), 'fixture present (regenerate with RECORD_FIXTURES=1)');
  const history = History.fromObject(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  t.true((history.events?.length ?? 0) > 10);
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history, 'postCall-fixture'));
});

test('inline agent with local engines: unsigned event, extractive summary, no recording, zero cost and no debit', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId } = await s.createOrg({ balanceUsd: 10 });
  const config = { ...agentConfig({ webhookUrl: receiver.url, summarize: true, provider: 'local', model: 'demo' }), stt: { provider: 'local' }, tts: { provider: 'local' } };
  const usage = { llm: { provider: 'local', model: 'demo', prompt_tokens: 900, completion_tokens: 90 }, tts: { provider: 'local', model: 'espeak-ng', characters: 300 }, stt: { provider: 'local', model: 'vosk' } };
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config, usage, durationSeconds: 12.345 });

  const result = await finishCall(callId, orgId, null);
  t.is(result.recordingUrl, null);
  t.is(result.cost, 0);
  t.false(result.debited);
  t.deepEqual(result.failedSteps, []);
  const sentences = result.summary!.split(/(?<=[.!?])\s+/);
  t.true(sentences.length >= 3 && sentences.length <= 5, result.summary!);
  t.true(result.summary!.includes('move my cleaning appointment'));

  const [event] = await receiver.waitFor(1);
  t.is(event!.headers['x-service-signature'], undefined);
  t.like(event!.json, { event: 'call.completed', callId, agentId: null, recordingUrl: null, duration: 12.35, summary: result.summary });
  t.is(await balance(orgId), 10);
  t.deepEqual(await ledger(callId), []);
});

test('a failing recording upload leaves recordingUrl null and everything else intact', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId } = await s.createOrg({ balanceUsd: 50 });
  const agent = await insertAgent(s.db, orgId, { webhookUrl: receiver.url, secret: 'abc', summarize: true });
  const callId = await insertEndedCall(s.db, { orgId, agent, config: agentConfig({ webhookUrl: receiver.url, summarize: true }) });
  await s.storage.put(spoolRecordingKey(callId), makeWav(1));

  const result = await finishCall(callId, orgId, agent.uuid, FAILING_QUEUE);
  t.is(result.recordingUrl, null);
  t.deepEqual(result.failedSteps, ['recording']);
  t.is(result.transcriptUrl, `${s.config.cdnUrl}/transcripts/${callId}.json`);
  t.is(result.summary, SUMMARY);
  t.true(result.debited);
  const [event] = await receiver.waitFor(1);
  t.like(event!.json, { recordingUrl: null, transcriptUrl: result.transcriptUrl, summary: SUMMARY });
  const row = await callRow(callId);
  t.is(row.recording_url, null);
  t.regex(row.logs.post_call_errors[0].error, /simulated storage outage/);
  t.true(await s.storage.exists(spoolRecordingKey(callId)), 'spool copy kept for an operator');
});

test('a corrupt spool recording is not published; the rest completes', async (t) => {
  const { orgId } = await s.createOrg();
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config: agentConfig({ webhookUrl: null }) });
  await s.storage.put(spoolRecordingKey(callId), Buffer.from('definitely not a RIFF file'));
  const result = await finishCall(callId, orgId, null);
  t.is(result.recordingUrl, null);
  t.deepEqual(result.failedSteps, ['recording']);
  t.is(result.callCompleted, 'no_webhook');
  t.is(result.summary, null, 'enableSummarization false → no summary');
  const row = await callRow(callId);
  t.regex(row.logs.post_call_errors[0].error, /not a valid WAV/);
  t.false(await s.storage.exists(`recordings/${callId}.wav`));
});

test('a receiver answering 500 is recorded on the call logs; the workflow still completes', async (t) => {
  const receiver = await startReceiver({ status: 500 });
  t.teardown(() => receiver.close());
  const { orgId } = await s.createOrg();
  const callId = await insertEndedCall(s.db, { orgId, agent: null, config: agentConfig({ webhookUrl: receiver.url }) });
  const result = await finishCall(callId, orgId, null);
  t.is(result.callCompleted, 'failed');
  t.is(receiver.events.length, 1, 'one attempt, no retries');
  const row = await callRow(callId);
  t.like(row.logs.webhooks[0], { event: 'call.completed', ok: false, status: 500 });
});

test.serial('a worker killed mid-workflow and a new one started: exactly one call.completed and one debit', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId } = await s.createOrg({ balanceUsd: 100 });
  const agent = await insertAgent(s.db, orgId, { webhookUrl: receiver.url, secret: 'kill-secret', summarize: true });
  const callId = await insertEndedCall(s.db, { orgId, agent, config: agentConfig({ webhookUrl: receiver.url, summarize: true }) });
  await s.storage.put(spoolRecordingKey(callId), makeWav(2));

  // The summary request of this call is held open: the worker process is busy inside summarizeCall when killed.
  let heldOnce = false;
  let sawHeld!: () => void;
  const held = new Promise<void>((r) => { sawHeld = r; });
  llm.setHold(() => {
    if (heldOnce) return false;
    heldOnce = true;
    sawHeld();
    return true;
  });
  t.teardown(() => llm.setHold(null));

  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'activities/worker.ts'], {
    env: {
      ...process.env,
      LOG_LEVEL: 'silent',
      DATABASE_URL: s.config.DATABASE_URL,
      TEMPORAL_ADDRESS: s.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: KILL_QUEUE,
      DATA_DIR: s.config.DATA_DIR,
      SIGNING_SECRET: s.config.SIGNING_SECRET,
      PUBLIC_URL: s.config.publicUrl,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      OPENAI_BASE_URL: llm.baseUrl,
      OPENAI_API_KEY: 'sk-test-key',
    },
    stdio: 'ignore',
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });

  const done = finishCall(callId, orgId, agent.uuid, KILL_QUEUE);
  await held;
  child.kill('SIGKILL');
  await exited;
  t.is(receiver.events.length, 0, 'nothing sent before the crash');

  await runWorker(KILL_QUEUE);
  const result = await done;
  t.is(result.callCompleted, 'sent');
  t.is(result.summary, SUMMARY);
  t.true(result.debited);
  t.is(receiver.events.length, 1);
  t.is(event0(receiver).headers['x-service-signature'], signBody('kill-secret', event0(receiver).raw));
  const cost = computeCost(USAGE).total;
  t.deepEqual(await ledger(callId), [{ amount_usd: -cost }]);
  t.is(Math.round((await balance(orgId)) * 1e6), Math.round((100 - cost) * 1e6));
});

function event0(r: { events: Array<{ headers: Record<string, unknown>; raw: Buffer }> }) {
  return r.events[0]!;
}
