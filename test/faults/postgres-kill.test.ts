// PostgreSQL SIGKILL + restart: the real processes in the production shape
// (api/main.ts, media/main.ts, activities/worker.ts) on a PostgreSQL cluster of this file's own (so killing it hurts
// no other test file) and the suite's Temporal, each test on its own database and task queue. In the middle of the
// work the whole server is SIGKILLed — the postmaster and every backend at the same instant (stopped first so it can
// fork nothing more), like a crashed machine or a killed container, not an orderly shutdown — left down a few
// seconds, and started again on the same data directory and port (crash recovery replays the WAL). Then:
//  (a) 10 live calls: 5 callers hang up while the database is down, the other calls go on and hang up after the
//      restart; every row ends once `completed`/`user_hangup` (none `pending`/`active`: the api's dead-node sweep
//      must not take the live node's calls for orphans), one call.ended + one call.completed each, at most one
//      debit, and no process exited;
//  (b) a 200-contact campaign at max_concurrency 10 on the fake Twilio: it completes, every contact dialed exactly
//      once (no lost contact, no duplicate dial), every attempt ended, no call row left pending/active, and carrier
//      status callbacks that arrive while it is down get 503, not 500;
//  (c) post-call processing of 20 calls: every call processed, one debit each, never two call.completed (a
//      call.completed claimed but not sent is the spec's at-most-once delivery: counted and reported);
//  (d) a document ingestion: the document ends `completed` (`failed` with a reason would be acceptable; the
//      retried activity resumes instead), no duplicate chunks; a request while the database is down answers 503.
import test from 'ava';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pgLib from 'pg';
import WebSocket from 'ws';
import { z } from 'zod';
import { createDb, sql, type Db } from '../../core/db/pool.ts';
import { migrate } from '../../core/db/migrate.ts';
import { loadConfig } from '../../core/config.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedPg } from '../../scripts/infra.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { VENDOR_TEST_KEYS } from '../telephony/rest-helpers.ts';
import { carrierScript, csvOf, phoneList } from '../campaigns/helpers.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import {
  byCall, debits, endedCallsHandedOff, jsonPost, kill, killChildren, localAgent, oncePerCall, setupOn, slowEmbeddings, startProcess as startFaultProcess, websocketCall, type Started,
} from './harness.ts';
import { tempDir } from '../helpers/tmp.ts';
import { until } from '../helpers/wait.ts';

const TEMPLATE = 'pgkill_template';
/** How long the server stays down between the kill and the restart. */
const DOWN_MS = 3000;
const count = z.object({ n: z.number() });

interface Cluster { dir: string; port: number; pg: EmbeddedPg }
let cluster: Cluster;

test.before(async () => {
  const dir = tempDir('pgkill-');
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), persistent: false });
  const admin = new pgLib.Client({ connectionString: pg.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${TEMPLATE}`);
  await admin.end();
  await migrate(pg.url(TEMPLATE));
  cluster = { dir, port: pg.port, pg };
});

test.after.always(async () => {
  killChildren();
  await cluster?.pg.stop();
});

async function freshDb(): Promise<{ db: Db; url: string }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pgLib.Client({ connectionString: cluster.pg.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE}`);
  await admin.end();
  const url = cluster.pg.url(name);
  return { db: await createDb(url, { maximumPoolSize: 10, connectionTimeout: 60_000 }), url };
}

/** Every process of the cluster: the postmaster and its children (backends, checkpointer, WAL writer, ...). */
function clusterPids(postmaster: number): number[] {
  const kids = readdirSync(`/proc/${postmaster}/task`).flatMap((tid) => {
    const f = `/proc/${postmaster}/task/${tid}/children`;
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
  });
  return [postmaster, ...kids];
}

