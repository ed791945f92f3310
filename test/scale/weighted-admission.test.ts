// Weighted admission (media/admission.ts, core/media-nodes.ts CALL_WEIGHTS): calls count at their weight by transport
// × engines; a joining call is held at its transport's largest weight; a node at weighted capacity refuses on every
// transport; what the node reports (media_nodes.weighted_load, accepting) is what POST /call counts (mediaCapacity).
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { mediaCapacity, reportNode, type NodeLoad } from '../../core/media-nodes.ts';
import { CALL_WEIGHTS, LIGHTEST_JOIN, callWeight, createAdmission, type WeightTransport } from '../../media/admission.ts';
import { createTestDb } from '../helpers/db.ts';

const ALL: WeightTransport[] = ['websocket', 'webrtc', 'carrier'];

test('weights: transport × engines from the table; any local engine makes a call local', (t) => {
  t.is(callWeight('websocket', ['deepgram', 'elevenlabs', 'openai']), CALL_WEIGHTS.websocket.vendor);
  t.is(callWeight('websocket', ['local', 'elevenlabs', 'openai']), CALL_WEIGHTS.websocket.local);
  t.is(callWeight('webrtc', ['deepgram', 'local', 'openai']), CALL_WEIGHTS.webrtc.local);
  t.is(callWeight('webrtc', ['deepgram', 'elevenlabs', 'openai']), CALL_WEIGHTS.webrtc.vendor);
  t.is(callWeight('twilio', ['deepgram', 'elevenlabs', 'openai']), CALL_WEIGHTS.carrier.vendor, 'a carrier stream is a carrier');
  t.is(callWeight('vonage', ['local', 'local', 'local']), CALL_WEIGHTS.carrier.local);
  for (const row of Object.values(CALL_WEIGHTS)) t.true(row.vendor <= row.local, 'a local-engine call never weighs less');
  t.true(CALL_WEIGHTS.webrtc.vendor > CALL_WEIGHTS.websocket.vendor, 'WebRTC costs more than a WebSocket call');
  t.is(LIGHTEST_JOIN, Math.min(CALL_WEIGHTS.websocket.local, CALL_WEIGHTS.webrtc.local, CALL_WEIGHTS.carrier.local));
});

test('a node at weighted capacity refuses on every transport; joining calls are held at their transport weight', (t) => {
  let live = 0;
  const a = createAdmission({ capacity: 2, live: () => live, draining: () => false });
  // 6 vendor-engine WebSocket calls live: 1.5 of 2 units although 6 calls > 2
  live = 6 * CALL_WEIGHTS.websocket.vendor;
  t.is(a.refusal(), 'capacity', 'no room for the lightest join (1 unit)');
  for (const tr of ALL) {
    const r = a.admit(tr);
    t.false(r.ok, `${tr} refused`);
    if (!r.ok) t.is(r.text, 'Media node at capacity');
  }
  // 4 of them: 1 unit; a WebSocket join (held at 1) fits, a WebRTC join (held at its local weight, > 1) does not
  live = 4 * CALL_WEIGHTS.websocket.vendor;
  t.false(a.admit('webrtc').ok);
  const ws = a.admit('websocket');
  t.true(ws.ok);
  t.is(a.joining, 1);
  t.is(a.weighted(), 2);
  for (const tr of ALL) t.false(a.admit(tr).ok, `${tr} refused while the join is held`);
  if (ws.ok) ws.release();
  t.is(a.weighted(), 1);
  // 1 unit free: a carrier join is held at its local weight (1.2: JSON/base64/µ-law framing costs more than raw PCM)
  t.true(CALL_WEIGHTS.carrier.local > 1);
  t.false(a.admit('carrier').ok, 'a carrier join does not fit in 1 unit');
  t.true(a.admit('websocket').ok, 'a WebSocket join (1 unit) does');
  // an idle node takes even a call heavier than its whole capacity
  const small = createAdmission({ capacity: 1, live: () => 0, draining: () => false });
  const rtc = small.admit('webrtc');
  t.true(rtc.ok);
  t.false(small.admit('websocket').ok, 'and then nothing more');
  // draining wins over capacity
  const d = createAdmission({ capacity: 100, live: () => 0, draining: () => true });
  t.is(d.refusal('websocket'), 'draining');
});

