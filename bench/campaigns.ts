// bench/campaigns: (1) a 10,000-row contact CSV validated (POST /campaign/create) and imported (the workflow's
// syncing step, batched INSERT … SELECT unnest) — target ≤ 10 s together; baseline in the same run: the same rows
// inserted one statement per row. (2) Dispatch through Temporal against the fake Twilio: 1,000 contacts at
// max_concurrency 20, every call ended by the carrier 10 ms after the dial; dials per second and the workflow's
// history (events and bytes, summed over continue-as-new runs) per 1,000 contacts; baseline: the same 1,000 dials
// through placeOutboundCall directly (20 at a time, no workflow).
//
//   node_modules/.bin/tsx bench/campaigns.ts        (or: npm run bench -- campaigns)
//   ROWS=20000 DIALS=2000 node_modules/.bin/tsx bench/campaigns.ts
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DateTime } from 'luxon';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { createWorker } from '../activities/worker.ts';
import { loadConfig } from '../core/config.ts';
import { createDb, sql, type Db } from '../core/db/pool.ts';
import { createLogger } from '../core/logger.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../core/orgs.ts';
import { createStorage } from '../core/storage/index.ts';
import { connectTemporal } from '../core/temporal.ts';
import { placeOutboundCall } from '../core/telephony/outbound.ts';
import { insertConfig } from '../core/telephony/store.ts';
import { freePort, startScratchDatabase, startTemporalDev } from '../scripts/infra.ts';
import { startCombined } from '../scripts/server.ts';
import { FakeTwilio, type FakeCall } from '../test/fakes/twilio.ts';
import { campaignWorkflowId } from '../workflows/campaign/messages.ts';

const ROWS = Number(process.env.ROWS ?? 10_000);
const DIALS = Number(process.env.DIALS ?? 1_000);
const CONCURRENCY = 20;
const TARGET_IMPORT_S = 10;
const QUEUE = 'bench-campaigns';
const log = (m: string) => process.stdout.write(`${m}\n`);
const logger = createLogger({ level: 'silent' });

