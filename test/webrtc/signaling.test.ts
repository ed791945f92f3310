// WebRTC signaling and media with a non-browser peer (node-datachannel as the caller): answer SDP, greeting as
// Opus RTP, caller audio reaching STT, rtf-* events on the data channel, trickle ICE via PATCH, 409 on a duplicate
// offer, pc_id renegotiation, no_participant when the peer never connects, 404/401/422 rules, telephonySim, and an
// exception inside a node-datachannel callback ending only its call.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall } from '../helpers/calls.ts';
import { ScenarioBook } from '../media/session/scenarios.ts';
import { setRtpArrivalProbe } from '../../media/stage-cpu.ts';
import { JitterBuffer } from '../../media/webrtc/jitter.ts';
import { WebRtcCaller } from './peer.ts';
import { until } from '../helpers/wait.ts';

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };
const callers: WebRtcCaller[] = [];

test.before(async () => {
  s = await startTestServer({ env: { WEBRTC_CONNECT_TIMEOUT_S: '3' }, media: { engines: book.factory } });
  org = await s.createOrg();
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

const offerPath = (id: string) => `/webrtc/offer/${id}`;

async function pending(over: Record<string, unknown> = {}, transport = 'webrtc') {
  return insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig(over), transport });
}

/** The page's order: offer, answer, then the caller's candidates by PATCH. */
async function trickle(c: WebRtcCaller, callId: string) {
  await c.trickleAfterAnswer(async (candidates) => {
    const r = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: candidates } });
    if (r.status !== 200) throw new Error(`PATCH ${r.status} ${JSON.stringify(r.body)}`);
  });
}

async function connect(callId: string, c = caller()) {
  const res = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.offer({ trickle: true }), type: 'offer' } });
  if (res.status !== 200) throw new Error(`offer: ${res.status} ${JSON.stringify(res.body)}`);
  c.accept(res.body.sdp);
  await trickle(c, callId);
  await until(() => c.state === 'connected', { what: 'peer connected', timeoutMs: 10_000 });
  return { c, answer: res.body as { sdp: string; type: string; pc_id: string; iceServers: unknown[] } };
}

const tags = (id: string) => s.db.oneFirst(sql.type(z.object({ tags: z.array(z.string()) }))`SELECT tags FROM calls WHERE id = ${id}`);

