// transferRecording workflow on the real Temporal dev server against a local fake carrier recording server:
// success after the carrier's file becomes available, and each failure reason; the event always follows
// call.completed. Short retry windows come through the workflow input.
import test from 'ava';
import type http from 'node:http';
import { Worker } from '@temporalio/worker';
import { workflowsPath } from '../../activities/worker.ts';
import { type Storage } from '../../core/storage/index.ts';
import { parseWavHeader } from '../../core/audio/wav.ts';
import { signBody } from '../../core/webhook.ts';
import { callEndedSignal, postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import type { postCallWorkflow } from '../../workflows/post-call/workflow.ts';
import { transferRecordingWorkflowId, type TransferRecordingInput } from '../../workflows/transfer-recording/messages.ts';
import type { transferRecordingWorkflow } from '../../workflows/transfer-recording/workflow.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { agentConfig, insertAgent, insertEndedCall, makeWav } from './helpers.ts';
import { listen, startReceiver } from '../helpers/http.ts';

const QUEUE = 'transfer-recording-test';
const FAILING_QUEUE = 'transfer-recording-test-failing-storage';
const TRANSFER = { transferId: 'tr_123', destination: '+14155550100', carrierCallId: 'CA0123456789abcdef' };
const SHORT = { windowS: 4, initialIntervalS: 1, maximumIntervalS: 1 };

let s: TestServer;
let carrier: Awaited<ReturnType<typeof listen>>;
/** path → handler; every request is counted. */
const routes = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();
const hits = new Map<string, number>();
const workers: RunningWorker[] = [];

async function runWorker(taskQueue: string, storage?: Storage) {
  workers.push(await startTestWorker(s, taskQueue, storage ? { storage } : {}));
}

test.before(async () => {
  carrier = await listen((req, res) => {
    const p = (req.url ?? '').split('?')[0]!;
    hits.set(p, (hits.get(p) ?? 0) + 1);
    const h = routes.get(p);
    if (h) h(req, res);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":20404,"message":"The requested resource was not found"}');
  });
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1' } });
  await runWorker(QUEUE);
  await runWorker(FAILING_QUEUE, {
    ...s.storage,
    async put(key, body, opts) {
      if (key.includes('-transfer.')) {
        (body as { destroy?: () => void }).destroy?.();
        throw new Error('simulated storage outage');
      }
      return s.storage.put(key, body, opts);
    },
  });
});

test.after.always(async () => {
  for (const w of workers) await w.close();
  await s?.close();
  await carrier?.close();
});

async function setup(t: { teardown(f: () => void): void }) {
  const receiver = await startReceiver();
  t.teardown(() => void receiver.close());
  const { orgId } = await s.createOrg();
  const agent = await insertAgent(s.db, orgId, { webhookUrl: receiver.url, secret: 'transfer-secret' });
  const callId = await insertEndedCall(s.db, { orgId, agent, config: agentConfig({ webhookUrl: receiver.url }), endedReason: 'transferred' });
  return { receiver, callId, agent };
}

async function runPostCall(callId: string) {
  const h = await s.temporal!.client.workflow.signalWithStart<typeof postCallWorkflow, [{ callId: string }]>('postCallWorkflow', {
    workflowId: postCallWorkflowId(callId), taskQueue: QUEUE, args: [{ callId }], signal: callEndedSignal, signalArgs: [{ callId }],
  });
  return h.result();
}

function startTransfer(input: TransferRecordingInput, taskQueue = QUEUE) {
  return s.temporal!.client.workflow.start<typeof transferRecordingWorkflow>('transferRecordingWorkflow', {
    workflowId: transferRecordingWorkflowId(input.callId), taskQueue, args: [input],
  });
}

test('success: carrier file not ready at first (404), then downloaded, re-hosted and announced after call.completed', async (t) => {
  const { receiver, callId, agent } = await setup(t);
  const wav = makeWav(2.5, 8000);
  const file = `/Recordings/RE-${callId}.wav`;
  let calls = 0;
  routes.set(file, (req, res) => {
    calls += 1;
    if (calls === 1) return void res.writeHead(404).end();
    t.is(req.headers.authorization, 'Basic QUM6c2VjcmV0');
    res.writeHead(200, { 'content-type': 'audio/x-wav', 'content-length': String(wav.length) }).end(wav);
  });
  // Started before post-processing ran: the event must still come after call.completed.
  const handle = await startTransfer({
    callId, telephonyProvider: 'twilio', transfer: TRANSFER,
    recording: { url: `${carrier.url}${file}`, headers: { authorization: 'Basic QUM6c2VjcmV0' } },
    retry: { windowS: 60, initialIntervalS: 1, maximumIntervalS: 1 },
  });
  await runPostCall(callId);
  const outcome = await handle.result();
  const url = `${s.config.cdnUrl}/recordings/${callId}-transfer.wav`;
  t.deepEqual(outcome, { event: 'call.transfer_recording.completed', recordingUrl: url, durationSeconds: 2.5 });
  t.true(calls >= 2);

  const events = await receiver.waitFor(2);
  t.deepEqual(events.map((e) => e.json.event), ['call.completed', 'call.transfer_recording.completed']);
  const ev = events[1]!;
  t.deepEqual(ev.json, {
    event: 'call.transfer_recording.completed', callId, agentId: agent.uuid, recordingUrl: url, durationSeconds: 2.5,
    telephonyProvider: 'twilio', transfer: TRANSFER,
  });
  t.is(ev.headers['x-service-signature'], signBody('transfer-secret', ev.raw));
  const res = await fetch(url);
  t.is(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  t.true(bytes.equals(wav));
  t.is(parseWavHeader(bytes, bytes.length).sampleRate, 8000);
  t.false(url.startsWith(carrier.url), 'never a carrier URL');
  // The history (with its retried download) replays deterministically.
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory()));
});

