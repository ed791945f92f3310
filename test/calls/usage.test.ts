// Usage summary: field values, the half-open window [from, to), both mount points, parameter errors, isolation.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { seedCall } from './helpers.ts';

let s: TestServer;
let key: string;
test.before(async () => {
  s = await startTestServer({ temporal: false });
  const a = await s.createOrg();
  const b = await s.createOrg();
  key = a.apiKey;
  const org = a.orgId;
  // In the window [2026-03-01, 2026-03-02):
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-01T00:00:00Z', durationSeconds: 61, cost: 0.25 }); // on `from`: counted; 2 billed minutes
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-01T12:00:00Z', durationSeconds: 30, cost: 0.1 }); // 1 minute
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-01T13:00:00Z', status: 'error', connectionStatus: 'completed', endedReason: 'pipeline_error', durationSeconds: 9.5, cost: 0.05 }); // connected, not successful
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-01T14:00:00Z', transport: 'outbound', status: 'error', connectionStatus: 'no_answer', endedReason: null }); // not connected
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-01T15:00:00Z', status: 'error', connectionStatus: 'insufficient_balance', endedReason: null, tags: ['api', 'rejected'], endedAt: null }); // rejected attempt
  // Outside: exactly on `to` (excluded), the day before.
  await seedCall(s.db, { organizationId: org, createdAt: '2026-03-02T00:00:00Z', durationSeconds: 600, cost: 5 });
  await seedCall(s.db, { organizationId: org, createdAt: '2026-02-28T23:59:59.999Z', durationSeconds: 600, cost: 5 });
  // Another organization, inside the window.
  await seedCall(s.db, { organizationId: b.orgId, createdAt: '2026-03-01T10:00:00Z', durationSeconds: 600, cost: 5 });
});
test.after.always(async () => {
  await s?.close();
});

test('usage summary over [from, to): counts, billed minutes, average duration, spend, success rate', async (t) => {
  const r = await s.request('GET', '/wallet/dashboard/usage-summary?from=2026-03-01&to=2026-03-02', { key });
  t.is(r.status, 200);
  t.deepEqual(r.body, {
    from: '2026-03-01T00:00:00.000Z',
    to: '2026-03-02T00:00:00.000Z',
    total_calls: 4,
    rejected_calls: 1,
    connected_calls: 3,
    billed_minutes: 4,
    total_duration_seconds: 100.5,
    average_duration_seconds: 33.5,
    spend_usd: 0.4,
    success_rate: 0.5,
  });
});

test('the same report under /organizations/reports', async (t) => {
  const a = await s.request('GET', '/wallet/dashboard/usage-summary?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z', { key });
  const b = await s.request('GET', '/organizations/reports/usage-summary?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z', { key });
  t.is(b.status, 200);
  t.deepEqual(a.body, b.body);
});

test('window edges: a call exactly at `to` is excluded, one a millisecond before `from` too', async (t) => {
  const justTo = await s.request('GET', '/wallet/dashboard/usage-summary?from=2026-03-01T15:00:00.001Z&to=2026-03-02T00:00:00.001Z', { key });
  t.like(justTo.body, { total_calls: 1, billed_minutes: 10, spend_usd: 5 });
  const before = await s.request('GET', '/wallet/dashboard/usage-summary?from=2026-02-28T23:59:59.999Z&to=2026-03-01T00:00:00Z', { key });
  t.like(before.body, { total_calls: 1, connected_calls: 1 });
  const empty = await s.request('GET', '/wallet/dashboard/usage-summary?from=2025-01-01&to=2025-02-01', { key });
  t.like(empty.body, { total_calls: 0, connected_calls: 0, billed_minutes: 0, average_duration_seconds: 0, spend_usd: 0, success_rate: 0 });
});

test('defaults: the last 30 days up to now', async (t) => {
  const r = await s.request('GET', '/wallet/dashboard/usage-summary', { key });
  t.is(r.status, 200);
  const span = Date.parse(r.body.to) - Date.parse(r.body.from);
  t.is(span, 30 * 86_400_000);
  t.is(r.body.total_calls, 0);
});

test('bad dates and an empty window → 422 arrays', async (t) => {
  const bad = await s.request('GET', '/wallet/dashboard/usage-summary?from=yesterday&to=2026-13-45', { key });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail.map((d: { loc: string[] }) => d.loc), [['query', 'from'], ['query', 'to']]);
  const inverted = await s.request('GET', '/organizations/reports/usage-summary?from=2026-03-02&to=2026-03-01', { key });
  t.is(inverted.status, 422);
  t.deepEqual(inverted.body.detail[0].loc, ['query', 'from']);
  const same = await s.request('GET', '/organizations/reports/usage-summary?from=2026-03-01&to=2026-03-01', { key });
  t.is(same.status, 422);
});

test('impossible dates (day 30 of February, year 0000, month 13, hour 25) → 422, never a 500 or a rolled-over day', async (t) => {
  for (const q of ['from=2026-02-30', 'from=0000-01-01&to=2026-01-01', 'to=2026-13-01', 'from=2026-03-01T25:00:00Z', 'from=2026-03-01T10:00:00%2B15:00']) {
    const r = await s.request('GET', `/wallet/dashboard/usage-summary?${q}`, { key });
    t.is(r.status, 422, q);
    t.is(r.body.detail[0].type, 'datetime_from_date_parsing', q);
  }
  const leap = await s.request('GET', '/wallet/dashboard/usage-summary?from=2024-02-29&to=2026-03-01T00:00:00.5%2B00:00', { key });
  t.is(leap.status, 200);
});

test('no organization → 400', async (t) => {
  const { createApiKey } = await import('../../core/orgs.ts');
  const { key: orgless } = await createApiKey(s.db, null, 'orgless');
  t.deepEqual((await s.request('GET', '/wallet/dashboard/usage-summary', { key: orgless })).body, { detail: 'No organization selected' });
});
