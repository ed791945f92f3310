// GET /calls: every filter and sort of the spec, NULL ordering, csv parameters, 422 arrays, list item fields,
// and cross-organization invisibility.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { seedCall } from './helpers.ts';

let s: TestServer;
let keyA: string;
const ids: Record<string, string> = {};
const agentX = '3b0c7a52-2f0a-4d7e-9a0e-1c2b3d4e5f60';
const agentY = '9d8e7f60-1a2b-4c3d-8e9f-0a1b2c3d4e5f';

test.before(async () => {
  s = await startTestServer({ temporal: false });
  const a = await s.createOrg({ name: 'A' });
  const b = await s.createOrg({ name: 'B' });
  keyA = a.apiKey;
  const org = a.orgId;
  ids.c1 = await seedCall(s.db, {
    organizationId: org, transport: 'outbound', status: 'completed', connectionStatus: 'completed', endedReason: 'user_hangup',
    agentUuid: agentX, agentName: 'Support Bot', campaignId: 7, platformNumber: '+18005550001', customerNumber: '+14155550123',
    telephonyProvider: 'twilio', callSource: 'api_outbound', tags: ['api', 'outbound', 'vip'],
    createdAt: '2026-01-10T10:00:00Z', startedAt: '2026-01-10T10:00:05Z', endedAt: '2026-01-10T10:05:05Z', durationSeconds: 300, cost: 0.5,
  });
  ids.c2 = await seedCall(s.db, {
    organizationId: org, transport: 'inbound', status: 'completed', connectionStatus: 'completed', endedReason: 'agent_hangup',
    agentUuid: agentY, agentName: 'Sales Pro', platformNumber: '+18005550002', customerNumber: '+14155550999',
    telephonyProvider: 'plivo', callSource: 'api_inbound', tags: ['api', 'inbound'],
    createdAt: '2026-01-11T10:00:00Z', endedAt: '2026-01-11T10:01:00Z', durationSeconds: 60, cost: 0.1,
  });
  ids.c3 = await seedCall(s.db, {
    organizationId: org, transport: 'websocket', status: 'active', connectionStatus: 'completed', endedReason: null,
    agentUuid: agentX, agentName: 'Support Bot', callSource: 'websocket', tags: ['api', 'webcall'],
    createdAt: '2026-01-12T10:00:00Z', endedAt: null,
  });
  ids.c4 = await seedCall(s.db, {
    organizationId: org, transport: 'web', status: 'error', connectionStatus: 'concurrency_limit_reached', endedReason: null,
    agentName: 'Inline 100%_done', callSource: 'webrtc', tags: ['api', 'webcall', 'rejected'],
    createdAt: '2026-01-12T12:00:00Z', endedAt: null,
  });
  ids.c5 = await seedCall(s.db, {
    organizationId: org, transport: 'outbound', status: 'error', connectionStatus: 'telephony_failed_soft', endedReason: null,
    campaignId: 8, platformNumber: '+14155550123', customerNumber: '+442071234567', telephonyProvider: 'twilio',
    callSource: 'dashboard_outbound', tags: ['outbound', 'not_connected'],
    createdAt: '2026-01-13T00:00:00Z', endedAt: '2026-01-13T00:00:30Z',
  });
  ids.c6 = await seedCall(s.db, {
    organizationId: org, transport: 'webrtc', status: 'error', connectionStatus: 'completed', endedReason: 'pipeline_error',
    agentUuid: agentY, agentName: 'sales pro', callSource: 'webrtc', tags: ['webcall', 'test_call'],
    createdAt: '2026-01-14T09:00:00Z', endedAt: '2026-01-14T09:02:00Z', durationSeconds: 120,
  });
  // Organization B: rows that would match every filter used below.
  for (const t of ['outbound', 'inbound', 'websocket', 'web', 'webrtc']) {
    await seedCall(s.db, {
      organizationId: b.orgId, transport: t, agentUuid: agentX, agentName: 'Support Bot', campaignId: 7, tags: ['api', 'vip', 'rejected'],
      platformNumber: '+14155550123', customerNumber: '+14155550123', telephonyProvider: 'twilio', callSource: 'api_outbound',
      createdAt: '2026-01-12T11:00:00Z', durationSeconds: 999, cost: 9,
    });
  }
});
test.after.always(async () => {
  await s?.close();
});

