// Scale-out and backpressure with real processes: one api process and two media processes (media/main.ts, the
// production shape) on one PostgreSQL and the suite's Temporal. Calls created through POST /call run on either
// node; a node over MEDIA_MAX_CALLS refuses a join with 1013 'Media node at capacity' and says so in /readyz;
// POST /call and POST /agents/{uuid}/test-call answer 503 once every live node is full; a killed node's call is
// reconciled by the other node, and when capacity frees up calls are accepted again.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { MEDIA_AT_CAPACITY } from '../../core/media-nodes.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../../core/orgs.ts';
import { createTestDb } from '../helpers/db.ts';
import { until } from '../helpers/calls.ts';
import { audioCaller, audioUrlOf, killServiceProcesses, startServiceProcess } from '../helpers/processes.ts';

test.after.always(killServiceProcesses);

const startProcess = (entry: string, env: Record<string, string>) => startServiceProcess(entry, env, { listenTimeoutMs: 180_000 });
/** A caller on the call's audio socket at the media node `origin`. */
const caller = (origin: string, callId: string, key: string) => audioCaller(audioUrlOf(origin, callId), key);

test('two media nodes on one database: calls on both, capacity refusals (1013, 503), a killed node is reconciled', async (t) => {
  const { db, url } = await createTestDb();
  const org = await createOrganization(db, { name: 'scale', balanceUsd: 100 });
  await setOrganizationLimits(db, org.id, { concurrency: 50 });
  const key = (await createApiKey(db, org.id, 'scale')).key;
  const env = { DATABASE_URL: url, MEDIA_MAX_CALLS: '1', MEDIA_NODE_DEAD_AFTER_S: '4', SIGNING_SECRET: 'scale-test-signing-secret-0123' };
  const [api, nodeA, nodeB] = await Promise.all([startProcess('api/main.ts', env), startProcess('media/main.ts', env), startProcess('media/main.ts', env)]);

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${api.origin}/api/v1${path}`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const agent = await post('/agents', {
    name: 'Scale agent',
    systemPrompt: 'You are a test agent.',
    llm: { provider: 'local', model: 'local-demo' },
    stt: { provider: 'local' },
    tts: { provider: 'local' },
    noiseGate: { enabled: false },
    greeting: { firstMessages: ['Hello from the scale test.'] },
  });
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  const newCall = () => post('/call', { agentId: agent.body.uuid, transport: 'websocket' });

  // both nodes registered with their capacity before any call
  const nodes = await until(async () => {
    const rows = await db.any(sql.type(z.object({ node_id: z.string(), capacity: z.number(), active_calls: z.number() }))`SELECT node_id, capacity, active_calls FROM media_nodes`);
    return rows.length === 2 ? rows : null;
  }, 30_000, 'two media nodes to report');
  t.deepEqual(nodes.map((n) => [n.capacity, n.active_calls]), [[1, 0], [1, 0]]);

  const [c1, c2, c3] = await Promise.all([newCall(), newCall(), newCall()]);
  for (const c of [c1, c2, c3]) t.is(c.status, 200, JSON.stringify(c.body));
  // the audioUrl is the one public URL; any node can take any call: one call joins each node
  const a = caller(nodeA.origin, String(c1.body.callId), key);
  const b = caller(nodeB.origin, String(c2.body.callId), key);
  await until(() => a.frames() > 0 && b.frames() > 0, 60_000, 'greeting audio on both nodes');
  const placed = await db.any(sql.type(z.object({ id: z.string(), status: z.string(), media_node: z.string().nullable() }))`
    SELECT id::text, status, media_node FROM calls WHERE id = ANY(${sql.array([String(c1.body.callId), String(c2.body.callId)], 'uuid')}) ORDER BY created_at`);
  t.true(placed.every((r) => r.status === 'active'));
  t.is(new Set(placed.map((r) => r.media_node)).size, 2, 'the two calls run on two different nodes');

  // node A is full: a join is refused at once with 1013 and the call stays pending for another node
  const refused = caller(nodeA.origin, String(c3.body.callId), key);
  t.deepEqual(await refused.closed, { code: 1013, reason: 'Media node at capacity' });
  const c3Row = await db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${String(c3.body.callId)}`);
  t.is(c3Row, 'pending');
  const ready = await fetch(`${nodeA.origin}/readyz`);
  t.is(ready.status, 503);
  t.like(await ready.json(), { status: 'at_capacity', activeCalls: 1, capacity: 1 });
  const metrics = await (await fetch(`${nodeA.origin}/metrics`)).text();
  t.regex(metrics, /voice_media_call_capacity 1/);
  t.regex(metrics, /voice_media_joins_refused_total\{reason="capacity"\} 1/);

  // every live node is full: POST /call refuses with 503 (once both nodes have reported their load)
  const full = await until(async () => {
    const r = await newCall();
    return r.status === 503 ? r : null;
  }, 15_000, 'POST /call to answer 503');
  t.deepEqual(full.body, { detail: MEDIA_AT_CAPACITY });
  // … and so does the dashboard's test call of a saved agent, without creating a row
  const before = await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`);
  const testCall = await post(`/agents/${String(agent.body.uuid)}/test-call`, {});
  t.is(testCall.status, 503);
  t.deepEqual(testCall.body, { detail: MEDIA_AT_CAPACITY });
  t.is(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`), before);

  // node B dies: node A reconciles its call (error / pipeline_error); node A alone is still full
  nodeB.child.kill('SIGKILL');
  const reconciled = await until(async () => {
    const r = await db.one(sql.type(z.object({ status: z.string(), ended_reason: z.string().nullable() }))`SELECT status, ended_reason FROM calls WHERE id = ${String(c2.body.callId)}`);
    return r.status !== 'active' ? r : null;
  }, 30_000, 'the dead node\'s call to be reconciled');
  t.deepEqual(reconciled, { status: 'error', ended_reason: 'pipeline_error' });
  t.is((await newCall()).status, 503);

  // the caller on node A hangs up: capacity is free again, the pending call joins node A, POST /call works
  a.ws.close(1000);
  await a.closed;
  const again = await until(async () => {
    const r = await newCall();
    return r.status === 200 ? r : null;
  }, 15_000, 'POST /call to accept again');
  t.truthy(again.body.callId);
  const late = caller(nodeA.origin, String(c3.body.callId), key);
  await until(() => late.frames() > 0, 60_000, 'greeting audio for the formerly refused call');
  late.ws.close(1000);
  await late.closed;
  void api;
  await db.end();
});