test('a full call: answer SDP, greeting as Opus RTP, caller audio reaches STT, events on the data channel, hang-up', async (t) => {
  const name = book.add({ stt: { utterances: ['what are your opening hours'] }, llm: [{ text: 'We are open from nine to five.' }] });
  const callId = await pending({ name }, 'web'); // POST /call stores browser calls as `web`
  const c = caller();
  const res = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.offer({ trickle: true }), type: 'offer' } });
  t.is(res.status, 200);
  t.is(res.body.type, 'answer');
  t.regex(res.body.pc_id, /^[0-9a-f-]{36}$/);
  t.deepEqual(res.body.iceServers, []);
  const sdp: string = res.body.sdp;
  t.regex(sdp, /m=audio \d+ UDP\/TLS\/RTP\/SAVPF 111/);
  t.regex(sdp, /a=rtpmap:111 opus\/48000\/2/);
  // the caller's audio is decoded to 16 kHz: the browser is told so, and caps its encoder at wideband
  t.regex(sdp, /a=fmtp:111 [^\r\n]*maxplaybackrate=16000/);
  t.regex(sdp, /a=sendrecv/);
  t.regex(sdp, /m=application \d+ UDP\/DTLS\/SCTP webrtc-datachannel/);
  t.regex(sdp, /a=candidate:/);
  t.regex(sdp, /a=setup:active/);
  // the first offer claims the row
  t.is((await getCallRow(s.db, callId)).status, 'active');

  c.accept(sdp);
  t.is(c.remotePlaybackRate, 16_000);
  t.is(c.enc.settings().maxBandwidth, 'wideband');
  await trickle(c, callId);
  await until(() => c.events.some((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?'), { what: 'greeting text', timeoutMs: 15_000 });
  await until(() => c.audioSeconds > 0.8, { what: 'greeting audio', timeoutMs: 15_000 });
  t.deepEqual([...c.payloadTypes], [111]);
  t.true(c.rms > 300, `greeting is audible after Opus decoding (rms ${c.rms.toFixed(0)})`);
  const row = await getCallRow(s.db, callId);
  t.truthy(row.started_at);

  // wait for the greeting to finish, then speak
  await until(() => c.lastPacketAt > 0 && Date.now() - c.lastPacketAt > 300, { what: 'greeting to end', timeoutMs: 15_000 });
  const greetingAudio = c.audioSeconds;
  // the benchmark's probe (bench/webrtc's ingress figure) sees each caller packet as it reaches the main thread,
  // per call, with its RTP timestamp
  const arrived = new Map<object, number[]>();
  setRtpArrivalProbe((stream, ts) => {
    if (!arrived.has(stream)) arrived.set(stream, []);
    arrived.get(stream)!.push(ts);
  });
  await c.send(900, true);
  await c.send(400, false);
  setRtpArrivalProbe(null);
  const steps = [...arrived.values()].filter((ts) => ts.length >= 60).map((ts) => ts.slice(1).map((x, i) => (x - ts[i]!) >>> 0));
  t.true(steps.some((d) => d.every((x) => x === 960)), 'this call\'s 65 packets, 20 ms (960 ticks at 48 kHz) apart');
  const final = await until(() => c.events.find((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true), { what: 'final transcription', timeoutMs: 15_000 });
  t.is(final.payload!.text, 'what are your opening hours');
  await until(() => c.events.some((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'We are open from nine to five.'), { what: 'reply', timeoutMs: 15_000 });
  // the caller's Opus audio went through the jitter buffer and the decoder (straight to 16 kHz) into the STT
  t.deepEqual(book.engines(name).engines.stt.finals, ['what are your opening hours']);

  // the reply's audio starts after its text event: wait for it to start, then to end (a hang-up in between would cut
  // the reply short in the transcript)
  await until(() => c.audioSeconds > greetingAudio, { what: 'reply audio to start', timeoutMs: 15_000 });
  await until(() => Date.now() - c.lastPacketAt > 400, { what: 'reply audio to end', timeoutMs: 15_000 });
  c.hangup();
  const ended = await endedRow(s.db, callId);
  t.is(ended.status, 'completed');
  t.is(ended.ended_reason, 'user_hangup');
  t.is(ended.connection_status, 'completed');
  t.deepEqual(ended.transcript.map((e: { role: string; content: string }) => [e.role, e.content]), [
    ['assistant', 'Hello, how can I help?'],
    ['user', 'what are your opening hours'],
    ['assistant', 'We are open from nine to five.'],
  ]);
  const wav = await until(() => s.storage.get?.(`spool/recordings/${callId}.wav`).catch(() => null) ?? null, { what: 'recording', timeoutMs: 5000 });
  t.true((wav as Buffer).length > 44);
});

test.serial('an exception in a node-datachannel callback ends that call as pipeline_error, not the process', async (t) => {
  // escaping into node-datachannel it would abort the process (a C++ Napi::Error); the transport catches it
  const name = book.add({ llm: [] });
  const callId = await pending({ name });
  const { c } = await connect(callId);
  await until(() => c.audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 15_000 });
  const push = JitterBuffer.prototype.push;
  let thrown = 0;
  JitterBuffer.prototype.push = function (this: JitterBuffer, ...a: Parameters<JitterBuffer['push']>) {
    if (thrown++ === 0) throw new Error('injected fault in the receive path');
    return push.apply(this, a);
  };
  try {
    await c.send(200, true);
    const ended = await endedRow(s.db, callId);
    t.true(thrown > 0);
    t.is(ended.status, 'error');
    t.is(ended.ended_reason, 'pipeline_error');
  } finally {
    JitterBuffer.prototype.push = push;
  }
  // the node goes on: the next call works
  const next = await pending({ name: book.add({ llm: [] }) });
  const again = await connect(next);
  await until(() => again.c.audioSeconds > 0.3, { what: 'greeting audio of the next call', timeoutMs: 15_000 });
  again.c.hangup();
  t.is((await endedRow(s.db, next)).ended_reason, 'user_hangup');
});

test('trickle ICE: an offer without candidates connects through PATCHed candidates', async (t) => {
  const name = book.add({ llm: [] });
  const callId = await pending({ name });
  const c = caller();
  const offer = await c.offer({ trickle: true });
  t.notRegex(offer, /a=candidate:/);
  const res = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: offer, type: 'offer' } });
  t.is(res.status, 200);
  c.accept(res.body.sdp);
  await c.gathered();
  t.true(c.localCandidates.length > 0);
  const [first, ...rest] = c.localCandidates;
  // a bare string, then browser-style RTCIceCandidateInit objects in one array, then end-of-candidates
  const p1 = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: first!.candidate } });
  t.is(p1.status, 200);
  t.deepEqual(p1.body, { success: true });
  if (rest.length) {
    const p2 = await s.request('PATCH', offerPath(callId), {
      key: org.apiKey,
      body: { pc_id: res.body.pc_id, candidate: rest.map((r) => ({ candidate: r.candidate, sdpMid: r.mid, sdpMLineIndex: 0 })) },
    });
    t.is(p2.status, 200);
  }
  t.is((await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: { candidate: '', sdpMid: '0' } } })).status, 200);
  await until(() => c.state === 'connected', { what: 'connected through trickled candidates', timeoutMs: 10_000 });
  await until(() => c.audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 15_000 });

  // bad candidates and bodies are refused and change nothing
  const bad = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { candidate: 'not a candidate' } });
  t.is(bad.status, 400);
  t.is(bad.body.detail, 'Invalid ICE candidate');
  const missing = await s.request('PATCH', offerPath(callId), { key: org.apiKey, body: { nope: 1 } });
  t.is(missing.status, 422);
  t.deepEqual(missing.body.detail[0].loc, ['body', 'candidate']);
  t.is((await getCallRow(s.db, callId)).status, 'active');

  c.close();
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');
});