const list = async (q = '') => {
  const r = await s.request('GET', `/calls${q ? `?${q}` : ''}`, { key: keyA });
  if (r.status !== 200) throw new Error(`${q} → ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { items: Array<Record<string, any>>; total: number; page: number; perPage: number; totalPages: number };
};
const names = (items: Array<Record<string, any>>) => items.map((i) => Object.entries(ids).find(([, v]) => v === i.callId)?.[0] ?? 'foreign');
const setOf = (items: Array<Record<string, any>>) => names(items).sort();

test('list item has exactly the fields of the "Call list item" table', async (t) => {
  const body = await list(`call_id=${ids.c1}`);
  t.is(body.total, 1);
  t.deepEqual(body.items[0], {
    callId: ids.c1, transport: 'outbound', pipelineSource: 'agent', status: 'completed', connectionStatus: 'completed',
    endedReason: 'user_hangup', agentId: agentX, agentName: 'Support Bot', campaignId: 7, platformNumber: '+18005550001',
    customerNumber: '+14155550123', telephonyProvider: 'twilio', callSource: 'api_outbound',
    startedAt: '2026-01-10T10:00:05.000Z', endedAt: '2026-01-10T10:05:05.000Z', durationSeconds: 300,
    createdAt: '2026-01-10T10:00:00.000Z', cost: 0.5, tags: ['api', 'outbound', 'vip'],
  });
});

test('default sort: ended_at desc, NULL ended_at last; envelope', async (t) => {
  const body = await list();
  t.is(body.total, 6, 'other organizations are invisible');
  t.deepEqual(names(body.items).slice(0, 4), ['c6', 'c5', 'c2', 'c1']);
  t.deepEqual(names(body.items).slice(4).sort(), ['c3', 'c4']);
  t.like(body, { page: 1, perPage: 50, totalPages: 1 });
});

test('sort_order=asc keeps NULL ended_at last', async (t) => {
  const body = await list('sort_order=asc');
  t.deepEqual(names(body.items).slice(0, 4), ['c1', 'c2', 'c5', 'c6']);
  t.deepEqual(names(body.items).slice(4).sort(), ['c3', 'c4']);
});

test('sort_by created_at, duration_seconds, cost (NULLs last in both directions)', async (t) => {
  t.deepEqual(names((await list('sort_by=created_at')).items), ['c6', 'c5', 'c4', 'c3', 'c2', 'c1']);
  t.deepEqual(names((await list('sort_by=created_at&sort_order=asc')).items), ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']);
  const dur = names((await list('sort_by=duration_seconds')).items);
  t.deepEqual(dur.slice(0, 3), ['c1', 'c6', 'c2']);
  t.deepEqual(dur.slice(3).sort(), ['c3', 'c4', 'c5']);
  const durAsc = names((await list('sort_by=duration_seconds&sort_order=asc')).items);
  t.deepEqual(durAsc.slice(0, 3), ['c2', 'c6', 'c1']);
  const cost = names((await list('sort_by=cost&sort_order=asc')).items);
  t.deepEqual(cost.slice(0, 2), ['c2', 'c1']);
  t.deepEqual(cost.slice(2).sort(), ['c3', 'c4', 'c5', 'c6']);
});

test('pagination over a filtered, sorted result', async (t) => {
  const p1 = await list('sort_by=created_at&per_page=4');
  const p2 = await list('sort_by=created_at&per_page=4&page=2');
  t.deepEqual(names(p1.items), ['c6', 'c5', 'c4', 'c3']);
  t.deepEqual(names(p2.items), ['c2', 'c1']);
  t.like(p2, { total: 6, page: 2, perPage: 4, totalPages: 2 });
  const beyond = await list('per_page=4&page=3');
  t.deepEqual(beyond.items, []);
});

test('call_id exact match; unknown or malformed ids match nothing', async (t) => {
  t.deepEqual(setOf((await list(`call_id=${ids.c3}`)).items), ['c3']);
  t.is((await list('call_id=00000000-0000-4000-8000-000000000000')).total, 0);
  t.is((await list('call_id=abc')).total, 0);
});

test('csv filters: transport, status, connection_status (incl. telephony_ passthrough), ended_reason, call_source', async (t) => {
  t.deepEqual(setOf((await list('transport=outbound')).items), ['c1', 'c5']);
  t.deepEqual(setOf((await list('transport=web,webrtc')).items), ['c4', 'c6']);
  t.deepEqual(setOf((await list('transport=webrtc&transport=inbound')).items), ['c2', 'c4', 'c6'], 'repeated parameters join; web and webrtc are one kind of call');
  t.deepEqual(setOf((await list('status=completed,active')).items), ['c1', 'c2', 'c3']);
  t.deepEqual(setOf((await list('connection_status=telephony_failed_soft,concurrency_limit_reached')).items), ['c4', 'c5']);
  t.deepEqual(setOf((await list('ended_reason=pipeline_error,agent_hangup')).items), ['c2', 'c6']);
  t.deepEqual(setOf((await list('call_source=webrtc')).items), ['c4', 'c6']);
  t.deepEqual(setOf((await list('call_source=api_outbound,dashboard_outbound&status=error')).items), ['c5'], 'filters combine with AND');
});

test('agent_id and agent_name (case-insensitive substring of the captured name, wildcards literal)', async (t) => {
  t.deepEqual(setOf((await list(`agent_id=${agentX}`)).items), ['c1', 'c3']);
  t.deepEqual(setOf((await list(`agent_id=${agentY.toUpperCase()}`)).items), ['c2', 'c6']);
  t.deepEqual(setOf((await list('agent_name=SALES')).items), ['c2', 'c6']);
  t.deepEqual(setOf((await list('agent_name=port%20b')).items), ['c1', 'c3']);
  t.deepEqual(setOf((await list('agent_name=100%25_')).items), ['c4']);
  t.is((await list('agent_name=%25')).total, 1, "'%' matches itself only");
  t.is((await list('agent_name=_')).total, 1, "'_' matches itself only");
});

test('tag: any of the tags (OR); tag=rejected returns only rejected attempts', async (t) => {
  t.deepEqual(setOf((await list('tag=rejected')).items), ['c4']);
  t.deepEqual(setOf((await list('tag=vip,test_call')).items), ['c1', 'c6']);
  t.deepEqual(setOf((await list('tag=webcall')).items), ['c3', 'c4', 'c6']);
  t.is((await list('tag=nothing-like-this')).total, 0);
});

test('campaign_id, phone_number (from or to side), telephony_provider', async (t) => {
  t.deepEqual(setOf((await list('campaign_id=7')).items), ['c1']);
  t.deepEqual(setOf((await list('phone_number=%2B14155550123')).items), ['c1', 'c5']);
  t.deepEqual(setOf((await list('phone_number=+14155550123')).items), ['c1', 'c5'], "an unencoded '+' still works");
  t.deepEqual(setOf((await list('phone_number=%2B18005550002')).items), ['c2']);
  t.deepEqual(setOf((await list('telephony_provider=twilio')).items), ['c1', 'c5']);
});

test('from_date / to_date bound created_at inclusively; a date-only to_date covers that day', async (t) => {
  t.deepEqual(setOf((await list('from_date=2026-01-12T10:00:00Z&to_date=2026-01-13T00:00:00Z')).items), ['c3', 'c4', 'c5']);
  t.deepEqual(setOf((await list('from_date=2026-01-12&to_date=2026-01-12')).items), ['c3', 'c4']);
  t.deepEqual(setOf((await list('from_date=2026-01-13')).items), ['c5', 'c6']);
  t.deepEqual(setOf((await list('to_date=2026-01-11T10:00:00%2B00:00')).items), ['c1', 'c2']);
  t.deepEqual(setOf((await list('to_date=2026-01-11T12:30:00%2B02:30')).items), ['c1', 'c2'], 'offsets honoured');
});

test('impossible dates and times → 422 naming the part, never a 500', async (t) => {
  for (const [q, why] of [
    ['from_date=2025-02-30', 'day 30 does not exist in 2025-02'],
    ['to_date=2025-02-29', 'day 29 does not exist in 2025-02'],
    ['from_date=0000-01-01', 'year 0000'],
    ['from_date=0000-06-15T10:00:00Z', 'year 0000'],
    ['to_date=2025-13-01', 'month 13'],
    ['from_date=2025-01-01T25:00:00Z', 'hour 25'],
    ['from_date=2025-01-01T24:00:00Z', 'hour 24'],
    ['from_date=2025-01-01T10:60:00Z', 'minute 60'],
    ['from_date=2025-01-01T10:00:61', 'second 61'],
    ['to_date=2025-01-01T10:00:00%2B25:00', 'offset +25:00'],
    ['to_date=2025-04-31T00:00:00Z', 'day 31 does not exist in 2025-04'],
  ] as const) {
    const r = await s.request('GET', `/calls?${q}`, { key: keyA });
    t.is(r.status, 422, q);
    t.true(Array.isArray(r.body.detail), q);
    t.is(r.body.detail.length, 1, q);
    const [d] = r.body.detail;
    t.deepEqual(d.loc, ['query', q.split('=')[0]], q);
    t.is(d.type, 'datetime_from_date_parsing', q);
    t.true(d.msg.includes(why), `${q}: ${d.msg}`);
  }
  // leap days, offsets without a colon and fractions still parse
  t.is((await s.request('GET', '/calls?from_date=2024-02-29&to_date=2024-02-29T23:59:59.123456789%2B0530', { key: keyA })).status, 200);
  t.is((await s.request('GET', '/calls?from_date=2000-02-29T00:00z', { key: keyA })).status, 200);
  t.deepEqual(setOf((await list('from_date=2026-01-12T15:30:00%2B0530&to_date=2026-01-12 17:30')).items), ['c3', 'c4'], 'offset without a colon, space separator');
});

test('invalid parameters → 422 array with every failure, loc in query', async (t) => {
  const r = await s.request('GET', '/calls?sort_by=name&sort_order=up&page=0&per_page=101&status=completed,done&transport=fax&agent_id=xyz&from_date=yesterday&campaign_id=abc&ended_reason=bored&call_source=x&connection_status=telephony_', { key: keyA });
  t.is(r.status, 422);
  t.true(Array.isArray(r.body.detail));
  const locs = r.body.detail.map((d: { loc: string[] }) => d.loc.join('.')).sort();
  t.deepEqual(locs, [
    'query.agent_id', 'query.call_source', 'query.campaign_id', 'query.connection_status', 'query.ended_reason', 'query.from_date',
    'query.page', 'query.per_page', 'query.sort_by', 'query.sort_order', 'query.status', 'query.transport',
  ]);
  const status = r.body.detail.find((d: { loc: string[] }) => d.loc[1] === 'status');
  t.is(status.input, 'done');
  for (const d of r.body.detail) t.truthy(d.type && d.msg);
  for (const q of ['sort_by=foo', 'sort_order=DESCENDING', 'per_page=0']) {
    const x = await s.request('GET', `/calls?${q}`, { key: keyA });
    t.is(x.status, 422, q);
  }
});

test('no organization → 400; no key → 401', async (t) => {
  const { createApiKey } = await import('../../core/orgs.ts');
  const { key } = await createApiKey(s.db, null, 'orgless');
  t.deepEqual((await s.request('GET', '/calls', { key })).body, { detail: 'No organization selected' });
  t.is((await s.request('GET', '/calls', { key: null })).status, 401);
});
