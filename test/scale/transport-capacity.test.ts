// Backpressure on every live transport (media/admission.ts): with MEDIA_MAX_CALLS=1 and one call on the node, a
// WebSocket join closes 1013, a WebRTC offer answers 503 and a Twilio media stream (valid token) closes 1013, all
// with 'Media node at capacity', counted in voice_media_joins_refused_total, and leave the refused call's row as it
// was (pending). An answered WebRTC peer that has not connected yet already counts (load, media_nodes); renegotiating
// the live peer is never refused; once the call ends the same offer is answered; a peer that never connects frees
// its slot.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { streamToken } from '../../core/telephony/signing.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { ScenarioBook } from '../media/session/scenarios.ts';
import { FakeCarrierStream } from '../fakes/twilio-media.ts';
import { WebRtcCaller } from '../webrtc/peer.ts';
import { until } from '../helpers/wait.ts';

const AT_CAPACITY = 'Media node at capacity';
const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };
const callers: WebRtcCaller[] = [];

test.before(async () => {
  s = await startTestServer({ env: { MEDIA_MAX_CALLS: '1', WEBRTC_CONNECT_TIMEOUT_S: '3' }, media: { engines: book.factory } });
  org = await s.createOrg({ concurrency: 10 });
});
test.after.always(async () => {
  for (const c of callers) c.close();
  await s?.close();
});

function caller(): WebRtcCaller {
  const c = new WebRtcCaller();
  callers.push(c);
  return c;
}

const offer = (callId: string, body: Record<string, unknown>) => s.request('POST', `/webrtc/offer/${callId}`, { key: org.apiKey, body });
const load = () => s.combined.media.load().activeCalls;
/** the whole row, to show a refusal left it untouched */
const rowJson = (id: string) => s.db.oneFirst(sql.type(z.object({ j: z.string() }))`SELECT to_jsonb(c)::text AS j FROM calls c WHERE id = ${id}`);
const refusedCount = async () => {
  const text = await (await fetch(`${s.origin}/metrics`)).text();
  return Number(/voice_media_joins_refused_total\{reason="capacity"\} (\d+)/.exec(text)?.[1] ?? 0);
};
const nodeCalls = () => s.db.maybeOneFirst(sql.type(z.object({ active_calls: z.number() }))`SELECT active_calls FROM media_nodes`);

async function trickle(c: WebRtcCaller, callId: string): Promise<void> {
  await c.trickleAfterAnswer(async (candidates) => {
    const r = await s.request('PATCH', `/webrtc/offer/${callId}`, { key: org.apiKey, body: { candidate: candidates } });
    if (r.status !== 200) throw new Error(`PATCH ${r.status} ${JSON.stringify(r.body)}`);
  });
}

test.serial('at capacity every transport refuses a new call and leaves its row pending; freed capacity accepts it', async (t) => {
  const refusedBefore = await refusedCount();
  const webCall = () => insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: book.add({ llm: [] }) }), transport: 'webrtc' });

  // call A: answered, not connected yet — it already takes the node's one slot
  const a = await webCall();
  const ca = caller();
  const answered = await offer(a, { sdp: await ca.offer({ trickle: true }), type: 'offer' });
  t.is(answered.status, 200, JSON.stringify(answered.body));
  t.is(load(), 1, 'an answered peer waiting to connect counts toward capacity');
  t.is(await until(async () => ((await nodeCalls()) === 1 ? 1 : null), { what: 'media_nodes to report the joining peer', timeoutMs: 10_000 }), 1);
  const wsCall = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: book.add({ llm: [] }) }) });
  const ws = TestCaller.connect(s.origin, wsCall, org.apiKey);
  t.deepEqual(await ws.closed, { code: 1013, reason: AT_CAPACITY });
  t.is((await getCallRow(s.db, wsCall)).status, 'pending');

  // A connects and runs: still one call
  ca.accept(answered.body.sdp);
  await trickle(ca, a);
  await until(() => ca.audioSeconds > 0.3, { what: 'greeting audio of call A', timeoutMs: 15_000 });
  t.is(load(), 1);
  t.is(s.combined.media.activeCalls(), 1);

  // renegotiating the live peer is never refused
  ca.pc.setLocalDescription('offer');
  const re = await offer(a, { sdp: ca.pc.localDescription()!.sdp, type: 'offer', pc_id: answered.body.pc_id });
  t.is(re.status, 200, JSON.stringify(re.body));
  ca.accept(re.body.sdp);

  // (a) a WebRTC offer for another call: 503, nothing claimed
  const b = await webCall();
  const bBefore = await rowJson(b);
  const cb = caller();
  const bOffer = { sdp: await cb.offer({ trickle: true }), type: 'offer' };
  const refused = await offer(b, bOffer);
  t.is(refused.status, 503);
  t.deepEqual(refused.body, { detail: AT_CAPACITY });
  t.is(await rowJson(b), bBefore, 'the refused WebRTC call row is unchanged (pending)');
  t.is((await getCallRow(s.db, b)).status, 'pending');

  // (b) a Twilio media stream with a valid token: 1013 before anything is claimed
  const phone = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: book.add({ llm: [] }) }), transport: 'outbound' });
  await s.db.query(sql.type(z.object({}))`UPDATE calls SET telephony_provider = 'twilio' WHERE id = ${phone}`);
  const phoneBefore = await rowJson(phone);
  const stream = FakeCarrierStream.connect(`${s.origin.replace(/^http/, 'ws')}/api/v1/telephony/twilio/stream/${phone}`, {
    callSid: 'CAcapacity0000000000000000000000',
    customParameters: { token: streamToken(s.config, phone) },
  });
  t.deepEqual(await stream.closed, { code: 1013, reason: AT_CAPACITY });
  t.is(await rowJson(phone), phoneBefore, 'the refused phone call row is unchanged (pending)');
  t.is(await refusedCount(), refusedBefore + 3, 'WebSocket, WebRTC and carrier refusals are counted');
  t.is(load(), 1, 'refused joins leave nothing counted');

  // A hangs up: the slot is free, the same offer for B is answered and B runs
  ca.hangup();
  t.is((await endedRow(s.db, a)).ended_reason, 'user_hangup');
  await until(() => load() === 0, { what: 'the slot to be free', timeoutMs: 10_000 });
  const accepted = await offer(b, bOffer);
  t.is(accepted.status, 200, JSON.stringify(accepted.body));
  t.is((await getCallRow(s.db, b)).status, 'active');
  cb.accept(accepted.body.sdp);
  await trickle(cb, b);
  await until(() => cb.audioSeconds > 0.3, { what: 'greeting audio of call B', timeoutMs: 15_000 });
  cb.hangup();
  t.is((await endedRow(s.db, b)).ended_reason, 'user_hangup');
  await until(() => load() === 0, { what: 'the slot to be free again', timeoutMs: 10_000 });

  // a peer that is answered and never connects holds the slot until it ends no_participant
  const d = await webCall();
  const never = await offer(d, { sdp: await caller().offer(), type: 'offer' });
  t.is(never.status, 200);
  t.is(load(), 1);
  t.is((await offer(await webCall(), { sdp: await caller().offer(), type: 'offer' })).status, 503);
  t.is((await endedRow(s.db, d, 15_000)).connection_status, 'no_participant');
  t.is(load(), 0, 'a peer that never connected frees its slot');
});
