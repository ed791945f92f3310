// No row left behind: a real PostgreSQL outage while a call ends (the test database refuses connections
// and every backend is terminated), rows active without a session on this node, rows of a dead node (with the spool
// recording that node left on disk). Each ends once: row final, slot free, exactly one call.ended and one
// call.completed, one debit when the call cost something.
import test from 'ava';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import pg from 'pg';
import { endOrphanedCalls, notifyOrphans } from '../../../core/calls/orphans.ts';
import { sql } from '../../../core/db/pool.ts';
import { createLogger } from '../../../core/logger.ts';
import { parseWavHeader } from '../../../core/audio/wav.ts';
import type { EngineFactory } from '../../../media/deps.ts';
import { recordingHeader } from '../../../media/pipeline/recorder.ts';
import { handOffPostCall, NODE_ID } from '../../../media/session/lifecycle.ts';
import { spoolRoot } from '../../../media/session/spool.ts';
import { agentConfig, getCallRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { fakeEngines } from '../../fakes/engines.ts';
import { startReceiver } from '../../helpers/http.ts';
import { until } from '../../helpers/wait.ts';
import { startTestWorker, type RunningWorker } from '../../helpers/worker.ts';

const QUEUE = 'no-row-left';
let s: TestServer;
let worker: RunningWorker;
let org: { orgId: string; apiKey: string };
let receiver: Awaited<ReturnType<typeof startReceiver>>;

// fake engines under priced names, so a connected call has a cost and a debit
const factory: EngineFactory = async () => {
  const e = fakeEngines({ stt: { utterances: [] }, llm: [] });
  Object.defineProperties(e.engines.llm, { provider: { value: 'openai' }, model: { value: 'gpt-4o-mini' } });
  Object.defineProperties(e.engines.tts, { provider: { value: 'elevenlabs' }, model: { value: 'eleven_flash_v2_5' } });
  Object.defineProperties(e.engines.stt, { provider: { value: 'deepgram' }, model: { value: 'flux-general-en' } });
  return e;
};

test.before(async () => {
  receiver = await startReceiver();
  // dead after 4 s: the node reconciles every 2 s
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', MEDIA_NODE_DEAD_AFTER_S: '4' }, media: { engines: factory } });
  worker = await startTestWorker(s, QUEUE);
  org = await s.createOrg({ concurrency: 5, balanceUsd: 50 });
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await receiver?.close();
});

const events = (callId: string, event?: string) => receiver.events.filter((e) => e.json?.callId === callId && (!event || e.json.event === event));

/** Wait until post-call finished for the call, then return its events by kind. */
async function settled(callId: string) {
  await until(async () => (await s.db.maybeOneFirst(sql.type(z.object({ done: z.boolean() }))`
    SELECT post_call_completed_at IS NOT NULL AS done FROM calls WHERE id = ${callId}`)) || null, { what: 'post-call to finish', timeoutMs: 90_000 });
  await until(() => events(callId, 'call.completed').length > 0 || null, { what: 'call.completed', timeoutMs: 30_000 });
  const debits = await s.db.anyFirst(sql.type(z.object({ amount_usd: z.number() }))`
    SELECT amount_usd FROM wallet_transactions WHERE call_id = ${callId} AND kind = 'call_debit'`);
  return { ended: events(callId, 'call.ended'), completed: events(callId, 'call.completed'), debits };
}

const liveRows = () => s.db.oneFirst(sql.type(z.object({ n: z.number() }))`
  SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.orgId} AND status IN ('pending', 'active')`);

/** A real outage of the test's database: no new connections, every backend terminated (from the admin database). */
async function outage(on: boolean) {
  const admin = new pg.Client({ connectionString: process.env.TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    const name = new URL(s.config.DATABASE_URL!).pathname.slice(1);
    await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS ${on ? 'false' : 'true'}`);
    if (on) await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  } finally {
    await admin.end();
  }
}

test.serial('the database is down when a call ends: once it is back the row ends, the slot frees, one call.ended, one call.completed, one debit', async (t) => {
  const config = agentConfig({ name: 'outage', maxCallDurationS: 10, webhook: { url: `${receiver.url}/events` } });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await until(() => events(callId, 'call.started').length > 0 || null, { what: 'call.started', timeoutMs: 30_000 });
  await outage(true);
  try {
    // the call hits max_duration with the database down: its row write fails, the caller is let go at once
    const talking = (async () => { while (caller.isOpen) await caller.silence(200); })();
    await caller.closed;
    await talking;
  } finally {
    await outage(false);
  }
  const row = await until(async () => {
    const r = await getCallRow(s.db, callId).catch(() => null);
    return r && r.status !== 'active' ? r : null;
  }, { what: 'the row to end', timeoutMs: 90_000 });
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'max_duration');
  t.is(await liveRows(), 0, 'the concurrency slot is free');
  const { ended, completed, debits } = await settled(callId);
  t.is(ended.length, 1);
  t.is(ended[0]!.json.endedReason, 'max_duration');
  t.is(completed.length, 1);
  t.is(completed[0]!.json.endedReason, 'max_duration');
  t.is(debits.length, 1, 'one debit');
  t.true(debits[0]! < 0, `debit of ${debits[0]} USD`); // a debit is a negative ledger amount
  // the recording streamed to the spool was uploaded and published
  const rec = await fetch(completed[0]!.json.recordingUrl);
  const wav = Buffer.from(await rec.arrayBuffer());
  const seconds = parseWavHeader(wav, wav.length).durationSeconds;
  t.true(Math.abs(seconds - 10) < 1.5, `recording of ${seconds} s`);
});

test.serial('a row active on this node with no session here ends as pipeline_error with one call.ended (the node reconcile)', async (t) => {
  const config = agentConfig({ name: 'lost', webhook: { url: `${receiver.url}/events` } });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  await s.db.query(sql.unsafe`
    UPDATE calls SET status = 'active', connection_status = 'completed', started_at = now() - interval '2 minutes', media_node = ${NODE_ID}
    WHERE id = ${callId}`);
  const row = await until(async () => { const r = await getCallRow(s.db, callId); return r.status !== 'active' ? r : null; }, { what: 'the reconcile', timeoutMs: 30_000 });
  t.is(row.status, 'error');
  t.is(row.ended_reason, 'pipeline_error');
  const { ended, completed } = await settled(callId);
  t.is(ended.length, 1);
  t.is(ended[0]!.json.endedReason, 'pipeline_error');
  t.is(completed.length, 1);
});

test.serial('a dead node left a row and its spool recording: the reconcile publishes the recording and ends the row once', async (t) => {
  const dead = 'gone-host:4242:abcdef';
  const config = agentConfig({ name: 'dead', webhook: { url: `${receiver.url}/events` } });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  await s.db.query(sql.unsafe`
    UPDATE calls SET status = 'active', connection_status = 'completed', started_at = now() - interval '1 minute', media_node = ${dead}
    WHERE id = ${callId}`);
  // what the dead process left on its disk: 3 s of audio under a header it never fixed
  const dir = path.join(spoolRoot(s.config), encodeURIComponent(dead));
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${callId}.wav`);
  writeFileSync(file, Buffer.concat([recordingHeader(0), Buffer.from(new Int16Array(3 * 24000).fill(1200).buffer)]));
  const old = new Date(Date.now() - 60_000);
  utimesSync(file, old, old);
  const row = await until(async () => { const r = await getCallRow(s.db, callId); return r.status !== 'active' ? r : null; }, { what: 'the row to end', timeoutMs: 30_000 });
  t.is(row.ended_reason, 'pipeline_error');
  const { ended, completed } = await settled(callId);
  t.is(ended.length, 1, 'exactly one call.ended');
  t.is(completed.length, 1);
  const rec = await fetch(completed[0]!.json.recordingUrl);
  const wav = Buffer.from(await rec.arrayBuffer());
  t.true(Math.abs(parseWavHeader(wav, wav.length).durationSeconds - 3) < 0.01);
  t.false(existsSync(file), 'the spool file is gone once uploaded');
});

test.serial('the api sweep and the media reconcile race for a dead node\'s rows: each row ends once, one call.ended each', async (t) => {
  const dead = 'another-gone-host:1:aaaaaa';
  const config = agentConfig({ name: 'race', webhook: { url: `${receiver.url}/events` } });
  const ids = await Promise.all([1, 2, 3].map(() => insertPendingCall(s.db, { orgId: org.orgId, config })));
  await s.db.query(sql.unsafe`
    UPDATE calls SET status = 'active', connection_status = 'completed', started_at = now() - interval '1 minute', media_node = ${dead}
    WHERE id = ANY(${sql.array(ids, 'uuid')})`);
  // the api's sweep (core/calls/orphans.ts, as api/main.ts runs it) while the media node reconciles too
  const logger = createLogger({ level: 'silent' });
  const rows = await endOrphanedCalls(s.db, { deadAfterS: 4 });
  await notifyOrphans({ db: s.db, config: s.config, logger }, rows, (r) => handOffPostCall({ temporal: s.temporal?.client ?? null, config: s.config, logger }, r));
  for (const callId of ids) {
    const row = await until(async () => { const r = await getCallRow(s.db, callId); return r.status !== 'active' ? r : null; }, { what: 'the row to end', timeoutMs: 30_000 });
    t.is(row.ended_reason, 'pipeline_error');
    const { ended, completed } = await settled(callId);
    t.is(ended.length, 1, 'exactly one call.ended');
    t.is(completed.length, 1, 'exactly one call.completed');
  }
  t.is(await liveRows(), 0);
});
