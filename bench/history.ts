// bench/history: call history at a million rows. Seeds 1,000,000 calls (generate_series, realistic skew over 8
// organizations, 20 agents each, transports, outcomes, tags and a year of dates), then measures p50/p95 of five
// realistic filtered + sorted pages through the real HTTP endpoint (GET /api/v1/calls, auth and rate limit
// included) for the largest organization. Prints each query plan's key lines. Target: p95 <= 50 ms.
// Baseline in the same run: the naive way — the same pages as direct SQL with count(*) and ILIKE on calls and only
// migration 0002's indexes (no 0020/0021 indexes, counters or agent-name list).
//
//   node_modules/.bin/tsx bench/history.ts            (or: npm run bench -- history)
//   ROWS=200000 ITER=50 node_modules/.bin/tsx bench/history.ts
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { z } from 'zod';
import { createDb, sql } from '../core/db/pool.ts';
import { createApiKey, setOrganizationLimits } from '../core/orgs.ts';
import { agentNameMatches, countCalls, countableFromDaily, countQuery, listQuery } from '../core/calls/history.ts';
import { startScratchDatabase } from '../scripts/infra.ts';
import { startBenchServer } from './_server.ts';
import { pct } from './_stats.ts';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const ITER = Number(process.env.ITER ?? 100);
const WARMUP = 10;
const TARGET_P95_MS = 50;
const log = (m: string) => process.stdout.write(`${m}\n`);

