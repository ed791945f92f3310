// Outbound phone calls steered like POST /call (issue 24): the dial assigns the call to the least loaded media node
// by weight (calls.assigned_node) and the media stream URL the carrier gets names that node's own address
// (media_nodes.public_url, MEDIA_PUBLIC_URL) — Twilio's in the answer TwiML, the other carriers' in the dial —
// else the shared PUBLIC_URL.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { reportNode } from '../../core/media-nodes.ts';
import { dialOf, phoneAgent, startPhoneRig, type PhoneRig } from './media-helpers.ts';

let rig: PhoneRig;
let org: { orgId: string; apiKey: string };
let acc: { sid: string; token: string };
const FROM = '+15550002222';
const TO = '+15557650000';
// sorts before any real node id: at equal (zero) load the tie goes to it
const NODE = '0-steer-test';

test.before(async () => {
  rig = await startPhoneRig('telephony-carrier-steering');
  org = await rig.s.createOrg({ balanceUsd: 50, concurrency: 10 });
  acc = rig.twilio.addAccount();
  rig.twilio.addNumber(acc.sid, FROM);
});
test.after.always(async () => {
  await rig?.close();
});

async function dialTwilio(): Promise<{ callId: string; streamUrl: string; assigned: string | null }> {
  const res = await rig.s.request('POST', '/call', {
    key: org.apiKey,
    body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: FROM, auth: { account_sid: acc.sid, auth_token: acc.token } }, toNumber: TO, agent: phoneAgent() },
  });
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST /call: ${res.status} ${JSON.stringify(res.body)}`);
  const callId = res.body.callId as string;
  const call = await dialOf(rig, callId);
  await rig.twilio.ring(call.sid);
  const twiml = await rig.twilio.answer(call.sid);
  if (!twiml.stream) throw new Error(`answer TwiML without <Stream>: ${twiml.xml}`);
  const assigned = await rig.s.db.oneFirst(sql.type(z.object({ assigned_node: z.string().nullable() }))`SELECT assigned_node FROM calls WHERE id = ${callId}`);
  await rig.twilio.finish(call.sid, 'no-answer', 0).catch(() => undefined);
  return { callId, streamUrl: twiml.stream.url, assigned };
}

test.serial('a node with its own address gets the call: the answer TwiML streams to it; without one, the shared PUBLIC_URL', async (t) => {
  await reportNode(rig.s.db, NODE, { activeCalls: 0, weightedLoad: 0, accepting: true, capacity: 1000, loopLagMs: 0, draining: false, publicUrl: 'https://media-7.example.com' });
  const steered = await dialTwilio();
  t.is(steered.assigned, NODE, 'the dial recorded the assignment');
  t.is(steered.streamUrl, `wss://media-7.example.com/api/v1/telephony/twilio/stream/${steered.callId}`);

  // the same node without an address of its own: assigned, but the stream goes through the shared PUBLIC_URL
  await reportNode(rig.s.db, NODE, { activeCalls: 0, weightedLoad: 0, accepting: true, capacity: 1000, loopLagMs: 0, draining: false });
  const shared = await dialTwilio();
  t.is(shared.streamUrl, `${rig.s.config.baseUrl.replace(/^http/, 'ws')}/telephony/twilio/stream/${shared.callId}`);

  // a full node gets none: the shared PUBLIC_URL
  await reportNode(rig.s.db, NODE, { activeCalls: 5, weightedLoad: 1000, accepting: false, capacity: 1000, loopLagMs: 0, draining: false, publicUrl: 'https://media-7.example.com' });
  const full = await dialTwilio();
  t.not(full.assigned, NODE);
  t.false(full.streamUrl.includes('media-7.example.com'), full.streamUrl);
});
