// A transferred Twilio call whose transfer was recorded: the call update carries <Dial record=…> with our
// recording callback; the signed recording callback starts the transfer-recording workflow exactly once (real
// Temporal + worker), which downloads the file from the fake Twilio with the account's Basic auth, re-hosts it and
// sends call.transfer_recording.completed; an `absent` recording ends in call.transfer_recording.failed/no_recording.
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { callCarrier } from '../../core/telephony/store.ts';
import { carrierHookUrl } from '../../core/telephony/urls.ts';
import { callEndedSignal, postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import { FakeTwilio, parseTwiml } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startReceiver } from '../helpers/http.ts';
import { fakeEnv, inlineAgent } from './rest-helpers.ts';
import { until } from '../helpers/wait.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const QUEUE = 'telephony-transfer-recording-test';
let s: TestServer;
let twilio: FakeTwilio;
let worker: RunningWorker | null = null;

test.before(async () => {
  twilio = await FakeTwilio.start();
  s = await startTestServer({ env: { ...fakeEnv(twilio), TEMPORAL_TASK_QUEUE: QUEUE } });
  worker = await startTestWorker(s, QUEUE);
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await twilio?.close();
});

/** Dial, answer, and do what the media side does on a recorded transfer; then end the row `transferred`. */
async function transferredCall(hookUrl: string) {
  const { apiKey: key } = await s.createOrg();
  const acc = twilio.addAccount();
  twilio.addNumber(acc.sid, '+14155550100');
  const r = await s.request('POST', '/call', {
    key,
    body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, toNumber: '+14155550199', agent: inlineAgent({ webhook: { url: hookUrl } }) },
  });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  const callId: string = r.body.callId;
  const sid: string = r.body.carrierCallId;
  await twilio.answer(sid);
  await s.db.query(sql.unsafe`UPDATE calls SET status = 'active', started_at = now(), connection_status = 'completed' WHERE id = ${callId}`);
  const carrier = await callCarrier(s.db, s.config, callId);
  await s.db.query(sql.unsafe`UPDATE calls SET logs = logs || ${JSON.stringify({ transfer: { transferId: 'tr-1', destination: '+14155550123' } })}::jsonb WHERE id = ${callId}`);
  await carrier!.adapter.transfer({ config: s.config }, carrier!.creds, carrier!.carrierCallId!, {
    destination: '+14155550123', timeoutS: 30, recordingCallbackUrl: carrierHookUrl(s.config, 'twilio', 'recording', callId), callerId: null,
  });
  await s.db.query(sql.unsafe`
    UPDATE calls SET status = 'completed', ended_reason = 'transferred', ended_at = now(), duration_seconds = 3 WHERE id = ${callId}`);
  await s.temporal!.client.workflow.signalWithStart('postCallWorkflow', {
    workflowId: postCallWorkflowId(callId), taskQueue: QUEUE, args: [{ callId }], signal: callEndedSignal, signalArgs: [{ callId }],
  });
  return { callId, sid, acc };
}

test('recorded transfer: <Dial record> TwiML, recording callback → call.transfer_recording.completed with our copy', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => void receiver.close());
  const { callId, sid } = await transferredCall(receiver.url);
  const call = twilio.calls.get(sid)!;
  const dial = parseTwiml(call.updates[0]!).dial!;
  t.is(dial.number, '+14155550123');
  t.like(dial.attrs, { record: 'record-from-answer-dual', recordingStatusCallback: `${s.baseUrl}/telephony/twilio/recording/${callId}` });

  const cb = await twilio.recordingCallback(sid, { status: 'completed', durationS: 1 });
  t.is(cb.status, 204);
  const again = await twilio.recordingCallback(sid, { status: 'completed', durationS: 1 });
  t.is(again.status, 204, 'a repeated callback is accepted and starts nothing new');
  const events = await until(() => {
    const evs = receiver.events.map((e) => e.json as { event: string; callId: string; recordingUrl?: string; transfer?: unknown; telephonyProvider?: string });
    return evs.find((e) => e.event === 'call.transfer_recording.completed') ? evs : null;
  }, { what: 'call.transfer_recording.completed', timeoutMs: 60_000 });
  const done = events.find((e) => e.event === 'call.transfer_recording.completed')!;
  t.like(done, { callId, telephonyProvider: 'twilio', transfer: { transferId: 'tr-1', destination: '+14155550123', carrierCallId: sid } });
  t.true(done.recordingUrl!.startsWith(s.config.cdnUrl));
  t.is(events.filter((e) => e.event.startsWith('call.transfer_recording.')).length, 1);
  // The download used the account's credentials.
  const downloads = twilio.requests.filter((q) => q.path.includes('/Recordings/'));
  t.true(downloads.length >= 1 && downloads.every((q) => q.authorized));
});

test('absent recording → call.transfer_recording.failed (no_recording); forged callback → 403', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => void receiver.close());
  const { callId, sid, acc } = await transferredCall(receiver.url);
  const forged = await twilio.webhook(acc.sid, `${s.baseUrl}/telephony/twilio/recording/${callId}`, { CallSid: sid, RecordingStatus: 'completed', RecordingUrl: 'http://127.0.0.1:1/x' }, 'not-the-token');
  t.is(forged.status, 403);
  t.is((await twilio.recordingCallback(sid, { status: 'absent' })).status, 204);
  const failed = await until(() => receiver.events.map((e) => e.json as { event: string; reason?: string; callId: string }).find((e) => e.event === 'call.transfer_recording.failed'), { what: 'call.transfer_recording.failed', timeoutMs: 60_000 });
  t.like(failed, { callId, reason: 'no_recording' });
});

test('a never-connected phone call still gets call.completed from the post-call workflow, after call.ended', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => void receiver.close());
  const { apiKey: key } = await s.createOrg();
  const acc = twilio.addAccount();
  const r = await s.request('POST', '/call', {
    key,
    body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, toNumber: '+14155550199', agent: inlineAgent({ webhook: { url: receiver.url } }) },
  });
  t.is(r.status, 200);
  await twilio.finish(r.body.carrierCallId, 'busy');
  const events = await receiver.waitFor(2, 60_000);
  const names = events.map((e) => (e.json as { event: string }).event);
  t.deepEqual(names, ['call.ended', 'call.completed']);
  t.like(events[1]!.json, { callId: r.body.callId, endedReason: null, connectionStatus: 'busy', recordingUrl: null });
});