const scratch = await startScratchDatabase({ prefix: 'vas-bench-history-' });
let exitCode = 0;
try {
  const db = await createDb(scratch.url, { maximumPoolSize: 10 });

  // ---- seed ------------------------------------------------------------------------------------------------
  const t0 = performance.now();
  // Plain pg for the bulk load: long statements, DDL from strings, no statement timeout.
  const client = new pg.Client({ connectionString: scratch.url });
  await client.connect();
  const indexDefs = (await client.query<{ name: string; def: string }>(`
    SELECT indexname AS name, indexdef AS def FROM pg_indexes
    WHERE tablename = 'calls' AND indexname <> 'calls_pkey'`)).rows;
  {
    await client.query('BEGIN');
    await client.query(`SET LOCAL maintenance_work_mem = '512MB'`);
    // Build indexes once after the bulk load instead of maintaining them row by row.
    for (const ix of indexDefs) await client.query(`DROP INDEX ${ix.name}`);
    await client.query(`
      INSERT INTO organizations (id, name, balance_usd, rate_per_minute)
      SELECT ('00000000-0000-4000-8000-' || lpad(o::text, 12, '0'))::uuid, 'Bench org ' || o, 100, 1000000
      FROM generate_series(0, 7) o`);
    await client.query(`
      INSERT INTO calls (organization_id, agent_uuid, agent_name, transport, status, connection_status, ended_reason,
                         campaign_id, platform_number, customer_number, telephony_provider, call_source, tags,
                         created_at, started_at, ended_at, duration_seconds, cost)
      SELECT ('00000000-0000-4000-8000-' || lpad(org::text, 12, '0'))::uuid,
             md5(org || '-' || agent)::uuid,
             (ARRAY['Support Bot', 'Sales Outreach', 'Appointment Reminder', 'Collections Desk', 'Customer Survey',
                    'Front Desk Receptionist', 'Lead Qualifier', 'Order Status', 'Tech Support Tier 1', 'Renewals'])[1 + agent % 10]
               || ' ' || (agent / 10 + 1),
             transport, status, conn, reason,
             CASE WHEN transport = 'outbound' AND r5 < 0.4 THEN 1 + (r6 * 30)::int END,
             CASE WHEN transport IN ('outbound', 'inbound') THEN '+1800555' || lpad((org * 10 + (r6 * 5)::int)::text, 4, '0') END,
             CASE WHEN transport IN ('outbound', 'inbound') THEN '+1415' || lpad((r7 * 9999999)::int::text, 7, '0') END,
             CASE WHEN transport IN ('outbound', 'inbound') THEN CASE WHEN r6 < 0.8 THEN 'twilio' ELSE 'plivo' END END,
             CASE transport WHEN 'outbound' THEN CASE WHEN r6 < 0.7 THEN 'api_outbound' ELSE 'dashboard_outbound' END
                            WHEN 'inbound' THEN 'api_inbound' WHEN 'websocket' THEN 'websocket' ELSE 'webrtc' END,
             array_remove(ARRAY[
               CASE WHEN call_source_api THEN 'api' END,
               CASE WHEN transport IN ('websocket', 'web') THEN 'webcall' ELSE transport END,
               CASE WHEN rejected THEN 'rejected' END,
               CASE WHEN NOT rejected AND conn IS NOT NULL AND conn <> 'completed' THEN 'not_connected' END,
               CASE WHEN r8 < 0.02 THEN 'vip' WHEN r8 < 0.07 THEN 'followup' END], NULL),
             created, started, ended, dur, round((dur * 0.0012)::numeric, 6)
      FROM (
        SELECT *,
               CASE WHEN conn = 'completed' THEN created + interval '3 seconds' END AS started,
               CASE WHEN status IN ('pending', 'active') OR rejected THEN NULL
                    WHEN conn = 'completed' THEN created + interval '3 seconds' + make_interval(secs => dur)
                    ELSE created + interval '40 seconds' END AS ended,
               transport <> 'web' OR r6 < 0.5 AS call_source_api
        FROM (
          SELECT *,
                 CASE WHEN rejected THEN 'error' WHEN inflight THEN (CASE WHEN r3 < 0.5 THEN 'pending' ELSE 'active' END)
                      WHEN conn = 'completed' AND r4 < 0.03 THEN 'error' WHEN conn = 'completed' THEN 'completed' ELSE 'error' END AS status,
                 CASE WHEN conn = 'completed' AND NOT inflight THEN
                   CASE WHEN r4 < 0.03 THEN 'pipeline_error' WHEN r4 < 0.50 THEN 'user_hangup' WHEN r4 < 0.80 THEN 'agent_hangup'
                        WHEN r4 < 0.88 THEN 'silence_timeout' WHEN r4 < 0.92 THEN 'max_duration'
                        WHEN r4 < 0.97 THEN CASE WHEN transport = 'outbound' THEN 'voicemail' ELSE 'user_hangup' END
                        ELSE 'transferred' END END AS reason,
                 CASE WHEN conn = 'completed' AND NOT inflight THEN round((5 - ln(1 - r5 * 0.999) * 110)::numeric, 2) END AS dur
          FROM (
            SELECT *,
                   CASE WHEN rejected THEN (ARRAY['schema_validation', 'concurrency_limit_reached', 'insufficient_balance', 'agent_not_found', 'model_validation'])[1 + (r3 * 4.999)::int]
                        WHEN inflight AND r3 < 0.5 THEN NULL
                        WHEN transport = 'outbound' THEN CASE WHEN r3 < 0.62 THEN 'completed' WHEN r3 < 0.82 THEN 'no_answer' WHEN r3 < 0.90 THEN 'busy'
                                                            WHEN r3 < 0.94 THEN 'rejected' WHEN r3 < 0.97 THEN 'invalid_number' ELSE 'dial_failed' END
                        WHEN transport = 'inbound' THEN CASE WHEN r3 < 0.97 THEN 'completed' ELSE 'cancelled' END
                        ELSE CASE WHEN r3 < 0.9 THEN 'completed' ELSE 'no_participant' END END AS conn
            FROM (
              SELECT *,
                     CASE WHEN r1 < 0.60 THEN 'outbound' WHEN r1 < 0.75 THEN 'inbound' WHEN r1 < 0.90 THEN 'websocket' ELSE 'web' END AS transport,
                     r2 < 0.03 AS rejected,
                     created > now() - interval '10 minutes' AS inflight
              FROM (
                SELECT g,
                       CASE WHEN u < 0.35 THEN 0 WHEN u < 0.55 THEN 1 WHEN u < 0.70 THEN 2 WHEN u < 0.80 THEN 3
                            WHEN u < 0.88 THEN 4 WHEN u < 0.94 THEN 5 WHEN u < 0.98 THEN 6 ELSE 7 END AS org,
                       (random() * 19.999)::int AS agent,
                       now() - make_interval(secs => 365 * 86400 * power(random(), 1.6)) AS created,
                       random() AS r1, random() AS r2, random() AS r3, random() AS r4, random() AS r5, random() AS r6,
                       random() AS r7, random() AS r8
                FROM (SELECT g, random() AS u FROM generate_series(1, $1::int) g) s
              ) a
            ) b
          ) c
        ) d
      ) e`, [ROWS]);
    for (const ix of indexDefs) await client.query(ix.def);
    await client.query('COMMIT');
  }
  await client.query('VACUUM ANALYZE calls');
  await client.end();
  const seeded = await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`);
  log(`seeded ${seeded.toLocaleString('en')} calls in ${((performance.now() - t0) / 1000).toFixed(1)} s (indexes built after the load)`);

  const orgId = '00000000-0000-4000-8000-000000000000';
  await setOrganizationLimits(db, orgId, { ratePerMinute: 10_000_000 });
  const { key } = await createApiKey(db, orgId, 'bench');
  const orgRows = await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE organization_id = ${orgId}`);
  const someAgent = await db.oneFirst(sql.type(z.object({ a: z.string() }))`SELECT md5('0-7')::uuid::text AS a`);
  const someNumber = await db.oneFirst(sql.type(z.object({ n: z.string() }))`
    SELECT customer_number AS n FROM calls WHERE organization_id = ${orgId} AND customer_number IS NOT NULL LIMIT 1`);
  log(`measuring the largest organization: ${orgRows.toLocaleString('en')} calls`);

  const { parseHistoryQuery } = await import('../api/routes/calls.ts');

  // ---- server ----------------------------------------------------------------------------------------------
  const { server, port } = await startBenchServer(scratch, db);
  const base = `http://127.0.0.1:${port}/api/v1`;

  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
  // Five realistic pages (the target applies to these), then two extra ones reported for information.
  const pages: Array<{ name: string; query: string; extra?: boolean }> = [
    { name: 'default: newest ended first', query: 'per_page=50' },
    { name: 'status + last 30 days, by created_at', query: `status=completed,error&from_date=${monthAgo}&sort_by=created_at&per_page=50` },
    { name: 'agent_name substring, page 2', query: 'agent_name=support&page=2&per_page=50' },
    { name: 'rejected attempts (tag), newest first', query: 'tag=rejected&sort_by=created_at&per_page=50' },
    { name: 'one agent, most expensive first', query: `agent_id=${someAgent}&sort_by=cost&per_page=50` },
    { name: 'extra: phone number (from or to)', query: `phone_number=${encodeURIComponent(someNumber)}`, extra: true },
    { name: 'extra: outbound unanswered + broad tags', query: 'transport=outbound&connection_status=no_answer,busy&tag=not_connected,vip&sort_by=created_at&per_page=25', extra: true },
  ];

  async function timeOnce(q: string): Promise<number> {
    const started = performance.now();
    const res = await fetch(`${base}/calls?${q}`, { headers: { 'x-api-key': key } });
    const body = (await res.json()) as { items?: unknown[] };
    const ms = performance.now() - started;
    if (res.status !== 200 || !Array.isArray(body.items)) throw new Error(`GET /calls?${q} → ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return ms;
  }
  async function measure(iter: number) {
    const out: Array<{ name: string; p50: number; p95: number; total: number }> = [];
    for (const p of pages) {
      for (let i = 0; i < Math.min(WARMUP, iter); i++) await timeOnce(p.query);
      const times: number[] = [];
      for (let i = 0; i < iter; i++) times.push(await timeOnce(p.query));
      const r = await fetch(`${base}/calls?${p.query}`, { headers: { 'x-api-key': key } });
      const total = ((await r.json()) as { total: number }).total;
      out.push({ name: p.name, p50: pct(times, 50), p95: pct(times, 95), total });
      process.stderr.write(`  measured: ${p.name} (p95 ${pct(times, 95).toFixed(1)} ms)\n`);
    }
    return out;
  }

  const results = await measure(ITER);
  log('\nGET /calls (HTTP, end to end), largest organization:');
  for (const r of results) {
    log(`  ${r.name.padEnd(46)} total=${String(r.total).padStart(7)}  p50=${r.p50.toFixed(1).padStart(6)} ms  p95=${r.p95.toFixed(1).padStart(6)} ms`);
  }

  // ---- plans -------------------------------------------------------------------------------------------------
  log('\nQuery plans (key lines):');
  for (const p of pages) {
    const parsed = parseHistoryQuery(Object.fromEntries(new URLSearchParams(p.query)));
    if (parsed.filter.agentName) parsed.filter.agentNames = (await agentNameMatches(db, orgId, parsed.filter.agentName)) ?? undefined;
    const lim = parsed.page.per_page;
    const off = (parsed.page.page - 1) * lim;
    const explain = async (label: string, q: ReturnType<typeof listQuery> | ReturnType<typeof countQuery>) => {
      const plan = await db.any(sql.type(z.object({ 'QUERY PLAN': z.string() }))`EXPLAIN (ANALYZE, BUFFERS) ${q}`);
      const lines = plan.map((l) => l['QUERY PLAN']);
      const keyLines = lines.filter((l) => /Scan|Sort|Aggregate|Limit|Execution Time|Recheck|BitmapOr|BitmapAnd/.test(l) && !/Sort Method|Presorted|Buffers/.test(l)).slice(0, 6);
      log(`  [${p.name}] ${label}`);
      for (const l of keyLines) log(`      ${l.trim().slice(0, 150)}`);
    };
    await explain('page', listQuery(orgId, parsed.filter, parsed.sort, lim, off));
    if (countableFromDaily(parsed.filter)) {
      const started = performance.now();
      const total = await countCalls(db, orgId, parsed.filter);
      log(`  [${p.name}] count: ${total} from the call_counts${parsed.filter.fromDate || parsed.filter.toDate ? '_daily aggregates + the two boundary days on calls' : ' aggregates'} in ${(performance.now() - started).toFixed(1)} ms`);
    } else {
      await explain('count', countQuery(orgId, parsed.filter));
    }
  }

  // ---- baseline: the naive way, same pages as direct SQL (no HTTP): count(*) and ILIKE on calls, 0002 indexes only --
  const keep = ['calls_org_created_idx', 'calls_live_idx'];
  for (const ix of indexDefs.filter((i) => !keep.includes(i.name))) await db.query(sql.unsafe`DROP INDEX IF EXISTS ${sql.identifier([ix.name])}`);
  await db.query(sql.unsafe`DROP INDEX calls_org_created_idx`);
  await db.query(sql.unsafe`CREATE INDEX calls_org_created_idx ON calls (organization_id, created_at DESC)`);
  await db.query(sql.unsafe`CREATE INDEX calls_org_ended_idx ON calls (organization_id, ended_at DESC NULLS LAST)`);
  await db.query(sql.unsafe`ANALYZE calls`);
  const baseIter = Math.max(5, Math.round(ITER / 5));
  log(`\nBaseline: page + count(*) side by side as direct SQL, 0002 indexes only (${baseIter} iterations):`);
  for (const [i, p] of pages.entries()) {
    const parsed = parseHistoryQuery(Object.fromEntries(new URLSearchParams(p.query)));
    const lim = parsed.page.per_page;
    const off = (parsed.page.page - 1) * lim;
    const times: number[] = [];
    for (let k = 0; k < baseIter + 2; k++) {
      const started = performance.now();
      await Promise.all([db.any(listQuery(orgId, parsed.filter, parsed.sort, lim, off)), db.oneFirst(countQuery(orgId, parsed.filter))]);
      if (k >= 2) times.push(performance.now() - started);
    }
    const ratio = pct(times, 95) / results[i]!.p95;
    log(`  ${p.name.padEnd(46)} p50=${pct(times, 50).toFixed(1).padStart(7)} ms  p95=${pct(times, 95).toFixed(1).padStart(7)} ms  (HTTP p95 with this work: ${ratio.toFixed(1)}x faster)`);
  }

  const worst = Math.max(...results.filter((_, i) => !pages[i]!.extra).map((r) => r.p95));
  log(`\nworst p95 of the five realistic pages ${worst.toFixed(1)} ms (target <= ${TARGET_P95_MS} ms): ${worst <= TARGET_P95_MS ? 'OK' : 'ABOVE TARGET'}`);
  await server.close();
  await db.end();
} catch (err) {
  process.stderr.write(`bench/history failed: ${(err as Error).stack ?? String(err)}\n`);
  exitCode = 1;
} finally {
  await scratch.stop();
}
process.exit(exitCode);
