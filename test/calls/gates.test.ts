// Call-start gates (quota, wallet, concurrency), rejected-row throttling and pending-call expiry, exercised on the
// core functions against the real database (the HTTP paths are covered in calls-api.test.ts).
import test from 'ava';
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { admitCall, usdString, type GateDeps } from '../../core/calls/gates.ts';
import { expirePendingCalls, sweepIntervalMs } from '../../core/calls/expiry.ts';
import { insertRejectedCall, type NewCall } from '../../core/calls/rows.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startReceiver } from '../helpers/http.ts';
import { backdate, rowById, rowsOf, seedCall } from './helpers.ts';

let s: TestServer;
let deps: GateDeps;
test.before(async () => {
  s = await startTestServer({ temporal: false, env: { OUTBOUND_ALLOW_HOSTS: '127.0.0.1' } });
  deps = { db: s.db, config: s.config, logger: createLogger({ level: 'silent' }) };
});
test.after.always(async () => {
  await s?.close();
});

const webCall = (orgId: string, extra: Partial<NewCall> = {}): NewCall => ({
  organizationId: orgId,
  transport: 'websocket',
  callSource: 'websocket',
  tags: ['api', 'webcall'],
  agent: { id: null, uuid: null, name: 'Inline' },
  configSnapshot: { name: 'Inline' },
  ...extra,
});

test('usdString keeps two to six decimals', (t) => {
  t.is(usdString(0.5), '0.50');
  t.is(usdString(0), '0.00');
  t.is(usdString(12), '12.00');
  t.is(usdString(0.123), '0.123');
  t.is(usdString(0.4999999), '0.50');
});

test('concurrency gate is exact: ceiling 5, 100 parallel starts → exactly 5 admitted, one throttled rejected row', async (t) => {
  const { orgId } = await s.createOrg({ concurrency: 5 });
  const results = await Promise.all(Array.from({ length: 100 }, () => admitCall(deps, webCall(orgId), { configSnapshot: { redacted: true } })));
  const admitted = results.filter((r) => r.ok);
  t.is(admitted.length, 5);
  const rejected = results.filter((r) => !r.ok);
  t.is(rejected.length, 95);
  for (const r of rejected) {
    if (r.ok) continue;
    t.is(r.rejection.status, 429);
    t.like(r.rejection.detail, { code: 'concurrency_limit_reached', current_limit: 5, current_active: 5 });
    t.is(typeof (r.rejection.detail as { message: unknown }).message, 'string');
  }
  const rows = await rowsOf(s.db, orgId);
  t.is(rows.filter((r) => r.status === 'pending').length, 5);
  const rej = rows.filter((r) => r.tags.includes('rejected'));
  t.is(rej.length, 1, 'gate rejections are throttled to one row per org + reason per minute');
  t.like(rej[0], { status: 'error', connection_status: 'concurrency_limit_reached', ended_reason: null, config_snapshot: { redacted: true } });
  t.like(rej[0]!.logs.validation_error, { code: 'concurrency_limit_reached', current_limit: 5, current_active: 5 });
});

test('the ceiling counts pending and active calls of every transport, and only this organization', async (t) => {
  const { orgId } = await s.createOrg({ concurrency: 2 });
  const other = await s.createOrg({ concurrency: 2 });
  await seedCall(s.db, { organizationId: orgId, transport: 'outbound', status: 'active', connectionStatus: 'completed', endedReason: null, endedAt: null });
  await seedCall(s.db, { organizationId: orgId, transport: 'websocket', status: 'completed' });
  await seedCall(s.db, { organizationId: other.orgId, transport: 'inbound', status: 'active', endedAt: null });
  await seedCall(s.db, { organizationId: other.orgId, transport: 'inbound', status: 'active', endedAt: null });
  const first = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.true(first.ok);
  const second = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(second.ok);
  if (!second.ok) t.like(second.rejection.detail, { current_limit: 2, current_active: 2 });
});

test('organization without its own ceiling uses DEFAULT_CONCURRENCY', async (t) => {
  const { orgId } = await s.createOrg();
  for (let i = 0; i < s.config.DEFAULT_CONCURRENCY; i++) t.true((await admitCall(deps, webCall(orgId), { configSnapshot: {} })).ok);
  const over = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(over.ok);
  if (!over.ok) t.like(over.rejection.detail, { current_limit: s.config.DEFAULT_CONCURRENCY });
});

