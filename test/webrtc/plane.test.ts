// The WebRTC media-plane thread (WEBRTC_MEDIA_THREAD=1, media/webrtc/plane.ts): every peer of the media process on
// one worker thread, the pipeline on the main thread. The callers run in a child process (remote-caller.ts): this
// process's only node-datachannel user must be the plane thread (a second thread loading the addon aborts the
// process, which is also what these tests would show if the main thread loaded it). Checked: a full call (greeting
// as Opus RTP, caller audio to the STT, events both ways on the data channel, hang-up, transcript, recording, the
// RTP counters the plane keeps in shared memory reaching /metrics), trickle ICE with a bad candidate refused,
// renegotiation by pc_id, a peer that never connects, and a fault on the plane thread mid-call.
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall } from '../helpers/calls.ts';
import { ScenarioBook } from '../media/session/scenarios.ts';
import { CallerProcess, type RemoteCaller } from './remote-caller.ts';
import { z } from 'zod';
import { until } from '../helpers/wait.ts';

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };
let callers: CallerProcess;

test.before(async () => {
  s = await startTestServer({ env: { WEBRTC_MEDIA_THREAD: '1', WEBRTC_CONNECT_TIMEOUT_S: '3' }, media: { engines: book.factory } });
  org = await s.createOrg();
  callers = new CallerProcess();
});
test.after.always(async () => {
  callers?.close();
  await s?.close();
});

const offerPath = (id: string) => `/webrtc/offer/${id}`;
const pending = (over: Record<string, unknown> = {}) => insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig(over), transport: 'webrtc' });

async function connect(callId: string): Promise<{ c: RemoteCaller; pcId: string }> {
  const c = await callers.caller();
  const res = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.offer({ trickle: true }), type: 'offer' } });
  if (res.status !== 200) throw new Error(`offer: ${res.status} ${JSON.stringify(res.body)}`);
  await c.accept(res.body.sdp);
  await c.gathered();
  const candidates = (await c.state()).localCandidates.map((x) => ({ candidate: x.candidate, sdpMid: x.mid }));
  const p = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: candidates, pc_id: res.body.pc_id } });
  if (p.status !== 200) throw new Error(`PATCH ${p.status} ${JSON.stringify(p.body)}`);
  await until(async () => (await c.state()).state === 'connected', { what: 'peer connected', timeoutMs: 10_000 });
  return { c, pcId: res.body.pc_id };
}

