import test from 'ava';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { createApiKey } from '../core/orgs.ts';

let s: TestServer;
test.before(async () => {
  s = await startTestServer();
});
test.after.always(async () => {
  await s?.close();
});

test('missing key → 401 Authorization header required', async (t) => {
  const r = await s.request('GET', '/user/api-keys', { key: null });
  t.is(r.status, 401);
  t.deepEqual(r.body, { detail: 'Authorization header required' });
});

test('unknown key → 401 Invalid or expired API key', async (t) => {
  const r = await s.request('GET', '/user/api-keys', { key: 'vak_nope' });
  t.is(r.status, 401);
  t.deepEqual(r.body, { detail: 'Invalid or expired API key' });
});

test('key without organization → 400 No organization selected', async (t) => {
  const { key } = await createApiKey(s.db, null, 'orgless');
  const r = await s.request('GET', '/user/api-keys', { key });
  t.is(r.status, 400);
  t.deepEqual(r.body, { detail: 'No organization selected' });
});

test('key shown once; revoke → 401; reactivate → works with the original value', async (t) => {
  const { apiKey } = await s.createOrg();
  const created = await s.request('POST', '/user/api-keys', { key: apiKey, body: { name: 'ci' } });
  t.is(created.status, 200);
  const newKey: string = created.body.api_key;
  t.regex(newKey, /^vak_[A-Za-z0-9_-]{43}$/);
  t.true(newKey.startsWith(created.body.key_prefix));
  const list = await s.request('GET', '/user/api-keys', { key: apiKey });
  t.is(list.status, 200);
  t.false(JSON.stringify(list.body).includes(newKey));
  t.is(list.body.total, 2);
  t.deepEqual(Object.keys(list.body).sort(), ['items', 'page', 'perPage', 'total', 'totalPages']);

  t.is((await s.request('GET', '/user/api-keys', { key: newKey })).status, 200);
  const del = await s.request('DELETE', `/user/api-keys/${created.body.id}`, { key: apiKey });
  t.is(del.status, 200);
  const after = await s.request('GET', '/user/api-keys', { key: newKey });
  t.is(after.status, 401);
  t.deepEqual(after.body, { detail: 'Invalid or expired API key' });
  const re = await s.request('PUT', `/user/api-keys/${created.body.id}/reactivate`, { key: apiKey });
  t.deepEqual(re.body, { success: true, message: 'API key reactivated' });
  t.is((await s.request('GET', '/user/api-keys', { key: newKey })).status, 200);
});

test('another organization\'s key id → 404 API key not found', async (t) => {
  const a = await s.createOrg({ name: 'A' });
  const b = await s.createOrg({ name: 'B' });
  const created = await s.request('POST', '/user/api-keys', { key: a.apiKey, body: { name: 'a-key' } });
  for (const [m, p] of [['DELETE', `/user/api-keys/${created.body.id}`], ['PUT', `/user/api-keys/${created.body.id}/reactivate`]] as const) {
    const r = await s.request(m, p, { key: b.apiKey });
    t.is(r.status, 404);
    t.deepEqual(r.body, { detail: 'API key not found' });
  }
});

test('pagination 422s and envelope', async (t) => {
  const { apiKey } = await s.createOrg();
  for (const q of ['page=0', 'per_page=101', 'per_page=0', 'page=abc']) {
    const r = await s.request('GET', `/user/api-keys?${q}`, { key: apiKey });
    t.is(r.status, 422, q);
    t.true(Array.isArray(r.body.detail));
    t.is(r.body.detail[0].loc[0], 'query');
  }
  const both = await s.request('GET', '/user/api-keys?page=0&per_page=500', { key: apiKey });
  t.is(both.body.detail.length, 2);
  const ok = await s.request('GET', '/user/api-keys?page=2&per_page=1', { key: apiKey });
  t.deepEqual({ ...ok.body, items: ok.body.items.length }, { items: 0, total: 1, page: 2, perPage: 1, totalPages: 1 });
});