test('wallet gate: balance below the threshold → 402 object with string amounts; rejected row', async (t) => {
  const { orgId } = await s.createOrg({ balanceUsd: 0.3 });
  const r = await admitCall(deps, webCall(orgId), { configSnapshot: { req: 1 } });
  t.false(r.ok);
  if (r.ok) return;
  t.is(r.rejection.status, 402);
  t.deepEqual(Object.keys(r.rejection.detail as object).sort(), ['balance_usd', 'error_code', 'error_message', 'threshold_usd']);
  t.like(r.rejection.detail, { error_code: 'insufficient_balance', balance_usd: '0.30', threshold_usd: '0.50' });
  const rows = await rowsOf(s.db, orgId);
  t.is(rows.length, 1);
  t.like(rows[0], { status: 'error', connection_status: 'insufficient_balance', ended_reason: null, config_snapshot: { req: 1 } });
  t.true(rows[0]!.tags.includes('rejected'));
  t.like(rows[0]!.logs.validation_error, { error_code: 'insufficient_balance', balance_usd: '0.30' });
  const metrics = await (await fetch(`${s.origin}/metrics`)).text();
  t.regex(metrics, /call_gate_rejections_total\{reason="insufficient_balance"\} [1-9]/);
});

test('balance exactly at the threshold passes', async (t) => {
  const { orgId } = await s.createOrg({ balanceUsd: 0.5 });
  t.true((await admitCall(deps, webCall(orgId), { configSnapshot: {} })).ok);
});

