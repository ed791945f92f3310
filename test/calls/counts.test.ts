// The aggregates behind GET /calls totals (migration 0021) stay exact through inserts, updates (single and
// multi-row, including parallel ones), deletes and organization deletion; totals served from them match count(*).
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { admitCall } from '../../core/calls/gates.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { seedCall } from './helpers.ts';

let s: TestServer;
test.before(async () => {
  s = await startTestServer({ temporal: false });
});
test.after.always(async () => {
  await s?.close();
});

const group = z.object({ k: z.string(), n: z.number() });
async function drift(orgId: string) {
  const counters = await s.db.any(sql.type(group)`
    SELECT concat_ws('|', transport, status, connection_status, ended_reason, call_source) AS k, n::int AS n
    FROM call_counts WHERE organization_id = ${orgId} AND n <> 0 ORDER BY 1`);
  const actual = await s.db.any(sql.type(group)`
    SELECT concat_ws('|', transport, status, COALESCE(connection_status, ''), COALESCE(ended_reason, ''), call_source) AS k, count(*)::int AS n
    FROM calls WHERE organization_id = ${orgId} GROUP BY 1 ORDER BY 1`);
  return { counters, actual };
}

test('counters follow inserts, updates (one and many rows, in parallel) and deletes exactly', async (t) => {
  const { orgId } = await s.createOrg({ concurrency: 50 });
  const deps = { db: s.db, config: s.config, logger: createLogger({ level: 'silent' }) };
  const admitted = await Promise.all(Array.from({ length: 30 }, (_, i) => admitCall(deps, {
    organizationId: orgId, transport: i % 2 ? 'websocket' : 'web', callSource: i % 2 ? 'websocket' : 'webrtc', tags: ['api'],
    agent: { id: null, uuid: null, name: `Agent ${i % 4}` }, configSnapshot: {},
  }, { configSnapshot: {} })));
  const callIds = admitted.flatMap((a) => (a.ok ? [a.callId] : []));
  t.is(callIds.length, 30);
  for (let i = 0; i < 5; i++) await seedCall(s.db, { organizationId: orgId, transport: 'outbound', status: 'error', connectionStatus: 'no_answer', endedReason: null, callSource: 'api_outbound' });
  // Parallel single-row transitions pending → active → completed, the way media sessions move their calls.
  await Promise.all(callIds.slice(0, 20).map(async (id, i) => {
    await s.db.query(sql.unsafe`UPDATE calls SET status = 'active', connection_status = 'completed', started_at = now() WHERE id = ${id}`);
    await s.db.query(sql.unsafe`UPDATE calls SET logs = logs || '{"x": 1}'::jsonb WHERE id = ${id}`); // no group change
    if (i % 3) await s.db.query(sql.unsafe`UPDATE calls SET status = 'completed', ended_reason = 'user_hangup', ended_at = now(), duration_seconds = 12 WHERE id = ${id}`);
  }));
  // A multi-row update and a delete.
  await s.db.query(sql.unsafe`UPDATE calls SET status = 'error', connection_status = 'no_participant' WHERE organization_id = ${orgId} AND status = 'pending'`);
  await s.db.query(sql.unsafe`DELETE FROM calls WHERE id = ANY(${sql.array(callIds.slice(0, 3), 'uuid')})`);
  const { counters, actual } = await drift(orgId);
  t.deepEqual(counters, actual);
  t.is(actual.reduce((a, g) => a + g.n, 0), 32);

  // Totals served from the counters equal count(*) for every counter-only filter.
  const { apiKey } = await s.createOrg(); // (unused org: its key must not see these calls)
  t.is((await s.request('GET', '/calls', { key: apiKey })).body.total, 0);
  const { createApiKey } = await import('../../core/orgs.ts');
  const { key: k } = await createApiKey(s.db, orgId, 'k');
  for (const q of ['', 'status=completed', 'status=active,error', 'transport=web', 'connection_status=no_participant,no_answer', 'ended_reason=user_hangup', 'call_source=webrtc&status=error']) {
    const r = await s.request('GET', `/calls?${q}&per_page=100`, { key: k });
    t.is(r.status, 200);
    t.is(r.body.total, r.body.items.length, q);
  }
});

