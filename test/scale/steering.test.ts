// POST /call steers each new call to the least loaded media node by weight (core/media-nodes.ts reserveMediaNode):
// a node's load = its reported weighted_load + the weight the pending calls already assigned to it hold there; a
// node without room for the call, not accepting, draining or silent gets none; two api replicas assigning at once
// never hand out more than a node's room (one advisory lock). With real processes: the URL POST /call returns is the
// assigned node's own address (MEDIA_PUBLIC_URL), a full node gets no calls, a call that connects to another node
// than its assigned one is served there, and with no room anywhere POST /call answers 503.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { CALL_WEIGHTS, MEDIA_AT_CAPACITY, assignMediaNode, joiningWeight, reportNode, type NodeLoad } from '../../core/media-nodes.ts';
import { createOrganization, createApiKey, setOrganizationLimits } from '../../core/orgs.ts';
import { createTestDb } from '../helpers/db.ts';
import { agentConfig, insertPendingCall } from '../helpers/calls.ts';
import { audioCaller, audioUrlOf, killServiceProcesses, startServiceProcess } from '../helpers/processes.ts';
import { until } from '../helpers/wait.ts';

const DEAD_AFTER_S = 60;
const load = (weightedLoad: number, capacity: number, o: Partial<NodeLoad> = {}): NodeLoad => ({
  activeCalls: Math.ceil(weightedLoad), weightedLoad, accepting: true, capacity, loopLagMs: 0, draining: false, ...o,
});

test('assignment: least loaded by weight (not by number of calls), pending assignments count, full / not accepting / draining / silent nodes get none', async (t) => {
  const { db } = await createTestDb();
  try {
    const org = await createOrganization(db, { name: 'steer', balanceUsd: 10 });
    const pending = (transport: 'websocket' | 'webrtc') => insertPendingCall(db, { orgId: org.id, transport, config: agentConfig({ name: 'steer' }) });
    const assignedOf = (id: string) => db.oneFirst(sql.type(z.object({ assigned_node: z.string().nullable() }))`SELECT assigned_node FROM calls WHERE id = ${id}`);

    // a: 2 local-engine WebSocket calls = 2 units; b: 6 vendor-engine WebSocket calls = 1.5 units (more calls, less weight)
    await reportNode(db, 'a', load(2 * CALL_WEIGHTS.websocket.local, 6, { activeCalls: 2, publicUrl: 'https://media-a.example.com' }));
    await reportNode(db, 'b', load(6 * CALL_WEIGHTS.websocket.vendor, 6, { activeCalls: 6, publicUrl: 'https://media-b.example.com' }));
    // nodes that would be the emptiest but must get nothing: not accepting, draining, heartbeat gone stale
    await reportNode(db, 'not-accepting', load(0, 6, { accepting: false }));
    await reportNode(db, 'draining', load(0, 6, { draining: true, accepting: false }));
    await reportNode(db, 'silent', load(0, 6));
    await db.query(sql.unsafe`UPDATE media_nodes SET heartbeat_at = now() - interval '5 minutes' WHERE node_id = 'silent'`);

    const c1 = await pending('webrtc');
    const n1 = await assignMediaNode(db, c1, 'webrtc', DEAD_AFTER_S);
    t.like(n1, { node_id: 'b', public_url: 'https://media-b.example.com' }, 'b: 1.5 units against a: 2');
    t.is(await assignedOf(c1), 'b', 'recorded on the row');
    // b now carries 1.5 + the WebRTC joining weight of its pending call: a is less loaded
    const c2 = await pending('websocket');
    t.like(await assignMediaNode(db, c2, 'websocket', DEAD_AFTER_S), { node_id: 'a' });
    // a: 2 + 1 = 3; b: 1.5 + joining(webrtc) → whichever is lower by weight, computed from the table
    const bLoad = 1.5 + joiningWeight('webrtc');
    const c3 = await pending('websocket');
    t.like(await assignMediaNode(db, c3, 'websocket', DEAD_AFTER_S), { node_id: bLoad < 3 ? 'b' : 'a' });

    // fill both: every assignment lands on a or b, never on the three others, until neither has room for a join
    const placed: Array<string | null> = [];
    for (let i = 0; i < 10; i++) placed.push((await assignMediaNode(db, await pending('websocket'), 'websocket', DEAD_AFTER_S))?.node_id ?? null);
    t.true(placed.every((p) => p === 'a' || p === 'b' || p === null), placed.join(','));
    t.true(placed.includes(null), 'both full: no node');
    const loads = await db.any(sql.type(z.object({ node: z.string(), w: z.number() }))`
      SELECT assigned_node AS node, sum(CASE WHEN transport = 'webrtc' THEN ${joiningWeight('webrtc')}::float8 ELSE ${joiningWeight('websocket')}::float8 END) AS w
      FROM calls WHERE status = 'pending' AND assigned_node IS NOT NULL GROUP BY assigned_node ORDER BY 1`);
    const reported = { a: 2, b: 1.5 } as Record<string, number>;
    for (const l of loads) t.true(reported[l.node]! + l.w <= 6 + 1e-9, `${l.node} never past its capacity (${reported[l.node]! + l.w})`);
    const after = placed.indexOf(null);
    t.true(placed.slice(after).every((p) => p === null), 'once full, none');

    // a pending call that ends (expired, joined elsewhere) frees its room on the node it was assigned to
    await db.query(sql.unsafe`UPDATE calls SET status = 'completed', connection_status = 'cancelled' WHERE id = ${c2}`);
    t.like(await assignMediaNode(db, await pending('websocket'), 'websocket', DEAD_AFTER_S), { node_id: 'a' });
    // a node whose own report says it is not accepting gets none even with room by the api's count
    await reportNode(db, 'a', load(2, 6, { accepting: false, publicUrl: 'https://media-a.example.com' }));
    await db.query(sql.unsafe`UPDATE calls SET status = 'completed', connection_status = 'cancelled' WHERE status = 'pending'`);
    const c4 = await pending('websocket');
    t.like(await assignMediaNode(db, c4, 'websocket', DEAD_AFTER_S), { node_id: 'b' });
    // no node reporting at all: no assignment (the shared PUBLIC_URL is used)
    await db.query(sql.unsafe`DELETE FROM media_nodes`);
    const c5 = await pending('websocket');
    t.is(await assignMediaNode(db, c5, 'websocket', DEAD_AFTER_S), null);
    t.is(await assignedOf(c5), null);
  } finally {
    await db.end();
  }
});