test('POST /call counts a node available by weighted load, not by number of calls', async (t) => {
  const { db } = await createTestDb();
  // what a media node reports (media/server.ts load()), from a real admission with `live` weighted calls
  const nodeLoad = (calls: number, liveWeight: number, capacity: number): NodeLoad => {
    const a = createAdmission({ capacity, live: () => liveWeight, draining: () => false });
    return { activeCalls: calls, weightedLoad: a.weighted(), accepting: a.refusal() === null, capacity, loopLagMs: 0, draining: false };
  };
  try {
    // node a: 8 vendor-engine WebSocket calls = 2 units of 4; node b (6 units): 2 local-engine WebRTC calls
    await reportNode(db, 'node-a', nodeLoad(8, 8 * CALL_WEIGHTS.websocket.vendor, 4));
    await reportNode(db, 'node-b', nodeLoad(2, 2 * CALL_WEIGHTS.webrtc.local, 6));
    t.deepEqual(await mediaCapacity(db, 60), { live: 2, available: 2 });
    // node b: one more local-engine WebRTC call — no room for the lightest join (1); node a has room although it
    // has more calls
    const bLoad = 3 * CALL_WEIGHTS.webrtc.local;
    t.true(bLoad > 6 - LIGHTEST_JOIN && bLoad <= 6, `3 local-engine WebRTC calls leave less than a join's room (${bLoad} of 6)`);
    await reportNode(db, 'node-b', nodeLoad(3, bLoad, 6));
    t.deepEqual(await mediaCapacity(db, 60), { live: 2, available: 1 });
    const rows = await db.any(sql.type(z.object({ node_id: z.string(), weighted_load: z.number(), accepting: z.boolean() }))`SELECT node_id, weighted_load, accepting FROM media_nodes ORDER BY node_id`);
    t.deepEqual(rows, [{ node_id: 'node-a', weighted_load: 2, accepting: true }, { node_id: 'node-b', weighted_load: bLoad, accepting: false }]);
    await reportNode(db, 'node-a', nodeLoad(13, 13 * CALL_WEIGHTS.websocket.vendor, 4));
    t.deepEqual(await mediaCapacity(db, 60), { live: 2, available: 0 }, 'no node has room for a join');
  } finally {
    await db.end();
  }
});

test('a join is weighed at its own weight once its row is read; a call whose room was reserved on the node is taken over, also while it drains, never once it is closed', (t) => {
  let draining = false;
  let closed = false;
  const a = createAdmission({ capacity: 2, live: () => 2, draining: () => draining || closed, closed: () => closed });
  const refused = a.admit('carrier', { weight: 1.2 });
  t.like(refused, { ok: false, reason: 'capacity' });
  const taken = a.admit('carrier', { weight: 1.2, reserved: true });
  t.true(taken.ok, 'the reservation is taken over past capacity');
  t.is(a.weighted(), 2 + 1.2, 'held at its own weight');
  if (taken.ok) taken.release();
  draining = true;
  t.like(a.admit('websocket'), { ok: false, reason: 'draining' });
  t.true(a.admit('websocket', { weight: 1, reserved: true }).ok, 'a draining node still serves the phone that rang for it');
  closed = true;
  t.like(a.admit('websocket', { weight: 1, reserved: true }), { ok: false, reason: 'draining' });
  // a light call fits where its transport's largest weight would not
  const b = createAdmission({ capacity: 1, live: () => 0.5, draining: () => false });
  t.like(b.admit('webrtc'), { ok: false, reason: 'capacity' });
  t.true(b.admit('webrtc', { weight: CALL_WEIGHTS.webrtc.vendor - 0.5 }).ok);
});