test('body 422 array with loc starting at body; malformed JSON 400; unknown route 404', async (t) => {
  const { apiKey } = await s.createOrg();
  const r = await s.request('POST', '/user/api-keys', { key: apiKey, body: { name: '' } });
  t.is(r.status, 422);
  t.like(r.body.detail[0], { type: 'string_too_short', loc: ['body', 'name'] });
  const missing = await s.request('POST', '/user/api-keys', { key: apiKey, body: {} });
  t.like(missing.body.detail[0], { type: 'missing', loc: ['body', 'name'], msg: 'Field required' });
  const bad = await s.request('POST', '/user/api-keys', { key: apiKey, raw: '{"name": ' });
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /^Malformed JSON body/);
  const nf = await s.request('GET', '/nope', { key: apiKey });
  t.is(nf.status, 404);
  t.deepEqual(nf.body, { detail: 'Not Found' });
});

test('request-rate limit → 429 Rate limit exceeded', async (t) => {
  const { apiKey } = await s.createOrg({ ratePerMinute: 5 });
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push((await s.request('GET', '/user/api-keys', { key: apiKey })).status);
  t.true(statuses.slice(0, 5).every((x) => x === 200));
  const last = await s.request('GET', '/user/api-keys', { key: apiKey });
  t.is(last.status, 429);
  t.deepEqual(last.body, { detail: 'Rate limit exceeded' });
});

test('healthz, readyz, metrics without a key', async (t) => {
  const h = await fetch(`${s.origin}/healthz`);
  t.is(h.status, 200);
  const r = await fetch(`${s.origin}/readyz`);
  t.is(r.status, 200);
  t.like(await r.json(), { status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  const m = await (await fetch(`${s.origin}/metrics`)).text();
  t.regex(m, /http_request_duration_seconds/);
});

test('OpenAPI documents every resource, including the usage summary fields', async (t) => {
  const doc = await (await fetch(`${s.baseUrl}/openapi.json`)).json() as { paths: Record<string, any> };
  for (const p of ['/user/api-keys', '/call', '/calls', '/calls/{callId}', '/agents', '/tools', '/files', '/knowledge-base/upload-url', '/wallet/dashboard/usage-summary', '/organizations/reports/usage-summary']) {
    t.truthy(doc.paths[p], p);
  }
  // the WebRTC signaling the media process serves on the same origin
  t.truthy(doc.paths['/webrtc/offer/{call_id}']?.post, 'POST /webrtc/offer/{call_id}');
  t.truthy(doc.paths['/webrtc/offer/{call_id}']?.patch, 'PATCH /webrtc/offer/{call_id}');
  t.truthy(doc.paths['/webrtc/ice-servers']?.get, 'GET /webrtc/ice-servers');
  const offer = doc.paths['/webrtc/offer/{call_id}'].post;
  t.deepEqual(offer.requestBody.content['application/json'].schema.required, ['sdp', 'type']);
  t.deepEqual(Object.keys(offer.responses).sort(), ['200', '400', '401', '404', '409', '413', '422', '429', '503']);
  t.deepEqual(Object.keys(doc.paths['/webrtc/offer/{call_id}'].patch.responses).sort(), ['200', '400', '401', '404', '409', '413', '422', '429']);
  const usage = doc.paths['/wallet/dashboard/usage-summary'].get.responses[200].content['application/json'].schema;
  t.deepEqual(Object.keys(usage.properties).sort(), ['average_duration_seconds', 'billed_minutes', 'connected_calls', 'from', 'rejected_calls', 'spend_usd', 'success_rate', 'to', 'total_calls', 'total_duration_seconds']);
  // and the documented fields are the ones the endpoint returns
  const { apiKey } = await s.createOrg();
  const r = await s.request('GET', '/wallet/dashboard/usage-summary?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z', { key: apiKey });
  t.is(r.status, 200);
  t.deepEqual(Object.keys(r.body).sort(), Object.keys(usage.properties).sort());
});
