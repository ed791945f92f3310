// Scale-out and backpressure with real processes: one api process and two media processes (media/main.ts, the
// production shape) on one PostgreSQL and the suite's Temporal. POST /call reserves room for each call on the least
// loaded node (its audioUrl names that node) and answers 503 with Retry-After, creating nothing, once no node has
// room; a node refuses a join it holds no reservation for with 1013 'Media node at capacity' when full, and takes
// the call it reserved room for; a killed node's call is reconciled by the other node, and when capacity frees up
// calls are accepted again.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { MEDIA_AT_CAPACITY } from '../../core/media-nodes.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../../core/orgs.ts';
import { createTestDb } from '../helpers/db.ts';
import { audioCaller, audioUrlOf, killServiceProcesses, startServiceProcess } from '../helpers/processes.ts';
import { until } from '../helpers/wait.ts';

test.after.always(killServiceProcesses);

const startProcess = (entry: string, env: Record<string, string> | ((port: number) => Record<string, string>)) => startServiceProcess(entry, env, { listenTimeoutMs: 180_000 });
/** A caller on the call's audio socket at the media node `origin`. */
const caller = (origin: string, callId: string, key: string) => audioCaller(audioUrlOf(origin, callId), key);

test('two media nodes on one database: room reserved per call, capacity refusals (503 at POST /call, 1013 at an unreserved join), a killed node is reconciled', async (t) => {
  const { db, url } = await createTestDb();
  const org = await createOrganization(db, { name: 'scale', balanceUsd: 100 });
  await setOrganizationLimits(db, org.id, { concurrency: 50 });
  const key = (await createApiKey(db, org.id, 'scale')).key;
  const env = { DATABASE_URL: url, MEDIA_MAX_CALLS: '1', MEDIA_NODE_DEAD_AFTER_S: '4', SIGNING_SECRET: 'scale-test-signing-secret-0123' };
  // each media node has its own address, so POST /call hands every call the node its room was reserved on
  const ownAddress = (port: number) => ({ ...env, MEDIA_PUBLIC_URL: `http://127.0.0.1:${port}` });
  const [api, nodeA, nodeB] = await Promise.all([startProcess('api/main.ts', env), startProcess('media/main.ts', ownAddress), startProcess('media/main.ts', ownAddress)]);

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${api.origin}/api/v1${path}`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
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
  const countCalls = () => db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`);

  // both nodes registered with their capacity and address before any call
  const nodes = await until(async () => {
    const rows = await db.any(sql.type(z.object({ node_id: z.string(), capacity: z.number(), active_calls: z.number() }))`SELECT node_id, capacity, active_calls FROM media_nodes WHERE public_url IS NOT NULL`);
    return rows.length === 2 ? rows : null;
  }, { what: 'two media nodes to report', timeoutMs: 30_000 });
  t.deepEqual(nodes.map((n) => [n.capacity, n.active_calls]), [[1, 0], [1, 0]]);

  // two calls: one reserved on each node, each handed its node's own address
  const c1 = await newCall();
  const c2 = await newCall();
  for (const c of [c1, c2]) t.is(c.status, 200, JSON.stringify(c.body));
  const originOf = (c: typeof c1) => new URL(String(c.body.audioUrl)).origin.replace(/^ws/, 'http');
  t.deepEqual(new Set([originOf(c1), originOf(c2)]), new Set([nodeA.origin, nodeB.origin]), 'the two calls are reserved on two different nodes');
  // no room left anywhere: the third is refused at once, with a retry hint and no row
  const before = await countCalls();
  const c3 = await newCall();
  t.is(c3.status, 503);
  t.is(c3.retryAfter, '2');
  t.deepEqual(c3.body, { detail: MEDIA_AT_CAPACITY });
  // … and so is the dashboard's test call of a saved agent
  const testCall = await post(`/agents/${String(agent.body.uuid)}/test-call`, {});
  t.is(testCall.status, 503);
  t.deepEqual(testCall.body, { detail: MEDIA_AT_CAPACITY });
  t.is(await countCalls(), before, 'a refused call start creates nothing');

  // c1 runs on its node; c2 knocks on that full node first: no reservation there → 1013, the row stays pending
  const first = originOf(c1);
  const other = originOf(c2);
  const a = caller(first, String(c1.body.callId), key);
  await until(() => a.frames() > 0, { what: 'greeting audio of the first call', timeoutMs: 60_000 });
  const refused = caller(first, String(c2.body.callId), key);
  t.deepEqual(await refused.closed, { code: 1013, reason: 'Media node at capacity' });
  t.is(await db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${String(c2.body.callId)}`), 'pending');
  const ready = await fetch(`${first}/readyz`);
  t.is(ready.status, 503);
  t.like(await ready.json(), { status: 'at_capacity', activeCalls: 1, capacity: 1 });
  const metrics = await (await fetch(`${first}/metrics`)).text();
  t.regex(metrics, /voice_media_call_capacity 1/);
  t.regex(metrics, /voice_media_joins_refused_total\{reason="capacity"\} 1/);
  // on its own node c2 runs
  const b = caller(other, String(c2.body.callId), key);
  await until(() => b.frames() > 0, { what: 'greeting audio of the second call on its reserved node', timeoutMs: 60_000 });
  const placed = await db.any(sql.type(z.object({ status: z.string(), media_node: z.string().nullable() }))`
    SELECT status, media_node FROM calls WHERE id = ANY(${sql.array([String(c1.body.callId), String(c2.body.callId)], 'uuid')})`);
  t.true(placed.every((r) => r.status === 'active'));
  t.is(new Set(placed.map((r) => r.media_node)).size, 2, 'the two calls run on two different nodes');

  // the second node dies: the first reconciles its call (error / pipeline_error); the first node alone is still full
  (other === nodeA.origin ? nodeA : nodeB).child.kill('SIGKILL');
  const reconciled = await until(async () => {
    const r = await db.one(sql.type(z.object({ status: z.string(), ended_reason: z.string().nullable() }))`SELECT status, ended_reason FROM calls WHERE id = ${String(c2.body.callId)}`);
    return r.status !== 'active' ? r : null;
  }, { what: 'the dead node\'s call to be reconciled', timeoutMs: 30_000 });
  t.deepEqual(reconciled, { status: 'error', ended_reason: 'pipeline_error' });
  await until(async () => ((await newCall()).status === 503 ? true : null), { what: 'the dead node to stop counting', timeoutMs: 15_000 });

  // the first caller hangs up: capacity is free again, POST /call works and its call runs
  a.ws.close(1000);
  await a.closed;
  const again = await until(async () => {
    const r = await newCall();
    return r.status === 200 ? r : null;
  }, { what: 'POST /call to accept again', timeoutMs: 15_000 });
  t.is(originOf(again), first);
  const late = caller(first, String(again.body.callId), key);
  await until(() => late.frames() > 0, { what: 'greeting audio of the call after capacity freed', timeoutMs: 60_000 });
  late.ws.close(1000);
  await late.closed;
  void api;
  await db.end();
});
