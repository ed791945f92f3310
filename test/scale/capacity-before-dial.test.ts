// No phone rings for a call the media tier cannot serve. POST /call reserves room for the call on a media node, by
// the weight of its transport and engines, inside the gate transaction: with the node full (two local-engine calls
// live on room for two) an outbound dial answers 503 with Retry-After and the carrier sees no dial; an inbound call
// gets the carrier's busy verb (checked against the twilio SDK's own TwiML) and a row that says so; a dial that was
// placed holds its room until its media arrives, and the node takes it over; a campaign at max_concurrency 5 on a
// node with room for 2 waits for room and dials every contact exactly once.
import test from 'ava';
import twilioSdk from 'twilio';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { MEDIA_AT_CAPACITY } from '../../core/media-nodes.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { carrierVoiceStatusUrl, carrierVoiceUrl } from '../../core/telephony/urls.ts';
import { TestCaller } from '../helpers/calls.ts';
import { dialOf, openStream, startPhoneRig, type PhoneRig } from '../telephony/media-helpers.ts';
import { attempts, campaign, carrierScript, csvOf, phoneList, setupOrg, startEnv, uploadCsv, waitForState, type Env } from '../campaigns/helpers.ts';
import { until } from '../helpers/wait.ts';

const FROM = '+15550001000';
const TO = '+15557770001';
const INBOUND = '+15550001001';

const localAgent = {
  name: 'Capacity agent',
  systemPrompt: 'You are a test agent.',
  llm: { provider: 'local', model: 'local-demo' },
  stt: { provider: 'local' },
  tts: { provider: 'local' },
  noiseGate: { enabled: false },
  greeting: { firstMessages: ['Hello from the capacity test.'] },
};

let rig: PhoneRig;
let org: { orgId: string; apiKey: string };
let acc: { sid: string; token: string };
let agentUuid: string;

test.before(async () => {
  // room for two local-engine WebSocket calls (weight 1 each); a local-engine phone call weighs 1.2
  rig = await startPhoneRig('capacity-before-dial-test', { MEDIA_MAX_CALLS: '2' });
  org = await rig.s.createOrg({ concurrency: 20, balanceUsd: 50 });
  acc = rig.twilio.addAccount();
  rig.twilio.addNumber(acc.sid, FROM);
  const created = await rig.s.request('POST', '/agents', { key: org.apiKey, body: localAgent });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  agentUuid = created.body.uuid as string;
});
test.after.always(async () => {
  await rig?.close();
});

