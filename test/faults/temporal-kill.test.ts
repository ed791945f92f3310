// Temporal faults: each test starts its OWN Temporal dev server on a
// persistent --db-filename (as `npm start` runs it), the real processes pointed at it, kills the server with
// SIGKILL in the middle of work and starts it again on the same db file and port (a production Temporal keeps its
// state across a crash). The rest of the suite's Temporal is never touched.
import test, { type ExecutionContext } from 'ava';
import path from 'node:path';
import type WebSocket from 'ws';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';
import { connectTemporal } from '../../core/temporal.ts';
import { loadConfig } from '../../core/config.ts';
import { freePort, startTemporalDev, type TemporalDev } from '../../scripts/infra.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { VENDOR_TEST_KEYS } from '../telephony/rest-helpers.ts';
import { carrierScript, csvOf, phoneList } from '../campaigns/helpers.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import {
  alive, apiClient, byCall, debits, endedCallsHandedOff, jsonPost, kill, killChildren, localAgent, oncePerCall, setup as faultSetup, slowEmbeddings, startProcess, websocketCall, type LogLine,
} from './harness.ts';
import { tempDir } from '../helpers/tmp.ts';
import { until } from '../helpers/wait.ts';

const servers: TemporalDev[] = [];
test.after.always(async () => {
  killChildren();
  // a killed server's stop() would wait for an exit that already happened
  for (const s of servers) if (alive(s.child)) await s.stop();
});

const count = z.object({ n: z.number() });

/** A Temporal dev server of this test alone, on `dbFile` (kept across restarts) and `port` (the same after a restart). */
async function temporalServer(dbFile: string, port?: number): Promise<TemporalDev> {
  const server = await startTemporalDev({ dbFile, port: port ?? await freePort(), headless: true });
  servers.push(server);
  return server;
}

/** SIGKILL the dev server, then (after `down`, which runs while it is down) start it again on the same db and port. */
async function killTemporal(server: TemporalDev, dbFile: string, down: () => Promise<void> = async () => {}): Promise<{ server: TemporalDev; downMs: number }> {
  const killedAt = Date.now();
  await kill(server.child);
  await down();
  const port = Number(server.address.split(':')[1]);
  const again = await temporalServer(dbFile, port);
  if (again.address !== server.address) throw new Error(`restarted on ${again.address}, not ${server.address}`);
  return { server: again, downMs: Date.now() - killedAt };
}

/** The fault harness's setup() with a Temporal dev server of the test's own (its db file in the test's DATA_DIR). */
async function setup(t: ExecutionContext, name: string, extra: Record<string, string> = {}) {
  const dir = tempDir(`temporal-kill-${name}-`);
  const dbFile = path.join(dir, 'temporal.db');
  const temporal = await temporalServer(dbFile);
  const s = await faultSetup(t, `temporal-kill-${name}`, { DATA_DIR: dir, TEMPORAL_ADDRESS: temporal.address, ...extra });
  return { ...s, temporal, dbFile };
}

/** Resolves once a worker polls `env`'s workflow task queue on its Temporal server (the worker process is up). */
async function workerPolling(env: Record<string, string>): Promise<void> {
  const client = await connectTemporal(env.TEMPORAL_ADDRESS!, 'default');
  try {
    await until(async () => (await client.connection.workflowService.describeTaskQueue({
      namespace: 'default', taskQueue: { name: env.TEMPORAL_TASK_QUEUE! }, taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
    })).pollers?.length || null, { what: 'the worker to poll its task queue', timeoutMs: 120_000, everyMs: 250 });
  } finally {
    await client.close();
  }
}

const postCallDone = (db: Db, calls: string[]) => db.oneFirst(sql.type(count)`
  SELECT count(*)::int AS n FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')}) AND post_call_completed_at IS NOT NULL`);

