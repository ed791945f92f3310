// Outbound phone calls steered like POST /call: the dial assigns the call to the least loaded media node
// by weight (calls.assigned_node) and the media stream URL the carrier gets names that node's own address
// (media_nodes.public_url, MEDIA_PUBLIC_URL) — Twilio's in the answer TwiML, the other carriers' in the dial —
// else the shared PUBLIC_URL.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { reportNode } from '../../core/media-nodes.ts';
import { dialTwilio, phoneAgent, twilioLine } from './media-helpers.ts';

const line = twilioLine(test, 'telephony-carrier-steering', '+15550002222', '+15557650000', { balanceUsd: 50, concurrency: 10 });
// sorts before any real node id: at equal (zero) load the tie goes to it
const NODE = '0-steer-test';

/** A Twilio call dialed and answered: the stream URL of its answer TwiML and the node the dial assigned it to. */
async function dialSteered(): Promise<{ callId: string; streamUrl: string; assigned: string | null }> {
  const { callId, call, stream } = await dialTwilio(line, { agent: phoneAgent() });
  const assigned = await line.rig.s.db.oneFirst(sql.type(z.object({ assigned_node: z.string().nullable() }))`SELECT assigned_node FROM calls WHERE id = ${callId}`);
  await line.rig.twilio.finish(call.sid, 'no-answer', 0).catch(() => undefined);
  return { callId, streamUrl: stream.url, assigned };
}

test.serial('a node with its own address gets the call: the answer TwiML streams to it; without one, the shared PUBLIC_URL', async (t) => {
  await reportNode(line.rig.s.db, NODE, { activeCalls: 0, weightedLoad: 0, accepting: true, capacity: 1000, loopLagMs: 0, draining: false, publicUrl: 'https://media-7.example.com' });
  const steered = await dialSteered();
  t.is(steered.assigned, NODE, 'the dial recorded the assignment');
  t.is(steered.streamUrl, `wss://media-7.example.com/api/v1/telephony/twilio/stream/${steered.callId}`);

  // the same node without an address of its own: assigned, but the stream goes through the shared PUBLIC_URL
  await reportNode(line.rig.s.db, NODE, { activeCalls: 0, weightedLoad: 0, accepting: true, capacity: 1000, loopLagMs: 0, draining: false });
  const shared = await dialSteered();
  t.is(shared.streamUrl, `${line.rig.s.config.baseUrl.replace(/^http/, 'ws')}/telephony/twilio/stream/${shared.callId}`);

  // a full node gets none: the shared PUBLIC_URL
  await reportNode(line.rig.s.db, NODE, { activeCalls: 5, weightedLoad: 1000, accepting: false, capacity: 1000, loopLagMs: 0, draining: false, publicUrl: 'https://media-7.example.com' });
  const full = await dialSteered();
  t.not(full.assigned, NODE);
  t.false(full.streamUrl.includes('media-7.example.com'), full.streamUrl);
});