test('no_recording: the carrier produced no file (no locator, or an empty file)', async (t) => {
  for (const recording of [null, 'empty'] as const) {
    const { receiver, callId } = await setup(t);
    let locator: TransferRecordingInput['recording'] = null;
    if (recording === 'empty') {
      const file = `/Recordings/empty-${callId}.wav`;
      routes.set(file, (_req, res) => void res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': '0' }).end());
      locator = { url: `${carrier.url}${file}` };
    }
    await runPostCall(callId);
    const outcome = await (await startTransfer({ callId, telephonyProvider: 'twilio', transfer: TRANSFER, recording: locator, retry: SHORT })).result();
    t.deepEqual(outcome, { event: 'call.transfer_recording.failed', reason: 'no_recording' });
    const events = await receiver.waitFor(2);
    t.deepEqual(events[1]!.json, { event: 'call.transfer_recording.failed', callId, agentId: events[0]!.json.agentId, reason: 'no_recording', telephonyProvider: 'twilio', transfer: TRANSFER });
  }
});

test('download_failed: the file never becomes downloadable within the retry window', async (t) => {
  const { receiver, callId } = await setup(t);
  const file = `/Recordings/missing-${callId}.wav`;
  await runPostCall(callId);
  const outcome = await (await startTransfer({ callId, telephonyProvider: 'twilio', transfer: TRANSFER, recording: { url: `${carrier.url}${file}` }, retry: SHORT })).result();
  t.deepEqual(outcome, { event: 'call.transfer_recording.failed', reason: 'download_failed' });
  t.true((hits.get(file) ?? 0) >= 2, 'retried');
  const events = await receiver.waitFor(2);
  t.like(events[1]!.json, { event: 'call.transfer_recording.failed', reason: 'download_failed', transfer: TRANSFER });
  t.is(events.length, 2);
});

test('storage_failed: downloaded but our storage refuses it', async (t) => {
  const { receiver, callId } = await setup(t);
  const file = `/Recordings/ok-${callId}.wav`;
  const wav = makeWav(1, 8000);
  routes.set(file, (_req, res) => void res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav));
  await runPostCall(callId);
  // a window longer than the activity's three store attempts (about 3 s of backoff), so that only the store fails
  const outcome = await (await startTransfer({ callId, telephonyProvider: 'twilio', transfer: TRANSFER, recording: { url: `${carrier.url}${file}` }, retry: { ...SHORT, windowS: 30 } }, FAILING_QUEUE)).result();
  t.deepEqual(outcome, { event: 'call.transfer_recording.failed', reason: 'storage_failed' });
  t.is(hits.get(file), 1, 'a storage failure is not a reason to download again');
  const events = await receiver.waitFor(2);
  t.like(events[1]!.json, { event: 'call.transfer_recording.failed', reason: 'storage_failed' });
});

test('a second run for the same call sends no second transfer event', async (t) => {
  const { receiver, callId } = await setup(t);
  await runPostCall(callId);
  const input: TransferRecordingInput = { callId, telephonyProvider: null, transfer: { transferId: null, destination: null, carrierCallId: null }, recording: null, retry: SHORT };
  await (await startTransfer(input)).result();
  await (await startTransfer(input)).result();
  await receiver.waitFor(2);
  t.is(receiver.events.filter((e) => e.json.event.startsWith('call.transfer_recording')).length, 1);
});