const countCalls = () => rig.s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`);
const dial = () => rig.s.request('POST', '/call', {
  key: org.apiKey,
  body: { type: 'outbound', agentId: agentUuid, toNumber: TO, callConfig: { provider: 'twilio', phoneNumber: FROM, auth: { account_sid: acc.sid, auth_token: acc.token } } },
});

async function liveWebCall(): Promise<TestCaller> {
  const r = await rig.s.request('POST', '/call', { key: org.apiKey, body: { agentId: agentUuid, transport: 'websocket' } });
  if (r.status !== 200) throw new Error(`POST /call ${r.status}: ${JSON.stringify(r.body)}`);
  const caller = TestCaller.connect(rig.s.origin, r.body.callId as string, org.apiKey);
  await until(() => caller.audioBytes > 0, { what: 'the greeting of a web call', timeoutMs: 30_000 });
  return caller;
}

test.serial('two local calls live on room for two: an outbound dial answers 503 with Retry-After and the carrier sees no dial; an inbound call is rejected busy with its row', async (t) => {
  const callers = [await liveWebCall(), await liveWebCall()];
  // the node reports its load within a second; the reservation reads it
  await until(async () => (await rig.s.db.oneFirst(sql.type(z.object({ w: z.number() }))`SELECT coalesce(max(weighted_load), 0)::float8 AS w FROM media_nodes`)) >= 2, { what: 'the node to report two calls', timeoutMs: 10_000 });

  const before = await countCalls();
  const refused = await dial();
  t.is(refused.status, 503, JSON.stringify(refused.body));
  t.is(refused.headers.get('retry-after'), '2');
  t.deepEqual(refused.body, { detail: MEDIA_AT_CAPACITY });
  t.is(rig.dials.length, 0, 'no dial reached the carrier');
  t.is(rig.twilio.requests.filter((r) => r.path.endsWith('/Calls.json')).length, 0);
  t.is(await countCalls(), before, 'no row, no slot held');

  // inbound at capacity: Twilio's own busy signal, the call never answered, a row saying why
  const agentId = await rig.s.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM agents WHERE uuid = ${agentUuid}`);
  const number = rig.twilio.addNumber(acc.sid, INBOUND);
  const cfg = await insertConfig(rig.s.db, rig.s.config, {
    orgId: org.orgId, name: 'inbound line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: false, isDefault: false,
  });
  await rig.s.db.query(sql.type(z.object({}))`
    INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type, inbound_agent_id, inbound_assigned_at, carrier_ref)
    VALUES (${org.orgId}, ${cfg.id}, ${INBOUND}, ${INBOUND}, 'pstn', ${agentId}, now(), ${number.sid})`);
  number.voiceUrl = carrierVoiceUrl(rig.s.config, 'twilio');
  number.statusCallback = carrierVoiceStatusUrl(rig.s.config, 'twilio');
  const busy = new twilioSdk.twiml.VoiceResponse();
  busy.reject({ reason: 'busy' });
  for (let i = 0; i < 2; i++) {
    const { call, twiml, status } = await rig.twilio.inbound(acc.sid, INBOUND, `+1555333444${i}`);
    t.is(status, 200);
    t.is(twiml.xml, busy.toString(), 'the TwiML the twilio SDK writes for a busy rejection');
    t.is(call.status, 'busy');
    const row = await rig.s.db.one(sql.type(z.object({ status: z.string(), connection_status: z.string().nullable(), ended_reason: z.string().nullable(), tags: z.array(z.string()), transport: z.string() }))`
      SELECT status, connection_status, ended_reason, tags, transport FROM calls WHERE carrier_call_id = ${call.sid}`);
    t.deepEqual(row, { status: 'error', connection_status: 'media_capacity', ended_reason: null, tags: ['api', 'inbound', 'rejected'], transport: 'inbound' }, 'every refused inbound call has its row');
  }

  // the web calls end: the dial goes out and holds its room (1.2 of 2) while the phone rings …
  for (const c of callers) c.ws.close(1000);
  await Promise.all(callers.map((c) => c.closed));
  const placed = await until(async () => {
    const r = await dial();
    return r.status === 200 ? r : null;
  }, { what: 'the dial to be accepted once room frees up', timeoutMs: 15_000 });
  const callId = placed.body.callId as string;
  const held = await rig.s.db.one(sql.type(z.object({ assigned_node: z.string().nullable(), reserved_weight: z.number().nullable() }))`
    SELECT assigned_node, reserved_weight FROM calls WHERE id = ${callId}`);
  t.truthy(held.assigned_node);
  t.is(held.reserved_weight, 1.2, 'a local-engine phone call holds its own weight');
  // … so a web call (1) cannot take that room meanwhile
  const crowded = await rig.s.request('POST', '/call', { key: org.apiKey, body: { agentId: agentUuid, transport: 'websocket' } });
  t.is(crowded.status, 503);
  // the callee answers: the stream is taken over by the node that reserved it, and the agent speaks
  const call = await dialOf(rig, callId);
  await rig.twilio.ring(call.sid);
  const answer = await rig.twilio.answer(call.sid);
  const stream = openStream(rig, call, answer.stream!);
  await until(() => stream.heardMs > 0, { what: 'the greeting on the answered phone call', timeoutMs: 30_000 });
  t.is(await rig.s.db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${callId}`), 'active');
  stream.hangup();
});

test.serial('a dial the carrier never connects gives its room back when the carrier reports the end', async (t) => {
  const placed = await until(async () => {
    const r = await dial();
    return r.status === 200 ? r : null;
  }, { what: 'a dial to be accepted', timeoutMs: 15_000 });
  const callId = placed.body.callId as string;
  const call = await dialOf(rig, callId);
  const pendingWeight = () => rig.s.db.oneFirst(sql.type(z.object({ w: z.number() }))`
    SELECT coalesce(sum(reserved_weight), 0)::float8 AS w FROM calls WHERE status = 'pending' AND assigned_node IS NOT NULL`);
  t.is(await pendingWeight(), 1.2);
  await rig.twilio.finish(call.sid, 'no-answer', 0);
  await until(async () => (await pendingWeight()) === 0, { what: 'the reservation to be released', timeoutMs: 10_000 });
  t.is(await rig.s.db.oneFirst(sql.type(z.object({ c: z.string().nullable() }))`SELECT connection_status AS c FROM calls WHERE id = ${callId}`), 'no_answer');
});

// ── a campaign on a node with room for two ──────────────────────────────────────────────────────────────────────
let env: Env;
test.before(async () => {
  // vendor-engine phone calls weigh 0.45: two fit in a capacity of 1, a third would not
  env = await startEnv('capacity-campaign-test', { env: { MEDIA_MAX_CALLS: '1', CALL_JOIN_TIMEOUT_S: '5' } });
});
test.after.always(async () => {
  await env?.close();
});

test.serial('a campaign at max_concurrency 5 on a node with room for 2 waits for room and dials every contact exactly once', async (t) => {
  t.timeout(240_000);
  const o = await setupOrg(env, { numbers: 6, concurrency: 50 });
  const carrier = carrierScript(env.fake, o.accountSid, () => ({ status: 'busy', afterMs: 300 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(8, '+1650');
  const sourceId = await uploadCsv(env.s, o.apiKey, csvOf(numbers));
  const c = await env.s.request('POST', '/campaign/create', {
    key: o.apiKey,
    body: { name: 'Capacity', agent_uuid: o.agentUuid, source_type: 'csv', source_id: sourceId, max_concurrency: 5, retry_config: { enabled: false }, circuit_breaker: { enabled: true, failure_threshold: 0.5, window_seconds: 60, min_calls_in_window: 2 } },
  });
  t.is(c.status, 200, JSON.stringify(c.body));
  const id = c.body.id as number;
  t.is((await env.s.request('POST', `/campaign/${id}/start`, { key: o.apiKey })).status, 200);

  const done = await waitForState(env.s, o.apiKey, id, 'completed', 200_000);
  t.deepEqual(carrier.state.errors, []);
  t.true(carrier.state.maxLive <= 2, `calls in flight at the carrier: at most ${carrier.state.maxLive}`);
  t.is(carrier.state.dials.length, numbers.length, 'one dial per contact');
  t.deepEqual(carrier.state.dials.map((d) => d.to).sort(), [...numbers].sort(), 'every contact dialled exactly once');
  t.like(done, { executed_count: numbers.length, total_rows: numbers.length });
  // waiting for room is no failure: the breaker never tripped on it (busy outcomes count, waits do not)
  const rows = await attempts(env.s, id);
  t.is(rows.length, numbers.length, 'one attempt per contact');
  t.true(rows.every((r) => r.connection_status === 'busy'), JSON.stringify(rows.map((r) => r.connection_status)));
  const logs = (await campaign(env.s, o.apiKey, id)).logs as Array<{ event: string; details?: { wait_for?: string } }>;
  t.true(logs.some((l) => l.event === 'waiting_for_line' && l.details?.wait_for === 'media_capacity'), JSON.stringify(logs.map((l) => l.event)));
});