test('monthly minutes quota: billed minutes this month >= quota → 402 string, checked before the wallet', async (t) => {
  const { orgId } = await s.createOrg({ monthlyMinutes: 2, balanceUsd: 0 });
  // 61 s bills 2 whole minutes.
  await seedCall(s.db, { organizationId: orgId, durationSeconds: 61 });
  const r = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(r.ok);
  if (r.ok) return;
  t.is(r.rejection.status, 402);
  t.is(typeof r.rejection.detail, 'string');
  t.regex(r.rejection.detail as string, /exceeded its monthly call minutes quota \(2 of 2 minutes/);
  const rows = await rowsOf(s.db, orgId);
  // the spec has no quota_exceeded connectionStatus: a quota refusal is its 402 insufficient_balance variant
  const refused = rows.filter((x) => x.connection_status === 'insufficient_balance');
  t.is(refused.length, 1);
  t.regex(JSON.stringify(refused[0]!.logs.validation_error), /monthly call minutes quota/, 'the quota message tells it from a low balance');
  t.false(rows.some((x) => x.connection_status === 'quota_exceeded'));
});

test('quota: minutes of earlier months do not count; under the quota passes', async (t) => {
  const { orgId } = await s.createOrg({ monthlyMinutes: 3 });
  const lastMonth = new Date();
  lastMonth.setUTCDate(1);
  lastMonth.setUTCDate(0); // last day of the previous month
  await seedCall(s.db, { organizationId: orgId, durationSeconds: 600, createdAt: lastMonth.toISOString() });
  await seedCall(s.db, { organizationId: orgId, durationSeconds: 100 }); // 2 minutes
  t.true((await admitCall(deps, webCall(orgId), { configSnapshot: {} })).ok);
});

test('quota 0 blocks every call start', async (t) => {
  const { orgId } = await s.createOrg({ monthlyMinutes: 0 });
  const r = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(r.ok);
  if (!r.ok) t.is(r.rejection.status, 402);
});

test('monthly calls quota: calls started this month (rejected attempts and earlier months not counted) >= quota → 402 string', async (t) => {
  const { orgId } = await s.createOrg({ monthlyCalls: 2 });
  const lastMonth = new Date();
  lastMonth.setUTCDate(1);
  lastMonth.setUTCDate(0);
  await seedCall(s.db, { organizationId: orgId, createdAt: lastMonth.toISOString() });
  await seedCall(s.db, { organizationId: orgId, status: 'error', connectionStatus: 'concurrency_limit_reached', tags: ['api', 'rejected'] });
  await seedCall(s.db, { organizationId: orgId, durationSeconds: 1 });
  const second = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.true(second.ok, 'one call of the quota was left');
  const third = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(third.ok);
  if (third.ok) return;
  t.is(third.rejection.status, 402);
  t.is(third.rejection.detail, 'The organization has exceeded its monthly calls quota (2 of 2 calls started this month)');
  const rows = await rowsOf(s.db, orgId);
  const refused = rows.filter((x) => x.tags.includes('rejected') && x.connection_status === 'insufficient_balance');
  t.is(refused.length, 1);
  t.regex(JSON.stringify(refused[0]!.logs.validation_error), /monthly calls quota/);
});

test('monthly calls quota is exact under parallel starts: quota 3, 30 at once → 3 admitted', async (t) => {
  const { orgId } = await s.createOrg({ monthlyCalls: 3, concurrency: 100 });
  const results = await Promise.all(Array.from({ length: 30 }, () => admitCall(deps, webCall(orgId), { configSnapshot: {} })));
  t.is(results.filter((r) => r.ok).length, 3);
  t.true(results.every((r) => r.ok || r.rejection.status === 402));
  t.is((await rowsOf(s.db, orgId)).filter((r) => !r.tags.includes('rejected')).length, 3);
});

test('wallet suspended by the operator → 403 wallet_rejected (the 402 shape), a rejected row; lifted → admitted', async (t) => {
  const { setWalletStatus } = await import('../../core/orgs.ts');
  const { orgId } = await s.createOrg({ balanceUsd: 25 });
  await setWalletStatus(s.db, orgId, 'suspended', 'invoice 1042 overdue');
  const r = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.false(r.ok);
  if (r.ok) return;
  t.is(r.rejection.status, 403);
  t.deepEqual(r.rejection.detail, {
    error_code: 'wallet_rejected',
    error_message: "The organization's wallet is suspended: invoice 1042 overdue. No call can start until the operator lifts the suspension.",
    balance_usd: '25.00', threshold_usd: '0.50',
  });
  const rows = await rowsOf(s.db, orgId);
  t.deepEqual(rows.map((x) => x.connection_status), ['wallet_rejected']);
  t.true(rows[0]!.tags.includes('rejected'));
  await setWalletStatus(s.db, orgId, 'active');
  t.true((await admitCall(deps, webCall(orgId), { configSnapshot: {} })).ok);
});

test('an organization that does not exist → 403 org_not_found, no row (nothing to hang it on), no exception', async (t) => {
  const gone = '00000000-0000-4000-8000-000000000000';
  const r = await admitCall(deps, webCall(gone), { configSnapshot: {} });
  t.false(r.ok);
  if (r.ok) return;
  t.is(r.rejection.status, 403);
  t.like(r.rejection.detail, { error_code: 'org_not_found', error_message: 'Organization not found' });
  t.is((await rowsOf(s.db, gone)).length, 0);
});

test('rejected-row throttle: one row per org + reason per minute; other reasons and validation rejections are not throttled', async (t) => {
  const { orgId } = await s.createOrg({ balanceUsd: 0 });
  const a = await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'insufficient_balance', payload: { n: 1 } });
  const b = await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'insufficient_balance', payload: { n: 2 } });
  t.truthy(a);
  t.is(b, null);
  t.truthy(await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'concurrency_limit_reached', payload: {} }));
  t.truthy(await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'schema_validation', payload: {} }));
  t.truthy(await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'schema_validation', payload: {} }));
  // Another organization has its own budget.
  const other = await s.createOrg();
  t.truthy(await insertRejectedCall(s.db, { ...webCall(other.orgId), reason: 'insufficient_balance', payload: {} }));
  // A minute later the reason may write again.
  await backdate(s.db, a!, 61);
  t.truthy(await insertRejectedCall(s.db, { ...webCall(orgId), reason: 'insufficient_balance', payload: { n: 3 } }));
  const rows = await rowsOf(s.db, orgId);
  t.is(rows.filter((r) => r.connection_status === 'insufficient_balance').length, 2);
  t.is(rows.filter((r) => r.connection_status === 'schema_validation').length, 2);
});