test('a second offer while the call starts is 409; an offer with the live pc_id renegotiates the same peer', async (t) => {
  const name = book.add({ llm: [] });
  const callId = await pending({ name });
  const c = caller();
  const first = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await c.offer({ trickle: true }), type: 'offer' } });
  t.is(first.status, 200);
  // duplicate before the peer connected
  const other = caller();
  const dup = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await other.offer(), type: 'offer' } });
  t.is(dup.status, 409);
  t.regex(dup.body.detail, /Duplicate offer/);
  c.accept(first.body.sdp);
  await trickle(c, callId);
  await until(() => c.state === 'connected', { what: 'connected', timeoutMs: 10_000 });
  await until(() => c.audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 15_000 });
  // duplicate while running, and with a pc_id that is not this call's peer
  t.is((await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await other.offer(), type: 'offer' } })).status, 409);
  t.is((await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: await other.offer(), type: 'offer', pc_id: 'f00' } })).status, 409);

  // renegotiation: a new offer from the same peer with its pc_id
  c.pc.setLocalDescription('offer');
  const reoffer = c.pc.localDescription()!.sdp;
  const re = await s.request('POST', offerPath(callId), { key: org.apiKey, body: { sdp: reoffer, type: 'offer', pc_id: first.body.pc_id } });
  t.is(re.status, 200, JSON.stringify(re.body));
  t.is(re.body.pc_id, first.body.pc_id);
  t.is(re.body.type, 'answer');
  c.accept(re.body.sdp);
  // the same call goes on over the same peer: the row stays active and events still arrive on its data channel
  t.is((await getCallRow(s.db, callId)).status, 'active');
  t.is(c.state, 'connected');
  const events = c.events.length;
  await c.send(600, true);
  await c.send(400, false);
  await until(() => c.events.length > events, { what: 'events after renegotiation', timeoutMs: 10_000 });
  c.hangup();
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');
});