async function rtpCounters(): Promise<{ sent: number; received: number }> {
  const text = await (await fetch(`${s.origin}/metrics`)).text();
  const read = (dir: string) => Number(new RegExp(`^voice_webrtc_rtp_packets_total\\{direction="${dir}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { sent: read('sent'), received: read('received') };
}

test.serial('a full call with the peer on the media-plane thread: greeting, caller audio to the STT, events, hang-up, recording, counters', async (t) => {
  t.truthy(s.combined.media.webrtc.plane, 'the plane is on');
  const plane = s.combined.media.webrtc.plane!;
  t.deepEqual(await plane.stalls(), [], "the first request starts the thread's stall watch");
  const name = book.add({ stt: { utterances: ['what are your opening hours'] }, llm: [{ text: 'We are open from nine to five.' }] });
  const callId = await pending({ name });
  const before = await rtpCounters();
  const { c } = await connect(callId);
  t.is((await getCallRow(s.db, callId)).status, 'active');
  await until(async () => (await c.state()).events.some((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?'), { what: 'greeting text', timeoutMs: 15_000 });
  await until(async () => (await c.state()).audioSeconds > 0.8, { what: 'greeting audio', timeoutMs: 15_000 });
  const greeted = await c.state();
  t.deepEqual(greeted.payloadTypes, [111]);
  t.true(greeted.rms > 300, `greeting is audible after Opus decoding (rms ${greeted.rms.toFixed(0)})`);
  await until(async () => { const st = await c.state(); return st.lastPacketAt > 0 && Date.now() - st.lastPacketAt > 300; }, { what: 'greeting to end', timeoutMs: 15_000 });
  const greetingAudio = (await c.state()).audioSeconds;

  await c.send(900, true);
  await c.send(400, false);
  const final = await until(async () => (await c.state()).events.find((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true), { what: 'final transcription', timeoutMs: 15_000 });
  t.is(final.payload!.text, 'what are your opening hours');
  t.deepEqual(book.engines(name).engines.stt.finals, ['what are your opening hours']);
  await until(async () => (await c.state()).audioSeconds > greetingAudio, { what: 'reply audio to start', timeoutMs: 15_000 });
  await until(async () => Date.now() - (await c.state()).lastPacketAt > 400, { what: 'reply audio to end', timeoutMs: 15_000 });
  // the plane thread counts into shared memory; /metrics on the main thread reads it
  const after = await rtpCounters();
  t.true(after.sent - before.sent >= 40, `agent packets counted (${after.sent - before.sent})`);
  t.true(after.received - before.received >= 60, `caller packets counted (${after.received - before.received})`);

  // the thread's stall watch (bench/webrtc's): a loop held for 150 ms is one stall, on the epoch clock. The call's
  // own stalls so far are taken first: on a loaded machine the thread stalls ≥ 40 ms now and then by itself,
  // and only the stall that covers the hold is the hold's.
  await plane.stalls();
  const heldAt = Date.now();
  plane.block(150);
  const stalls = await until(async () => {
    const x = (await plane.stalls()).filter(([at, ms]) => at <= heldAt + 150 && at + ms >= heldAt);
    return x.length ? x : null;
  }, { what: 'the stall', timeoutMs: 5000 });
  t.is(stalls.length, 1);
  t.true(stalls[0]![1] >= 100 && Math.abs(stalls[0]![0] - heldAt) < 1000, `the 150 ms hold (${stalls[0]![1].toFixed(0)} ms)`);

  await c.hangup();
  const ended = await endedRow(s.db, callId);
  t.is(ended.status, 'completed');
  t.is(ended.ended_reason, 'user_hangup');
  t.deepEqual(ended.transcript.map((e: { role: string; content: string }) => [e.role, e.content]), [
    ['assistant', 'Hello, how can I help?'],
    ['user', 'what are your opening hours'],
    ['assistant', 'We are open from nine to five.'],
  ]);
  const wav = await until(() => s.storage.get?.(`spool/recordings/${callId}.wav`).catch(() => null) ?? null, { what: 'recording', timeoutMs: 5000 });
  t.true((wav as Buffer).length > 44 + 32_000, 'the recording holds the call');
  await until(async () => (await c.state()).dcClosed, { what: 'data channel closed by the server', timeoutMs: 5000 });
});

test.serial('trickle ICE refuses a bad candidate; renegotiation by pc_id answers on the same peer and the call goes on', async (t) => {
  const name = book.add({ llm: [] });
  const callId = await pending({ name });
  const { c, pcId } = await connect(callId);
  await until(async () => (await c.state()).audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 15_000 });
  const bad = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: 'candidate:1 1 UDP nonsense', pc_id: pcId } });
  t.is(bad.status, 400);
  t.is(bad.body.detail, 'Invalid ICE candidate');
  const dup = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await (await callers.caller()).offer(), type: 'offer' } });
  t.is(dup.status, 409);

  const re = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.reoffer(), type: 'offer', pc_id: pcId } });
  t.is(re.status, 200, JSON.stringify(re.body));
  t.is(re.body.pc_id, pcId);
  t.regex(re.body.sdp, /a=rtpmap:111 opus\/48000\/2/);
  await c.accept(re.body.sdp);
  const events = (await c.state()).events.length;
  await c.send(600, true);
  await c.send(400, false);
  await until(async () => (await c.state()).events.length > events, { what: 'events after renegotiation', timeoutMs: 10_000 });
  t.is((await c.state()).state, 'connected');
  await c.close();
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');
});

test.serial('a peer that never connects ends no_participant', async (t) => {
  const callId = await pending({ name: book.add({}) });
  const c = await callers.caller();
  const res = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.offer(), type: 'offer' } });
  t.is(res.status, 200);
  const ended = await endedRow(s.db, callId, 15_000);
  t.is(ended.status, 'error');
  t.is(ended.connection_status, 'no_participant');
  t.is(ended.ended_reason, null);
});

test.serial('a fault on the plane thread ends its calls as pipeline_error; the thread goes on and takes the next call', async (t) => {
  const plane = s.combined.media.webrtc.plane!;
  const callId = await pending({ name: book.add({ llm: [] }) });
  const { c } = await connect(callId);
  await until(async () => (await c.state()).audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 15_000 });
  const thread = plane.threadId;
  plane.crash();
  const ended = await endedRow(s.db, callId);
  t.is(ended.status, 'error');
  t.is(ended.ended_reason, 'pipeline_error');
  t.is(ended.connection_status, 'completed');

  const next = await pending({ name: book.add({}) });
  const again = await connect(next);
  await until(async () => (await again.c.state()).audioSeconds > 0.3, { what: 'greeting audio after the fault', timeoutMs: 15_000 });
  t.is(plane.threadId, thread, 'the same thread');
  await again.c.hangup();
  t.is((await endedRow(s.db, next)).ended_reason, 'user_hangup');
  const live = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE status = 'active'`);
  t.is(live, 0);
});