const scratch = await startScratchDatabase({ prefix: 'vas-bench-campaigns-' });
const temporal = await startTemporalDev({ headless: true, port: 0 });
const fake = await FakeTwilio.start();
let exitCode = 0;
try {
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: scratch.url, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: path.join(scratch.dir, 'data'),
    SIGNING_SECRET: 'bench-signing-secret-0123456789', LOG_LEVEL: 'silent', TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: QUEUE,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TWILIO_API_BASE_URL: fake.origin,
  });
  const db = await createDb(scratch.url, { maximumPoolSize: 20 });
  const th = await connectTemporal(temporal.address, 'default');
  const storage = createStorage(config);
  const server = await startCombined({ config, db, logger, temporal: th, storage }, port, '127.0.0.1');
  const base = `http://127.0.0.1:${port}/api/v1`;
  const { worker, connection } = await createWorker({ config, db, logger, taskQueue: QUEUE, storage });
  const running = worker.run();

  // Every dial ends (busy would retry; `completed` before the stream → cancelled, not retried) 10 ms later.
  const dialTimes: number[] = [];
  fake.on('dial', (call: FakeCall) => {
    dialTimes.push(performance.now());
    setTimeout(() => { void fake.finish(call.sid, 'completed').catch(() => undefined); }, 10);
  });

  const org = await setupOrg(db, config);
  const req = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${base}${p}`, { method, headers: { 'x-api-key': org.key, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    return { status: res.status, body: (await res.json()) as any };
  };
  const upload = async (csv: string) => {
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
    const res = await fetch(`${base}/files`, { method: 'POST', headers: { 'x-api-key': org.key }, body: form });
    return ((await res.json()) as { id: string }).id;
  };
  const csvOf = (n: number, prefix: string) =>
    `phone_number,first_name,city\n${Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(7, '0')},Name${i},City${i % 50}`).join('\n')}\n`;
  const waitState = async (id: number, state: string) => {
    for (;;) {
      const c = await req('GET', `/campaign/${id}`);
      if (c.body.state === state) return c.body;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // ---- (1) validate + import ROWS ----------------------------------------------------------------------
  const csv = csvOf(ROWS, '+1650');
  const sourceId = await upload(csv);
  const farDay = (DateTime.utc().weekday - 1 + 3) % 7;
  const t0 = performance.now();
  const created = await req('POST', '/campaign/create', {
    name: 'bench import', agent_uuid: org.agentUuid, source_type: 'csv', source_id: sourceId,
    schedule_config: { timezone: 'UTC', slots: [{ day_of_week: farDay, start_time: '00:00', end_time: '00:01' }] },
  });
  if (created.status !== 200) throw new Error(`create ${created.status}: ${JSON.stringify(created.body)}`);
  const tCreated = performance.now();
  await req('POST', `/campaign/${created.body.id}/start`);
  const imported = await waitState(created.body.id, 'running');
  const tImported = performance.now();
  const validateS = (tCreated - t0) / 1000;
  const importS = (tImported - tCreated) / 1000;
  log(`csv: ${ROWS} rows, ${(csv.length / 1024).toFixed(0)} KiB`);
  log(`validate (POST /campaign/create): ${validateS.toFixed(2)} s`);
  log(`start → running (import of ${imported.total_queued_count} contacts through the workflow): ${importS.toFixed(2)} s`);
  log(`validate + import: ${(validateS + importS).toFixed(2)} s (target ≤ ${TARGET_IMPORT_S} s) ${validateS + importS <= TARGET_IMPORT_S ? 'OK' : 'MISSED'}`);
  if (validateS + importS > TARGET_IMPORT_S) exitCode = 1;
  await th.client.workflow.getHandle(campaignWorkflowId(created.body.id)).terminate('bench');

  // Baseline: the same contacts, one INSERT per row.
  const baselineCampaign = await db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO campaigns (organization_id, name, agent_id, source_type, source_id, source_key, telephony_configuration_id, max_concurrency, retry_config, circuit_breaker)
    SELECT organization_id, 'baseline', agent_id, source_type, source_id, source_key, telephony_configuration_id, 1, retry_config, circuit_breaker
    FROM campaigns WHERE id = ${created.body.id} RETURNING id`);
  const rows = csv.trim().split('\n').slice(1).map((l) => l.split(','));
  const b0 = performance.now();
  for (let i = 0; i < rows.length; i++) {
    const [phone, first, city] = rows[i]!;
    await db.query(sql.unsafe`
      INSERT INTO campaign_contacts (campaign_id, row_number, phone_number, context_variables)
      VALUES (${baselineCampaign}, ${i + 1}, ${phone!}, ${JSON.stringify({ first_name: first, city })}::jsonb)`);
  }
  const baselineS = (performance.now() - b0) / 1000;
  log(`baseline (one INSERT per row, no validation): ${baselineS.toFixed(2)} s → import ${(baselineS / importS).toFixed(1)}× faster than the baseline, validation included: ${(baselineS / (validateS + importS)).toFixed(1)}×`);

  // ---- (2) dispatch DIALS contacts through the workflow ------------------------------------------------
  const dial = await upload(csvOf(DIALS, '+1651'));
  const c2 = await req('POST', '/campaign/create', {
    name: 'bench dispatch', agent_uuid: org.agentUuid, source_type: 'csv', source_id: dial, max_concurrency: CONCURRENCY,
    retry_config: { enabled: false }, circuit_breaker: { enabled: false },
  });
  if (c2.status !== 200) throw new Error(`create ${c2.status}: ${JSON.stringify(c2.body)}`);
  dialTimes.length = 0;
  await req('POST', `/campaign/${c2.body.id}/start`);
  await waitState(c2.body.id, 'running');
  const done = await waitState(c2.body.id, 'completed');
  const span = (dialTimes.at(-1)! - dialTimes[0]!) / 1000;
  const rate = (dialTimes.length - 1) / span;
  log(`dispatch: ${dialTimes.length} dials at max_concurrency ${CONCURRENCY} in ${span.toFixed(1)} s → ${rate.toFixed(1)} dials/s (executed_count ${done.executed_count})`);

  let events = 0;
  let bytes = 0;
  let runs = 0;
  for await (const w of th.client.workflow.list({ query: `WorkflowId = '${campaignWorkflowId(c2.body.id)}'` })) {
    const h = await th.client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    runs++;
    events += h.events?.length ?? 0;
    bytes += proto.temporal.api.history.v1.History.encode(h).finish().length;
  }
  const per = 1000 / DIALS;
  log(`history: ${runs} run(s), ${events} events, ${(bytes / 1024).toFixed(0)} KiB → per 1,000 contacts: ${Math.round(events * per)} events, ${(bytes * per / 1024).toFixed(0)} KiB`);

  // Baseline: the same number of dials straight through placeOutboundCall, CONCURRENCY at a time, no workflow.
  const numbers = org.numbers;
  dialTimes.length = 0;
  let next = 0;
  const direct = async (lane: number) => {
    while (next < DIALS) {
      const i = next++;
      const placed = await placeOutboundCall({ db, config, logger, temporal: null }, {
        orgId: org.orgId, agentUuid: org.agentUuid, telephonyConfigId: org.configId, fromNumber: numbers[lane]!, toNumber: `+1652${String(i).padStart(7, '0')}`,
        dialKey: `bench:${i}`,
      });
      // Wait for the carrier to end it, as the campaign does.
      for (;;) {
        const st = await db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${placed.callId}`);
        if (st !== 'pending' && st !== 'active') break;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  const d0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, lane) => direct(lane)));
  const directS = (performance.now() - d0) / 1000;
  const directRate = DIALS / directS;
  log(`baseline (placeOutboundCall directly, ${CONCURRENCY} lanes, polling each call's end): ${directRate.toFixed(1)} dials/s → campaign workflow at ${(rate / directRate).toFixed(2)}× the direct rate`);

  worker.shutdown();
  await running;
  await connection.close();
  await server.close();
  await th.close();
  await db.end();
} catch (err) {
  exitCode = 1;
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
} finally {
  await fake.close();
  await temporal.stop();
  await scratch.stop();
}
process.exit(exitCode);

async function setupOrg(db: Db, config: ReturnType<typeof loadConfig>) {
  const o = await createOrganization(db, { name: 'Bench campaigns', balanceUsd: 1000 });
  await setOrganizationLimits(db, o.id, { concurrency: 100, ratePerMinute: 100000 });
  const { key } = await createApiKey(db, o.id, 'bench');
  const agentConfig = { name: 'Bench agent', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } };
  const res = await fetch(`${config.baseUrl}/agents`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(agentConfig) });
  const agent = (await res.json()) as { uuid: string };
  const acc = fake.addAccount();
  const cfg = await insertConfig(db, config, { orgId: o.id, name: 'Bench line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: false, isDefault: true });
  const numbers: string[] = [];
  for (let i = 0; i < CONCURRENCY; i++) {
    const n = `+1415555${String(1000 + i).padStart(4, '0')}`;
    fake.addNumber(acc.sid, n);
    await db.query(sql.unsafe`
      INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type)
      VALUES (${o.id}, ${cfg.id}, ${n}, ${n}, 'pstn')`);
    numbers.push(n);
  }
  return { orgId: o.id, key, agentUuid: agent.uuid, configId: cfg.id, numbers };
}