test('assignment across api replicas: 12 calls assigned at once never overfill a node (room for 5)', async (t) => {
  const { db } = await createTestDb();
  try {
    const org = await createOrganization(db, { name: 'steer-race', balanceUsd: 10 });
    await reportNode(db, 'only', load(0, 5));
    const ids = await Promise.all(Array.from({ length: 12 }, () => insertPendingCall(db, { orgId: org.id, transport: 'websocket', config: agentConfig({ name: 'race' }) })));
    // each on its own pooled connection, concurrently, as two api replicas would
    const got = await Promise.all(ids.map((id) => assignMediaNode(db, id, 'websocket', DEAD_AFTER_S)));
    t.is(got.filter((g) => g?.node_id === 'only').length, 5);
    t.is(got.filter((g) => g === null).length, 7);
    t.is(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE assigned_node = 'only'`), 5);
  } finally {
    await db.end();
  }
});

test('assignment: calls that joined a node after its last report still hold their room (a burst between two reports never overfills it)', async (t) => {
  const { db } = await createTestDb();
  try {
    const org = await createOrganization(db, { name: 'steer-burst', balanceUsd: 10 });
    // the node reported an empty load; since then two reserved calls joined it (active, not in that report yet)
    await reportNode(db, 'n', load(0, 2));
    const joined = async () => {
      const id = await insertPendingCall(db, { orgId: org.id, transport: 'websocket', config: agentConfig({ name: 'burst' }) });
      t.like(await assignMediaNode(db, id, 'websocket', DEAD_AFTER_S), { node_id: 'n' });
      await db.query(sql.unsafe`UPDATE calls SET status = 'active', started_at = now(), media_node = 'n' WHERE id = ${id}`);
      return id;
    };
    const [a] = [await joined(), await joined()];
    t.is(await assignMediaNode(db, await insertPendingCall(db, { orgId: org.id, transport: 'websocket', config: agentConfig({ name: 'burst' }) }), 'websocket', DEAD_AFTER_S), null, 'full until the node reports');
    // the node's next report carries them: the same answer from its own figure
    await reportNode(db, 'n', load(2, 2));
    t.is(await assignMediaNode(db, await insertPendingCall(db, { orgId: org.id, transport: 'websocket', config: agentConfig({ name: 'burst' }) }), 'websocket', DEAD_AFTER_S), null, 'full by its report');
    // one of them ends and the node reports it: room for one again
    await db.query(sql.unsafe`UPDATE calls SET status = 'completed', ended_at = now() WHERE id = ${a}`);
    await reportNode(db, 'n', load(1, 2));
    t.like(await assignMediaNode(db, await insertPendingCall(db, { orgId: org.id, transport: 'websocket', config: agentConfig({ name: 'burst' }) }), 'websocket', DEAD_AFTER_S), { node_id: 'n' });
  } finally {
    await db.end();
  }
});

// ── real processes ────────────────────────────────────────────────────────────────────────────────────────────

test.after.always(killServiceProcesses);

// three processes starting at once on a loaded CI machine
const startProcess = (entry: string, env: (port: number) => Record<string, string>) => startServiceProcess(entry, env, { listenTimeoutMs: 120_000 });
test('two media nodes with their own addresses: POST /call hands out the less loaded node\'s URL, a full node gets none, a call joining another node is served', async (t) => {
  const { db, url } = await createTestDb();
  const org = await createOrganization(db, { name: 'steer-nodes', balanceUsd: 100 });
  await setOrganizationLimits(db, org.id, { concurrency: 50 });
  const key = (await createApiKey(db, org.id, 'steer')).key;
  const shared = 'http://proxy.test:8080';
  const base = { DATABASE_URL: url, MEDIA_MAX_CALLS: '2', MEDIA_NODE_DEAD_AFTER_S: '20', SIGNING_SECRET: 'steer-test-signing-secret-0123', PUBLIC_URL: shared };
  const [api, n1, n2] = await Promise.all([
    startProcess('api/main.ts', () => base),
    startProcess('media/main.ts', (port) => ({ ...base, MEDIA_PUBLIC_URL: `http://127.0.0.1:${port}` })),
    startProcess('media/main.ts', (port) => ({ ...base, MEDIA_PUBLIC_URL: `http://127.0.0.1:${port}` })),
  ]);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${api.origin}/api/v1${path}`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const agent = await post('/agents', {
    name: 'Steering agent', systemPrompt: 'You are a test agent.', llm: { provider: 'local', model: 'local-demo' },
    stt: { provider: 'local' }, tts: { provider: 'local' }, noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello from the steering test.'] },
  });
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  const newCall = async () => {
    const r = await post('/call', { agentId: agent.body.uuid, transport: 'websocket' });
    t.is(r.status, 200, JSON.stringify(r.body));
    return { id: String(r.body.callId), audioUrl: String(r.body.audioUrl) };
  };
  const wsOrigin = (origin: string) => origin.replace(/^http/, 'ws');
  const nodeRows = () => db.any(sql.type(z.object({ node_id: z.string(), public_url: z.string().nullable(), weighted_load: z.number(), accepting: z.boolean() }))`
    SELECT node_id, public_url, weighted_load, accepting FROM media_nodes ORDER BY node_id`);
  const rows = await until(async () => {
    const r = await nodeRows();
    return r.length === 2 && r.every((n) => n.public_url) ? r : null;
  }, { what: 'both nodes to report their own address', timeoutMs: 30_000 });
  t.deepEqual(new Set(rows.map((r) => r.public_url)), new Set([n1.origin, n2.origin]));
  const nodeAt = (u: string) => rows.find((r) => u.startsWith(`${wsOrigin(r.public_url!)}/`))!;

  // first call: both empty; it goes to one node's own address, and is served there
  const c1 = await newCall();
  const first = nodeAt(c1.audioUrl);
  t.truthy(first, c1.audioUrl);
  const a1 = audioCaller(c1.audioUrl, key);
  await until(() => a1.frames() > 0, { what: 'greeting on the first node', timeoutMs: 60_000 });
  await until(async () => (await nodeRows()).find((r) => r.node_id === first.node_id)!.weighted_load >= 1, { what: 'the first node to report its call', timeoutMs: 15_000 });

  // second call: the other node is less loaded, so its URL is handed out …
  const c2 = await newCall();
  const other = nodeAt(c2.audioUrl);
  t.truthy(other);
  t.not(other.node_id, first.node_id, 'the less loaded node');
  // … but the caller connects to the first node anyway: it is served there (the assignment is advisory)
  const a2 = audioCaller(audioUrlOf(first.public_url!, c2.id), key);
  await until(() => a2.frames() > 0, { what: 'greeting for the call that joined another node', timeoutMs: 60_000 });
  t.is(await db.oneFirst(sql.type(z.object({ media_node: z.string().nullable() }))`SELECT media_node FROM calls WHERE id = ${c2.id}`), first.node_id);
  await until(async () => !(await nodeRows()).find((r) => r.node_id === first.node_id)!.accepting, { what: 'the first node to report itself full', timeoutMs: 15_000 });

  // the first node is full (2 of 2): new calls all go to the other node, until its room is taken by pending calls
  const c3 = await newCall();
  const c4 = await newCall();
  t.is(nodeAt(c3.audioUrl)?.node_id, other.node_id);
  t.is(nodeAt(c4.audioUrl)?.node_id, other.node_id);
  // no node with room by the api's count (its pending calls hold theirs): refused, with nothing created
  const c5 = await post('/call', { agentId: agent.body.uuid, transport: 'websocket' });
  t.is(c5.status, 503);
  t.deepEqual(c5.body, { detail: MEDIA_AT_CAPACITY });

  for (const c of [a1, a2]) c.ws.close(1000);
  await Promise.all([a1.closed, a2.closed]);
  void n1;
  void n2;
  await db.end();
});