test('deleting an organization removes its calls without failing on the aggregates', async (t) => {
  const { orgId } = await s.createOrg();
  await seedCall(s.db, { organizationId: orgId, agentName: 'Gone' });
  await s.db.query(sql.unsafe`DELETE FROM organizations WHERE id = ${orgId}`);
  const { counters } = await drift(orgId);
  t.deepEqual(counters, []);
});

test('agent_name filter via the captured-name list, and its fallback when too many names match', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  await seedCall(s.db, { organizationId: orgId, agentName: 'Billing Helper' });
  const renamed = await seedCall(s.db, { organizationId: orgId, agentName: 'Old name' });
  await s.db.query(sql.unsafe`UPDATE calls SET agent_name = 'Billing Renamed' WHERE id = ${renamed}`);
  const names = await s.db.anyFirst(sql.type(z.object({ agent_name: z.string() }))`
    SELECT agent_name FROM call_agent_names WHERE organization_id = ${orgId} ORDER BY 1`);
  t.deepEqual([...names], ['Billing Helper', 'Billing Renamed', 'Old name']);
  t.is((await s.request('GET', '/calls?agent_name=billing', { key: apiKey })).body.total, 2);
  t.is((await s.request('GET', '/calls?agent_name=old', { key: apiKey })).body.total, 0, 'a stale name matches no call');
  // 1,200 distinct names containing "bulk": the filter falls back to the substring on the calls themselves.
  await s.db.query(sql.unsafe`
    INSERT INTO calls (organization_id, transport, status, call_source, agent_name)
    SELECT ${orgId}, 'websocket', 'completed', 'websocket', 'Bulk agent ' || g FROM generate_series(1, 1200) g`);
  const bulk = await s.request('GET', '/calls?agent_name=BULK&per_page=5', { key: apiKey });
  t.is(bulk.body.total, 1200);
  t.is(bulk.body.items.length, 5);
});

test('date-range totals (whole days from call_counts_daily + boundary days on calls) equal count(*)', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const stamps = [
    '2026-05-01T00:00:00Z', '2026-05-01T23:59:59.999999Z', '2026-05-02T00:00:00Z', '2026-05-02T12:00:00Z',
    '2026-05-03T08:30:00Z', '2026-05-04T00:00:00Z', '2026-05-04T00:00:00.000001Z', '2026-05-05T18:00:00Z',
  ];
  for (const [i, at] of stamps.entries()) {
    await seedCall(s.db, { organizationId: orgId, createdAt: at, status: i % 2 ? 'completed' : 'error', transport: i % 3 ? 'websocket' : 'outbound' });
  }
  const { countCalls } = await import('../../core/calls/history.ts');
  const ranges: Array<[string | undefined, string | undefined]> = [
    ['2026-05-01T00:00:00Z', '2026-05-04T00:00:00Z'],
    ['2026-05-01T00:00:00.000001Z', '2026-05-03T23:59:59.999999Z'],
    ['2026-05-01T12:00:00Z', '2026-05-01T13:00:00Z'],
    ['2026-05-02T00:00:00Z', undefined],
    [undefined, '2026-05-02T00:00:00Z'],
    ['2026-05-03T00:00:00Z', '2026-05-02T00:00:00Z'],
    ['2026-05-01T00:00:00+05:30', '2026-05-05T00:00:00-04:00'],
  ];
  for (const [fromDate, toDate] of ranges) {
    for (const extra of [{}, { status: ['completed'] }, { transport: ['outbound', 'websocket'], status: ['error'] }]) {
      const f = { fromDate, toDate, ...extra };
      const viaAggregates = await countCalls(s.db, orgId, f);
      const direct = await countCalls(s.db, orgId, f, { aggregates: false });
      t.is(viaAggregates, direct, JSON.stringify(f));
    }
  }
  t.is((await s.request('GET', '/calls?from_date=2026-05-02&to_date=2026-05-03', { key: apiKey })).body.total, 3);
  t.is((await s.request('GET', '/calls?from_date=2026-05-01&to_date=2026-05-04T00:00:00Z&status=error', { key: apiKey })).body.total, 3);
});
