// Weighted admission (media/admission.ts, core/media-nodes.ts CALL_WEIGHTS): calls count at their weight by transport
// × engines; a joining call is held at its transport's largest weight; a node at weighted capacity refuses on every
// transport; POST /call's count of available nodes (mediaCapacity) reads the weighted load.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { CALL_WEIGHTS, LIGHTEST_JOIN, mediaCapacity, reportNode } from '../../core/media-nodes.ts';
import { callWeight, createAdmission, type WeightTransport } from '../../media/admission.ts';
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
  // 4 of them: 1 unit; a WebSocket join (held at 1) fits, a WebRTC join (1.5) does not
  live = 4 * CALL_WEIGHTS.websocket.vendor;
  t.false(a.admit('webrtc').ok);
  const ws = a.admit('websocket');
  t.true(ws.ok);
  t.is(a.joining, 1);
  t.is(a.weighted(), 2);
  for (const tr of ALL) t.false(a.admit(tr).ok, `${tr} refused while the join is held`);
  if (ws.ok) ws.release();
  t.is(a.weighted(), 1);
  t.true(a.admit('carrier').ok);
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
  try {
    // node a: 8 calls but only 2 units of 4 (vendor engines); node b: 3 calls, 3.5 units of 4 (WebRTC, local engines)
    await reportNode(db, 'node-a', { activeCalls: 8, weightedLoad: 2, capacity: 4, loopLagMs: 0, draining: false });
    await reportNode(db, 'node-b', { activeCalls: 3, weightedLoad: 3.5, capacity: 4, loopLagMs: 0, draining: false });
    t.deepEqual(await mediaCapacity(db, 60), { live: 2, available: 1 });
    const rows = await db.any(sql.type(z.object({ node_id: z.string(), weighted_load: z.number() }))`SELECT node_id, weighted_load FROM media_nodes ORDER BY node_id`);
    t.deepEqual(rows, [{ node_id: 'node-a', weighted_load: 2 }, { node_id: 'node-b', weighted_load: 3.5 }]);
    await reportNode(db, 'node-a', { activeCalls: 12, weightedLoad: 3.25, capacity: 4, loopLagMs: 0, draining: false });
    t.deepEqual(await mediaCapacity(db, 60), { live: 2, available: 0 }, 'no node has room for a join');
  } finally {
    await db.end();
  }
});