const alive = (pid: number) => {
  try {
    // a zombie (killed, not yet reaped) counts as gone
    return !/^\d+ \([^)]*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/**
 * SIGKILL of the whole server: the postmaster is stopped (so it forks nothing more), then it and every child get
 * SIGKILL together. Down for DOWN_MS, then started again on the same data directory and port. Returns the number of
 * processes killed and how long the restart (crash recovery) took.
 */
async function crashAndRestart(t: { log(...v: unknown[]): void; is(a: unknown, b: unknown, m?: string): void }, whileDown?: () => Promise<void>): Promise<{ killed: number; recoveryMs: number }> {
  const pgdata = path.join(cluster.dir, 'pg');
  const postmaster = Number(readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(postmaster, 'SIGSTOP');
  const pids = clusterPids(postmaster);
  // all stopped first, so no backend sees the postmaster die and says goodbye to its client: one instant
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  await until(() => pids.every((pid) => !alive(pid)) || null, { what: 'every PostgreSQL process gone', timeoutMs: 30_000 });
  await Promise.all([new Promise((r) => setTimeout(r, DOWN_MS)), whileDown?.()]); // the outage itself
  const t0 = Date.now();
  const pg = await startEmbeddedPostgres({ dir: pgdata, port: cluster.port, persistent: false });
  const recoveryMs = Date.now() - t0;
  t.is(pg.port, cluster.port, 'restarted on the same port');
  cluster.pg = pg; // the killed instance is left alone: its process is gone
  t.log(`PostgreSQL SIGKILLed (${pids.length} processes), down ${DOWN_MS / 1000} s, restarted with crash recovery in ${recoveryMs} ms`);
  return { killed: pids.length, recoveryMs };
}

/** A process of the service (fault harness) whose PUBLIC_URL is its own origin unless `env` names one. */
async function startProcess(entry: string, env: Record<string, string>, listens = true): Promise<Started> {
  const port = await freePort();
  return startFaultProcess(entry, { PUBLIC_URL: `http://127.0.0.1:${port}`, ...env }, listens, { port, listenTimeoutMs: 180_000 });
}

const stopAll = (procs: Started[]) => Promise.all(procs.map((p) => kill(p.child)));

/** The fault harness's setup() on a fresh database of this file's cluster (each test ends its pool before the crash). */
const setup = async (t: { teardown(fn: () => unknown): void }, queue: string, extraEnv: Record<string, string> = {}) => setupOn(t, await freshDb(), queue, extraEnv);

/** A query that waits out the restart (the pool's connections died with the server). */
const retrying = <T>(fn: () => Promise<T>) => until(async () => { try { return { v: await fn() }; } catch { return null; } }, { what: 'the database', timeoutMs: 60_000 }).then((r) => r.v);

test.serial('(a) PostgreSQL SIGKILLed + restarted during 10 live calls (5 hang up while it is down): every row ends once, one call.ended + one call.completed each', async (t) => {
  t.timeout(240_000);
  const began = Date.now();
  const { db, org, key, receiver, env } = await setup(t, 'pgkill-live');
  const api = await startProcess('api/main.ts', env);
  const media = await startProcess('media/main.ts', env);
  const worker = await startProcess('activities/worker.ts', env, false);
  t.teardown(() => stopAll([api, media, worker]));
  const post = jsonPost(key, () => api.origin);
  const agentId = await localAgent(t, db, post, receiver);
  const calls: string[] = [];
  const sockets: WebSocket[] = [];
  const audio = new Map<string, number>();
  for (let i = 0; i < 10; i++) {
    const { callId, ws } = await websocketCall(t, post, agentId, media.origin, key);
    calls.push(callId);
    audio.set(callId, 0);
    ws.on('message', (_d, binary) => { if (binary) audio.set(callId, audio.get(callId)! + 1); });
    sockets.push(ws);
  }
  await until(() => calls.every((id) => byCall(receiver, id, 'call.started') === 1) || null, { what: '10 calls started', timeoutMs: 90_000 });
  await db.end(); // this test's own pool dies with the server; a new one after the restart

  // half the callers hang up while the database is down (their row writes wait for it), the others after the restart
  await crashAndRestart(t, async () => { for (const ws of sockets.slice(0, 5)) ws.close(1000); });
  const restartedAt = Date.now();
  const db2 = (await freshPool(env.DATABASE_URL!));
  t.teardown(() => db2.end());
  // the other calls went on through the outage: their sockets still open, and the agents speak (greeting audio)
  t.is(sockets.slice(5).filter((ws) => ws.readyState === WebSocket.OPEN).length, 5, 'every remaining caller still connected after the restart');
  const framesAtRestart = [...audio.values()].filter((n) => n > 0).length;
  await until(() => calls.slice(5).every((id) => audio.get(id)! > 0) || null, { what: 'agent audio on every remaining call', timeoutMs: 90_000 });
  for (const ws of sockets.slice(5)) ws.close(1000);
  await until(async () => (await retrying(() => db2.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.id} AND status IN ('pending', 'active')`))) === 0 || null, { what: 'every row to end', timeoutMs: 90_000 });
  t.log(`every row ended ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
  const rows = await db2.any(sql.type(z.object({ status: z.string(), ended_reason: z.string().nullable() }))`
    SELECT status, ended_reason FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')})`);
  t.log(`rows: ${JSON.stringify(tally(rows.map((r) => `${r.status}/${r.ended_reason}`)))}`);
  t.true(rows.every((r) => r.status === 'completed' && r.ended_reason === 'user_hangup'), JSON.stringify(rows));
  await until(async () => (await db2.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')}) AND post_call_completed_at IS NOT NULL`)) === 10 || null, { what: 'post-call of every call', timeoutMs: 120_000 });
  await until(() => calls.every((id) => byCall(receiver, id, 'call.completed') >= 1) || null, { what: 'call.completed for every call', timeoutMs: 30_000 });
  let debited = 0;
  for (const id of calls) {
    t.is(byCall(receiver, id, 'call.ended'), 1, `call.ended of ${id}`);
    t.is(byCall(receiver, id, 'call.completed'), 1, `call.completed of ${id}`);
    const d = await debits(db2, id);
    t.true(d <= 1);
    debited += d;
  }
  t.log(`debits: ${debited} of 10 calls (local engines cost nothing); calls with agent audio at the restart: ${framesAtRestart} of 10`);
  t.deepEqual([...api.exits, ...media.exits, ...worker.exits], [], 'no process exited');
  t.log(`test ran ${Math.round((Date.now() - began) / 1000)} s`);
});

function tally(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
async function freshPool(url: string): Promise<Db> {
  return createDb(url, { maximumPoolSize: 10, connectionTimeout: 60_000 });
}

test.serial('(b) PostgreSQL SIGKILLed + restarted mid-campaign (200 contacts, max_concurrency 10): completes, every contact dialed once, nothing left pending/active', async (t) => {
  t.timeout(300_000);
  const began = Date.now();
  const fake = await FakeTwilio.start();
  t.teardown(() => fake.close());
  const { db, org, key, receiver, env } = await setup(t, 'pgkill-campaign', {
    // a status callback refused while the database was down is not sent again by the carrier: the stale-call sweep
    // ends that call `telephony_no_status` after PHONE_PENDING_TIMEOUT_S (its minimum here, 180 s by default)
    TWILIO_API_BASE_URL: fake.origin, PHONE_PENDING_TIMEOUT_S: '30', ...VENDOR_TEST_KEYS,
  });
  await db.query(sql.unsafe`SELECT setval(pg_get_serial_sequence('campaigns', 'id'), ${1_000_000 + Math.floor(Math.random() * 1_000_000_000)})`);
  const api = await startProcess('api/main.ts', env);
  // the worker builds the carrier's callback URLs from PUBLIC_URL: the api's
  const worker = await startProcess('activities/worker.ts', { ...env, PUBLIC_URL: api.origin }, false);
  t.teardown(() => stopAll([api, worker]));
  const request = async (method: string, p: string, body?: string | Buffer, headers: Record<string, string> = { 'Content-Type': 'application/json' }) => {
    const res = await fetch(`${api.origin}/api/v1${p}`, { method, headers: { 'X-API-Key': key, ...headers }, body });
    return { status: res.status, body: (await res.json()) as any };
  };
  const agent = await request('POST', '/agents', JSON.stringify({
    name: 'Campaign agent', systemPrompt: 'Hello {{name}}', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
    webhook: `${receiver.url}/events`,
  }));
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  const acc = fake.addAccount();
  const cfg = await insertConfig(db, loadConfig({ ...env }), {
    orgId: org.id, name: 'Main line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: false, isDefault: true,
  });
  for (let i = 0; i < 10; i++) {
    const n = `+1415555${String(1000 + i)}`;
    fake.addNumber(acc.sid, n);
    await db.query(sql.unsafe`INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type)
      VALUES (${org.id}, ${cfg.id}, ${n}, ${n}, 'pstn')`);
  }
  const carrier = carrierScript(fake, acc.sid, () => ({ status: 'completed', afterMs: 150 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(200, '+1656');
  const { body: form, contentType } = multipart([{ name: 'file', value: csvOf(numbers), filename: 'contacts.csv', contentType: 'text/csv' }]);
  const file = await request('POST', '/files', form, { 'content-type': contentType });
  t.true(file.status === 200 || file.status === 201, JSON.stringify(file.body));
  const created = await request('POST', '/campaign/create', JSON.stringify({
    name: 'PG kill', agent_uuid: agent.body.uuid, source_type: 'csv', source_id: file.body.id, max_concurrency: 10, retry_config: { enabled: false },
  }));
  t.is(created.status, 200, JSON.stringify(created.body));
  const id = created.body.id as number;
  t.is((await request('POST', `/campaign/${id}/start`)).status, 200);
  await until(() => carrier.state.dials.length >= 60 || null, { what: '60 dials', timeoutMs: 120_000 }).catch(async (err: unknown) => {
    throw new Error(`${(err as Error).message}: ${carrier.state.dials.length} dials; campaign ${JSON.stringify((await request('GET', `/campaign/${id}`)).body)}`);
  });
  await db.end();

  await crashAndRestart(t);
  const atRestart = carrier.state.dials.length;
  t.true(atRestart < 200, `killed mid-campaign (${atRestart} dials)`);
  const db2 = await freshPool(env.DATABASE_URL!);
  t.teardown(() => db2.end());
  const done = await until(async () => {
    const r = await request('GET', `/campaign/${id}`).catch(() => null);
    return r?.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.state) ? r.body : null;
  }, { what: 'the campaign to finish', timeoutMs: 240_000, everyMs: 500 }); // not faster: the organization's request rate is limited
  t.is(done.state, 'completed', JSON.stringify(done.logs));
  t.is(done.executed_count, 200);
  t.is(carrier.state.dials.length, 200, 'no number dialed twice');
  t.deepEqual(carrier.state.dials.map((d) => d.to).sort(), [...numbers].sort(), 'every contact dialed');
  t.true(carrier.state.maxLive <= 10, `max live ${carrier.state.maxLive}`);
  const attempts = await db2.any(sql.type(z.object({ phone_number: z.string(), attempt: z.number(), ended_at: z.string().nullable(), call_id: z.string().nullable(), connection_status: z.string().nullable() }))`
    SELECT c.phone_number, a.attempt, a.ended_at, a.call_id::text, a.connection_status
    FROM campaign_attempts a JOIN campaign_contacts c ON c.id = a.contact_id WHERE a.campaign_id = ${id}`);
  t.is(attempts.length, 200);
  t.true(attempts.every((r) => r.attempt === 1 && r.ended_at !== null && r.call_id !== null), JSON.stringify(attempts.filter((r) => r.ended_at === null || r.call_id === null)));
  t.log(`attempts: ${JSON.stringify(tally(attempts.map((r) => String(r.connection_status))))}; dials at the restart ${atRestart}`);
  // carrier status callbacks that reached the api while the database was down were refused 503 (never a 500)
  t.log(`status callbacks refused: ${JSON.stringify(tally(carrier.state.errors.map((e) => e.slice(0, 20))))}`);
  t.false(carrier.state.errors.some((e) => e.startsWith('status callback 500')), JSON.stringify(carrier.state.errors));
  const stuck = await db2.oneFirst(sql.type(count)`SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.id} AND status IN ('pending', 'active')`);
  t.is(stuck, 0, 'no call row left pending/active');
  const callIds = attempts.map((r) => r.call_id!);
  t.is(new Set(callIds).size, 200);
  // these calls never connect (the carrier ends them with no media stream): no debit; call.completed at most once
  await until(async () => (await db2.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM calls WHERE id = ANY(${sql.array(callIds, 'uuid')}) AND post_call_completed_at IS NOT NULL`)) === 200 || null, { what: 'post-call of all 200 calls', timeoutMs: 120_000 });
  let completed = 0;
  for (const cid of callIds) {
    const n = byCall(receiver, cid, 'call.completed');
    t.true(n <= 1, `call.completed of ${cid} sent ${n} times`);
    completed += n;
    t.is(await debits(db2, cid), 0);
  }
  t.log(`call.completed received for ${completed} of 200 unconnected calls (all post-processed)`);
  const missing = callIds.filter((cid) => byCall(receiver, cid, 'call.completed') === 0);
  if (missing.length) {
    t.log(`without call.completed: ${JSON.stringify(await db2.any(sql.type(z.object({ id: z.string(), status: z.string(), ended_reason: z.string().nullable(), connection_status: z.string().nullable(), claimed: z.string().nullable(), post_call: z.string().nullable(), webhooks: z.unknown() }))`
      SELECT id::text, status, ended_reason, connection_status, completed_event_claimed_at AS claimed, post_call_completed_at AS post_call, logs->'webhooks' AS webhooks
      FROM calls WHERE id = ANY(${sql.array(missing, 'uuid')})`))}`);
  }
  t.deepEqual([...api.exits, ...worker.exits], [], 'no process exited');
  t.log(`test ran ${Math.round((Date.now() - began) / 1000)} s`);
});

test.serial('(c) PostgreSQL SIGKILLed + restarted during post-call of 20 calls: every call processed, one debit each, never two call.completed', async (t) => {
  t.timeout(240_000);
  const began = Date.now();
  const queue = 'pgkill-post-call';
  const { db, org, receiver, env } = await setup(t, queue);
  const { calls } = await endedCallsHandedOff(t, { db, orgId: org.id, receiver, env });
  await db.end();

  const worker = await startProcess('activities/worker.ts', env, false);
  t.teardown(() => stopAll([worker]));
  await until(() => receiver.events.some((e) => e.json?.event === 'call.completed') || null, { what: 'the first call.completed', timeoutMs: 90_000 });
  const atKill = receiver.events.filter((e) => e.json?.event === 'call.completed').length;
  await crashAndRestart(t);
  t.log(`${atKill} of 20 call.completed sent when PostgreSQL was killed`);
  const db2 = await freshPool(env.DATABASE_URL!);
  t.teardown(() => db2.end());
  await until(async () => (await retrying(() => db2.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')}) AND post_call_completed_at IS NOT NULL`))) === 20 || null, { what: 'post-call of all 20 calls', timeoutMs: 180_000 });
  const lost = await oncePerCall(t, db2, receiver, calls);
  t.log(`call.completed lost to the crash: ${lost} of 20`);
  t.deepEqual(worker.exits, [], 'the worker did not exit');
  t.log(`test ran ${Math.round((Date.now() - began) / 1000)} s`);
});

test.serial('(d) PostgreSQL SIGKILLed + restarted mid-document: the document ends completed with no duplicate chunks', async (t) => {
  t.timeout(240_000);
  const began = Date.now();
  const embed = await slowEmbeddings(250);
  t.teardown(() => embed.close());
  const { db, key, receiver, env } = await setup(t, 'pgkill-documents', { EMBEDDING_BASE_URL: embed.url, EMBEDDING_MODEL: 'fake-embed' });
  await receiver.close();
  const api = await startProcess('api/main.ts', env);
  const worker = await startProcess('activities/worker.ts', env, false);
  t.teardown(() => stopAll([api, worker]));
  const sections = Array.from({ length: 300 }, (_, i) => `## Section ${i}\n\nItem ${i} costs ${i + 1} euros and ships in ${(i % 5) + 1} days.`);
  const res = await fetch(`${api.origin}/api/v1/knowledge-base/create-from-text`, {
    method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'catalogue.md', text: sections.join('\n\n') }),
  });
  t.is(res.status, 201);
  const id = ((await res.json()) as { id: string }).id;
  const chunks = (d: Db) => d.one(sql.type(z.object({ n: z.number(), distinct_idx: z.number(), with_vec: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_idx, count(embedding)::int AS with_vec FROM document_chunks WHERE document_id = ${id}`);
  await until(async () => (await chunks(db)).n >= 50 || null, { what: 'the first chunks written', timeoutMs: 120_000 });
  await db.end();
  await crashAndRestart(t, async () => {
    // a request while the database is down: 503 with a retry hint, not a 500
    const r = await fetch(`${api.origin}/api/v1/files/${id}`, { headers: { 'X-API-Key': key } });
    t.is(r.status, 503);
    t.is(r.headers.get('retry-after'), '1');
    t.is(((await r.json()) as { detail: string }).detail, 'Database unavailable; retry shortly');
  });
  embed.setDelay(0);
  const done = await until(async () => {
    const r = await fetch(`${api.origin}/api/v1/files/${id}`, { headers: { 'X-API-Key': key } }).catch(() => null);
    if (r?.status !== 200) return null;
    const b = (await r.json()) as { status: string; error?: string | null; totalChunks?: number };
    return b.status === 'completed' || b.status === 'failed' ? b : null;
  }, { what: 'the document to be processed', timeoutMs: 180_000, everyMs: 500 }); // not faster: the organization's request rate is limited
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.totalChunks, 300);
  const db2 = await freshPool(env.DATABASE_URL!);
  t.teardown(() => db2.end());
  t.deepEqual(await chunks(db2), { n: 300, distinct_idx: 300, with_vec: 300 });
  t.deepEqual([...api.exits, ...worker.exits], [], 'no process exited');
  t.log(`test ran ${Math.round((Date.now() - began) / 1000)} s`);
});