test('pending web call nobody joins expires: no_participant, endedReason null, not_connected, slot freed', async (t) => {
  const { orgId } = await s.createOrg({ concurrency: 1 });
  const first = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.true(first.ok);
  if (!first.ok) return;
  t.false((await admitCall(deps, webCall(orgId), { configSnapshot: {} })).ok, 'slot held while pending');
  await backdate(s.db, first.callId, s.config.CALL_JOIN_TIMEOUT_S + 1);
  // The concurrency gate expires it lazily (no sweep needed) and admits the next call.
  const next = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  t.true(next.ok);
  const row = await rowById(s.db, first.callId);
  t.like(row, { status: 'error', connection_status: 'no_participant', ended_reason: null });
  t.truthy(row.ended_at);
  t.true(row.tags.includes('not_connected'));
  t.true(row.tags.includes('webcall'));
});

test('sweep expires only stale pending web calls', async (t) => {
  const { orgId } = await s.createOrg({ concurrency: 10 });
  const timeout = s.config.CALL_JOIN_TIMEOUT_S;
  const stale = await admitCall(deps, webCall(orgId), { configSnapshot: {} });
  const fresh = await admitCall(deps, webCall(orgId, { transport: 'web', callSource: 'webrtc' }), { configSnapshot: {} });
  const phone = await admitCall(deps, webCall(orgId, { transport: 'outbound', callSource: 'api_outbound' }), { configSnapshot: {} });
  const active = await seedCall(s.db, { organizationId: orgId, status: 'active', connectionStatus: 'completed', endedReason: null, endedAt: null });
  if (!stale.ok || !fresh.ok || !phone.ok) return t.fail();
  for (const id of [stale.callId, phone.callId, active]) await backdate(s.db, id, timeout + 5);
  const expired = await expirePendingCalls(deps, orgId);
  t.deepEqual(expired.map((e) => e.id), [stale.callId]);
  t.is((await rowById(s.db, fresh.callId)).status, 'pending');
  t.is((await rowById(s.db, phone.callId)).status, 'pending', 'telephony legs have their own carrier timeouts');
  t.is((await rowById(s.db, active)).status, 'active');
  t.deepEqual(await expirePendingCalls(deps, orgId), [], 'a row expires once');
});

test('expired call fires call.ended (no call.started) to the agent webhook, signed with its secret', async (t) => {
  const hook = await startReceiver();
  t.teardown(() => hook.close());
  const received = hook.events;
  const { orgId } = await s.createOrg();
  const agent = await s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config, webhook_secret) VALUES (${orgId}, 'Hooked', '{}'::jsonb, 'whsec-test')
    RETURNING id, uuid`);
  const r = await admitCall(deps, webCall(orgId, {
    agent: { id: agent.id, uuid: agent.uuid, name: 'Hooked' },
    configSnapshot: { name: 'Hooked', webhook: { url: `${hook.url}/events`, headers: { 'X-Custom': 'yes' } } },
  }), { configSnapshot: {} });
  if (!r.ok) return t.fail();
  await backdate(s.db, r.callId, s.config.CALL_JOIN_TIMEOUT_S + 1);
  await expirePendingCalls(deps, orgId);
  t.is(received.length, 1);
  const payload = received[0]!.json;
  t.like(payload, { event: 'call.ended', callId: r.callId, agentId: agent.uuid, endedReason: null, connectionStatus: 'no_participant', duration: 0 });
  t.truthy(Date.parse(payload.endedAt));
  t.is(received[0]!.headers['x-custom'], 'yes');
  t.is(received[0]!.headers['x-service-signature'], createHmac('sha256', 'whsec-test').update(received[0]!.raw).digest('hex'));
  const row = await rowById(s.db, r.callId);
  t.like(row.logs.webhooks[0], { event: 'call.ended', ok: true });
});

test('sweep interval is a quarter of the join timeout within 1..15 s', (t) => {
  t.is(sweepIntervalMs(60), 15_000);
  t.is(sweepIntervalMs(8), 2_000);
  t.is(sweepIntervalMs(5), 1_250);
  t.is(sweepIntervalMs(3600), 15_000);
});