test('a peer that never connects ends the call no_participant and frees its slot', async (t) => {
  const small = await s.createOrg({ name: 'one slot', concurrency: 1 });
  const callId = await insertPendingCall(s.db, { orgId: small.orgId, config: agentConfig({ name: book.add({}) }), transport: 'webrtc' });
  const c = caller();
  const res = await s.request('POST', offerPath(callId), { key: small.apiKey, body: { sdp: await c.offer(), type: 'offer' } });
  t.is(res.status, 200);
  t.is((await getCallRow(s.db, callId)).status, 'active');
  // the answer is never applied: no ICE, no DTLS
  const ended = await endedRow(s.db, callId, 15_000);
  t.is(ended.status, 'error');
  t.is(ended.connection_status, 'no_participant');
  t.is(ended.ended_reason, null);
  t.is(ended.started_at, null);
  t.true((await tags(callId)).includes('not_connected'));
  // a later offer for it is refused; nothing is left counting against the org's one slot
  t.is((await s.request('POST', offerPath(callId), { key: small.apiKey, body: { sdp: await caller().offer(), type: 'offer' } })).status, 404);
  const busy = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM calls WHERE organization_id = ${small.orgId} AND status IN ('pending', 'active')`);
  t.is(busy, 0);
});

test('404, 401 and 422 rules; a bad offer changes nothing', async (t) => {
  const otherOrg = await s.createOrg({ name: 'other' });
  const otherCall = await insertPendingCall(s.db, { orgId: otherOrg.orgId, config: agentConfig(), transport: 'webrtc' });
  const wsCall = await pending({}, 'websocket');
  const done = await pending();
  await s.db.query(sql.type(z.object({}))`UPDATE calls SET status = 'completed' WHERE id = ${done}`);
  const sdp = await caller().offer();
  for (const id of ['7b0b7f5e-0000-4000-8000-000000000000', 'not-a-uuid', otherCall, wsCall, done]) {
    const r = await s.request('POST', offerPath(id), { key: org.apiKey, body: { sdp, type: 'offer' } });
    t.is(r.status, 404, id);
    t.is(r.body.detail, 'Call not found');
    const p = await s.request('PATCH', offerPath(id), { key: org.apiKey, body: { candidate: 'candidate:1 1 UDP 1 127.0.0.1 9 typ host' } });
    t.is(p.status, 404, `PATCH ${id}`);
  }
  t.is((await getCallRow(s.db, otherCall)).status, 'pending');
  t.is((await getCallRow(s.db, wsCall)).status, 'pending');

  const id = await pending();
  t.is((await s.request('POST', offerPath(id), { key: null, body: { sdp, type: 'offer' } })).status, 401);
  const badKey = await s.request('POST', offerPath(id), { key: 'vak_wrong', body: { sdp, type: 'offer' } });
  t.is(badKey.status, 401);
  t.is(badKey.body.detail, 'Invalid or expired API key');
  const wrongType = await s.request('POST', offerPath(id), { key: org.apiKey, body: { sdp, type: 'answer' } });
  t.is(wrongType.status, 422);
  t.deepEqual(wrongType.body.detail[0].loc, ['body', 'type']);
  t.is((await s.request('POST', offerPath(id), { key: org.apiKey, raw: '{"sdp":', headers: { 'content-type': 'application/json' } })).status, 400);
  const noAudio = await s.request('POST', offerPath(id), { key: org.apiKey, body: { sdp: 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n', type: 'offer' } });
  t.is(noAudio.status, 400);
  t.regex(noAudio.body.detail, /no audio section with Opus/);
  // a PATCH before any offer
  t.is((await s.request('PATCH', offerPath(id), { key: org.apiKey, body: { candidate: 'candidate:1 1 UDP 1 127.0.0.1 9 typ host' } })).status, 409);
  t.is((await getCallRow(s.db, id)).status, 'pending');

  // the organization's request-rate limit applies to signaling as to the REST API
  const limited = await s.createOrg({ name: 'rate limited', ratePerMinute: 2 });
  const codes: number[] = [];
  for (let i = 0; i < 3; i++) codes.push((await s.request('GET', '/webrtc/ice-servers', { key: limited.apiKey })).status);
  t.deepEqual(codes, [200, 200, 429]);

  const ice = await s.request('GET', '/webrtc/ice-servers', { key: org.apiKey });
  t.is(ice.status, 200);
  t.deepEqual(ice.body, { iceServers: [] });
  t.is((await s.request('GET', '/webrtc/ice-servers', { key: null })).status, 401);
});

test('telephonySim: the phone-line simulation sits in front of the pipeline and the call still works', async (t) => {
  const name = book.add({ stt: { utterances: ['hello from a phone'] }, llm: [{ text: 'I hear you.' }] });
  const callId = await pending({ name });
  await s.db.query(sql.type(z.object({}))`UPDATE calls SET telephony_sim = true WHERE id = ${callId}`);
  const { c } = await connect(callId);
  await until(() => c.audioSeconds > 0.5, { what: 'greeting audio', timeoutMs: 15_000 });
  await until(() => Date.now() - c.lastPacketAt > 300, { what: 'greeting to end', timeoutMs: 15_000 });
  await c.send(900, true);
  await c.send(400, false);
  const final = await until(() => c.events.find((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true), { what: 'transcription', timeoutMs: 15_000 });
  t.is(final.payload!.text, 'hello from a phone');
  c.hangup();
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');
});