test.serial('(c) Temporal SIGKILLed during post-call of 20 calls, restarted: every call processed, one debit each, no duplicate call.completed; a call ending while it is down is processed once it is back', async (t) => {
  t.timeout(300_000);
  const { db, org, receiver, env, temporal, dbFile } = await setup(t, 'postcall');
  const { calls, insertEnded, handOff: handOffOne } = await endedCallsHandedOff(t, { db, orgId: org.id, receiver, env });

  const worker = await startProcess('activities/worker.ts', env, false);
  await until(() => receiver.events.some((e) => e.json?.event === 'call.completed') || null, { what: 'the first call.completed', timeoutMs: 90_000, everyMs: 250 });
  const atKill = receiver.events.filter((e) => e.json?.event === 'call.completed').length;
  // while the server is down: one more call ends and is handed off (media's hand-off retries with backoff)
  const late = await insertEnded();
  let handOff: Promise<void> = Promise.resolve();
  const { downMs } = await killTemporal(temporal, dbFile, async () => {
    handOff = handOffOne(late);
    await new Promise((r) => setTimeout(r, 3000)); // the outage: the server stays down for a while
  });
  t.log(`${atKill} of 20 call.completed sent when the server was killed; down ${(downMs / 1000).toFixed(1)} s`);
  const restartedAt = Date.now();
  await handOff;
  const all = [...calls, late];
  await until(async () => (await postCallDone(db, all)) === all.length || null, { what: 'post-call of all 21 calls', timeoutMs: 180_000, everyMs: 250 });
  t.log(`all 21 processed ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
  t.true(alive(worker.child), 'the worker process survived the outage');
  const lost = await oncePerCall(t, db, receiver, all);
  t.is(byCall(receiver, late, 'call.completed'), 1, 'the call that ended during the outage got its call.completed');
  t.log(`call.completed lost to the outage: ${lost} of 21`);
});

test.serial('(d) Temporal SIGKILLed mid-document, restarted: completed, no duplicate chunks; process-document while it is down answers 503 and marks the document failed with a reason, a retry once it is back completes', async (t) => {
  t.timeout(300_000);
  const embed = await slowEmbeddings(300);
  t.teardown(() => embed.close());
  const apiPort = await freePort();
  const { db, key, env, temporal, dbFile, receiver } = await setup(t, 'docs', { EMBEDDING_BASE_URL: embed.url, EMBEDDING_MODEL: 'fake-embed', PUBLIC_URL: `http://127.0.0.1:${apiPort}` });
  await receiver.close();
  const api = await startProcess('api/main.ts', env, true, { port: apiPort });
  const worker = await startProcess('activities/worker.ts', env, false);
  const request = apiClient<Record<string, any>>(key, () => api.origin);
  const chunks = (id: string) => db.one(sql.type(z.object({ n: z.number(), distinct_idx: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_idx FROM document_chunks WHERE document_id = ${id}`);
  const processed = (id: string) => until(async () => {
    const r = await request('GET', `/files/${id}`);
    return r.body.status === 'completed' || r.body.status === 'failed' ? r.body : null;
  }, { what: `document ${id} processed`, timeoutMs: 180_000, everyMs: 250 });

  const sections = Array.from({ length: 1000 }, (_, i) => `## Section ${i}\n\nItem ${i} costs ${i + 1} euros and ships in ${(i % 5) + 1} days.`);
  const created = await request('POST', '/knowledge-base/create-from-text', { name: 'catalogue.md', text: sections.join('\n\n') });
  t.is(created.status, 201, JSON.stringify(created.body));
  const docId = String(created.body.id);
  await until(async () => (await chunks(docId)).n >= 100 || null, { what: 'the first batch of chunks', timeoutMs: 120_000, everyMs: 250 });

  // the upload of a second document, registered while the server is down
  const u = await request('POST', '/knowledge-base/upload-url', { filename: 'faq.md', mime_type: 'text/markdown' });
  t.is(u.status, 200, JSON.stringify(u.body));
  t.is((await fetch(u.body.upload_url, { method: 'PUT', headers: { 'content-type': 'text/markdown' }, body: '# FAQ\n\nOpening hours are nine to five.' })).status, 200);
  const processBody = { document_uuid: u.body.document_uuid, s3_key: u.body.s3_key, retrieval_mode: 'chunked' };
  let whileDown: { status: number; body: Record<string, any> } | null = null;
  let atKill = 0;
  const { downMs } = await killTemporal(temporal, dbFile, async () => {
    atKill = (await chunks(docId)).n;
    whileDown = await request('POST', '/knowledge-base/process-document', processBody);
  });
  t.log(`killed at ${atKill} of 1000 chunks; down ${(downMs / 1000).toFixed(1)} s (process-document answered while down)`);
  t.true(atKill < 1000, `killed mid-document (${atKill} chunks)`);
  const down = whileDown as unknown as { status: number; body: Record<string, any> };
  t.is(down.status, 503, JSON.stringify(down.body));
  t.is(down.body.detail, 'Document processing is temporarily unavailable');
  const failed = await request('GET', `/files/${String(u.body.document_uuid)}`);
  t.is(failed.body.status, 'failed');
  t.is(failed.body.error, 'Document processing could not be started');

  const restartedAt = Date.now();
  const done = await processed(docId);
  t.log(`the document ended ${done.status} ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.deepEqual(await chunks(docId), { n: 1000, distinct_idx: 1000 });
  t.true(alive(worker.child) && alive(api.child), 'api and worker survived the outage');

  // the client retries process-document once Temporal is back: same document, completed
  const retried = await request('POST', '/knowledge-base/process-document', processBody);
  t.is(retried.status, 201, JSON.stringify(retried.body)); // registered again (it was failed), ingestion started
  t.is((await processed(String(u.body.document_uuid))).status, 'completed');
});

test.serial('(a) Temporal SIGKILLed during 10 live calls: the calls go on and end while it is down, POST /call still serves; once it is back every call gets one call.ended, one call.completed, one debit', async (t) => {
  t.timeout(300_000);
  const { db, org, key, receiver, env, temporal, dbFile } = await setup(t, 'live');
  const mediaLogs: LogLine[] = [];
  const [api, media] = await Promise.all([startProcess('api/main.ts', env), startProcess('media/main.ts', env, true, { logs: mediaLogs })]);
  const worker = await startProcess('activities/worker.ts', env, false);
  await workerPolling(env);
  const post = jsonPost(key, () => api.origin);
  const agentId = await localAgent(t, db, post, receiver);
  const calls: string[] = [];
  const sockets: WebSocket[] = [];
  const dial = async () => {
    const { callId, ws } = await websocketCall(t, post, agentId, media.origin, key);
    calls.push(callId);
    sockets.push(ws);
  };
  for (let i = 0; i < 10; i++) await dial();
  await until(() => calls.every((id) => byCall(receiver, id, 'call.started') === 1) || null, { what: '10 calls started', timeoutMs: 90_000, everyMs: 250 });
  const live = () => db.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.id} AND status IN ('pending', 'active')`);

  let endedWhileDown = 0;
  const { downMs } = await killTemporal(temporal, dbFile, async () => {
    // a new call is placed and answered while the server is down, then every caller hangs up
    await dial();
    await until(() => byCall(receiver, calls.at(-1)!, 'call.started') === 1 || null, { what: 'the call placed during the outage to start', timeoutMs: 60_000, everyMs: 250 });
    for (const ws of sockets) ws.close(1000);
    await until(async () => (await live()) === 0 || null, { what: 'every row to end while the server is down', timeoutMs: 60_000, everyMs: 250 });
    await until(() => calls.every((id) => byCall(receiver, id, 'call.ended') === 1) || null, { what: 'call.ended of every call while the server is down', timeoutMs: 60_000, everyMs: 250 });
    endedWhileDown = calls.length;
    // the server stays down until every call's post-call hand-off has failed at least once (media logs each try)
    await until(() => calls.every((id) => mediaLogs.some((l) => l.callId === id && l.msg === 'post-call hand-off failed: retrying')) || null, { what: 'a failed post-call hand-off of every call', timeoutMs: 120_000, everyMs: 250 });
  });
  t.log(`server down ${(downMs / 1000).toFixed(1)} s; ${endedWhileDown} of ${calls.length} calls ended (row + call.ended) while it was down, each hand-off failed at least once`);
  const restartedAt = Date.now();
  const rows = await db.any(sql.type(z.object({ status: z.string(), ended_reason: z.string().nullable() }))`
    SELECT status, ended_reason FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')})`);
  t.true(rows.every((r) => r.status === 'completed' && r.ended_reason === 'user_hangup'), JSON.stringify(rows));
  await until(async () => (await postCallDone(db, calls)) === calls.length || null, { what: 'post-call of every call', timeoutMs: 180_000, everyMs: 250 }).catch(async (err: unknown) => {
    // where each unfinished post-call stands, for the failure message
    const client = await connectTemporal(env.TEMPORAL_ADDRESS!, 'default');
    const open = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id::text FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')}) AND post_call_completed_at IS NULL`);
    const where = await Promise.all(open.map(async (id) => {
      const wf = await client.client.workflow.getHandle(`postCall-${id}`).describe().then((d) => d.status.name, (e: unknown) => String(e).slice(0, 80));
      const tries = mediaLogs.filter((l) => l.callId === id).map((l) => l.msg);
      return { id, wf, tries };
    }));
    await client.close();
    throw new Error(`${(err as Error).message}: ${JSON.stringify(where)}; worker alive ${alive(worker.child)}, media alive ${alive(media.child)}`);
  });
  t.log(`post-call of all ${calls.length} done ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
  await until(() => calls.every((id) => byCall(receiver, id, 'call.completed') >= 1) || null, { what: 'call.completed for every call', timeoutMs: 30_000, everyMs: 250 });
  for (const id of calls) {
    t.is(byCall(receiver, id, 'call.ended'), 1, `call.ended of ${id}`);
    t.is(byCall(receiver, id, 'call.completed'), 1, `call.completed of ${id}`);
    // one debit per call that cost something (a call hung up within its first second may cost 0: no debit)
    const cost = await db.oneFirst(sql.type(z.object({ cost: z.number().nullable() }))`SELECT cost::float8 AS cost FROM calls WHERE id = ${id}`);
    t.is(await debits(db, id), (cost ?? 0) > 0 ? 1 : 0, `debit of ${id} (cost ${cost})`);
  }
  t.true(alive(api.child) && alive(media.child) && alive(worker.child), 'api, media and worker survived the outage');
});

test.serial('(b) Temporal SIGKILLed during a 200-contact campaign at max_concurrency 10, restarted: every contact dialed exactly once, no row left live; POST /campaign/{id}/start while it is down answers 503 and changes nothing', async (t) => {
  t.timeout(1_200_000);
  const fake = await FakeTwilio.start();
  t.teardown(() => fake.close());
  const apiPort = await freePort();
  const { db, org, key, env, temporal, dbFile, receiver } = await setup(t, 'campaign', {
    PUBLIC_URL: `http://127.0.0.1:${apiPort}`, TWILIO_API_BASE_URL: fake.origin, ...VENDOR_TEST_KEYS,
  });
  await receiver.close();
  const api = await startProcess('api/main.ts', env, true, { port: apiPort });
  const worker = await startProcess('activities/worker.ts', env, false);
  const request = apiClient<Record<string, any>>(key, () => api.origin);
  const agent = await request('POST', '/agents', { name: 'Campaign agent', systemPrompt: 'Hello {{name}}', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } });
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  const acc = fake.addAccount();
  const cfg = await insertConfig(db, loadConfig({ ...env }), { orgId: org.id, name: 'Main line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: false, isDefault: true });
  for (let i = 0; i < 10; i++) {
    const n = `+1415555${String(3000 + i)}`;
    fake.addNumber(acc.sid, n);
    await db.query(sql.unsafe`INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type) VALUES (${org.id}, ${cfg.id}, ${n}, ${n}, 'pstn')`);
  }
  const create = async (numbers: string[]) => {
    const { body, contentType } = multipart([{ name: 'file', value: csvOf(numbers), filename: 'contacts.csv', contentType: 'text/csv' }]);
    const file = await fetch(`${api.origin}/api/v1/files`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });
    const sourceId = ((await file.json()) as { id: string }).id;
    const c = await request('POST', '/campaign/create', { name: 'Temporal fault', agent_uuid: agent.body.uuid, source_type: 'csv', source_id: sourceId, max_concurrency: 10, retry_config: { enabled: false } });
    t.is(c.status, 200, JSON.stringify(c.body));
    return Number(c.body.id);
  };
  const numbers = phoneList(200, '+1656');
  const id = await create(numbers);
  const later = phoneList(3, '+1657');
  const laterId = await create(later);
  const carrier = carrierScript(fake, acc.sid, () => ({ status: 'completed', afterMs: 300 }));
  t.teardown(carrier.stop);
  const startedAt = Date.now();
  t.is((await request('POST', `/campaign/${id}/start`)).status, 200);
  await until(() => carrier.state.dials.length >= 40 || null, { what: '40 dials', timeoutMs: 180_000, everyMs: 250 });
  t.log(`40 dials ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the start`);

  let startWhileDown: { status: number; body: Record<string, any> } | null = null;
  let atKill = 0;
  const { downMs } = await killTemporal(temporal, dbFile, async () => {
    atKill = carrier.state.dials.length;
    startWhileDown = await request('POST', `/campaign/${laterId}/start`);
  });
  const restartedAt = Date.now();
  t.log(`killed at ${atKill} of 200 dials; down ${(downMs / 1000).toFixed(1)} s (a start request answered while down)`);
  t.true(atKill < 200, `killed mid-campaign (${atKill} dials)`);
  const down = startWhileDown as unknown as { status: number; body: Record<string, any> };
  t.is(down.status, 503, JSON.stringify(down.body));
  t.is((await request('GET', `/campaign/${laterId}`)).body.state, 'created', 'the refused start changed nothing');

  const finished = (cid: number) => until(async () => {
    const c = await request('GET', `/campaign/${cid}`);
    return c.body.state === 'completed' ? c.body : null;
  }, { what: `campaign ${cid} completed`, timeoutMs: 720_000, everyMs: 250 }).catch(async (err: unknown) => {
    // what the campaign was doing, for the failure message
    const client = await connectTemporal(env.TEMPORAL_ADDRESS!, 'default');
    const progress = await client.client.workflow.getHandle(`campaign-${cid}`).query('progress').catch((e: unknown) => String(e));
    await client.close();
    const open = await db.any(sql.type(z.object({ contact_id: z.number(), attempt: z.number(), call_id: z.string().nullable(), status: z.string().nullable(), connection_status: z.string().nullable() }))`
      SELECT a.contact_id, a.attempt, a.call_id::text, c.status, c.connection_status FROM campaign_attempts a LEFT JOIN calls c ON c.id = a.call_id
      WHERE a.campaign_id = ${cid} AND a.ended_at IS NULL`);
    throw new Error(`${(err as Error).message}: ${carrier.state.dials.length} dials; progress ${JSON.stringify(progress)}; open attempts ${JSON.stringify(open)}; worker alive ${alive(worker.child)}, api alive ${alive(api.child)}`);
  });
  const done = await finished(id);
  t.log(`campaign completed ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
  t.is(done.executed_count, 200);
  const dialed = carrier.state.dials.map((d) => d.to);
  t.is(dialed.filter((n) => numbers.includes(n)).length, 200, 'no number dialed twice');
  t.deepEqual([...new Set(dialed)].filter((n) => numbers.includes(n)).sort(), [...numbers].sort(), 'every contact dialed');
  t.true(carrier.state.maxLive <= 10, `at most 10 calls at once (${carrier.state.maxLive})`);

  // the campaign refused during the outage starts once the server is back
  t.is((await request('POST', `/campaign/${laterId}/start`)).status, 200);
  t.is((await finished(laterId)).executed_count, 3);
  const attempts = await db.any(sql.type(z.object({ n: z.number(), ended: z.number(), calls: z.number() }))`
    SELECT count(*)::int AS n, count(ended_at)::int AS ended, count(DISTINCT call_id)::int AS calls FROM campaign_attempts WHERE campaign_id = ${id}`);
  t.deepEqual(attempts[0], { n: 200, ended: 200, calls: 200 });
  t.is(await db.oneFirst(sql.type(count)`SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.id} AND status IN ('pending', 'active')`), 0, 'no row left live');
  // every call (never connected: the carrier ends them before any media) gets its post-call, also those that ended
  // while the server was down (the api's hand-off retried in the background until it was back)
  const orgCalls = (await db.any(sql.type(z.object({ id: z.string() }))`SELECT id::text FROM calls WHERE organization_id = ${org.id}`)).map((r) => r.id);
  t.is(orgCalls.length, 203);
  await until(async () => (await postCallDone(db, orgCalls)) === orgCalls.length || null, { what: 'post-call of every campaign call', timeoutMs: 180_000, everyMs: 250 });
  t.true(alive(api.child) && alive(worker.child), 'api and worker survived the outage');
});
