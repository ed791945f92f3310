// The outside fuzz: 10,000 generated requests from outside the service, over
//   - every operation of the served OpenAPI document (9,000): path ids (seeded, random, junk, raw escapes), query
//     strings (documented parameters with values of their schema or not, extra keys, repeats), headers (API key
//     valid/absent/garbage, content types, request ids) and bodies derived from the documented schemas, mutated,
//     malformed or carrying NUL/unpaired surrogates; the carrier webhooks get form bodies;
//   - multipart edge cases on POST /files (500): bad/missing boundaries, truncation, duplicates, limits, odd names;
//   - WebSocket audio frames (500): odd sizes, empty, oversized (over the 1 MiB frame limit), text frames, on live
//     calls with fake engines.
// Properties: never a 500 (501/502/503 are documented answers and counted); no request hangs; the service keeps
// serving (health and an authenticated read every 1,000 requests and at the end); a refused request (4xx) changes
// no row — checked after every request through a change log (row triggers on every table), the only rows a refused
// request may write being the spec's rejected-call records (status error, tag rejected) and their counters.
// FC_SEED=<n> replays a run; FUZZ_RUNS scales the HTTP count.
import test from 'ava';
import http from 'node:http';
import fc from 'fast-check';
import WebSocket from 'ws';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { fakeEngines } from '../fakes/engines.ts';
import { agentConfig, endedRow, insertPendingCall } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { multipart, type Part } from '../knowledge-base/helpers.ts';
import { anyText, documentedOperations, unstorableText, valueFor, type Operation } from './fuzz-helpers.ts';

const HTTP_RUNS = Number(process.env.FUZZ_RUNS ?? 9000);
const MULTIPART_RUNS = Number(process.env.FUZZ_MULTIPART_RUNS ?? 500);
const WS_SESSIONS = 20;
const WS_FRAMES_PER_SESSION = 25;
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31;

let s: TestServer;
let key: string;
let orgId: string;
let doc: Record<string, any>;
let ops: Operation[];
const ids: string[] = [];
const statuses = new Map<number, number>();
let mark = 0;

const factory: EngineFactory = async () => fakeEngines({ stt: { utterances: ['hello there'] }, llm: [{ text: 'Hi.', firstTokenMs: 10 }] });

test.before(async () => {
  s = await startTestServer({
    env: {
      // nothing in the background may write while a refused request is checked: no expiry of pending rows
      CALL_JOIN_TIMEOUT_S: '3600', PHONE_PENDING_TIMEOUT_S: '3600', WEBRTC_CONNECT_TIMEOUT_S: '600',
    },
    media: { engines: factory },
  });
  const org = await s.createOrg({ ratePerMinute: 10_000_000, balanceUsd: 1000, concurrency: 1000 });
  key = org.apiKey;
  orgId = org.orgId;
  watcherKey = (await s.createOrg({ ratePerMinute: 10_000_000 })).apiKey;
  doc = (await s.request('GET', '/openapi.json', { key: null })).body;
  ops = documentedOperations(doc);

  // Seeded resources, so that generated ids sometimes reach the deeper code paths.
  const agent = await s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config) VALUES (${orgId}, 'seed', ${JSON.stringify(agentConfig())}::jsonb) RETURNING id, uuid::text AS uuid`);
  ids.push(agent.uuid);
  ids.push(await insertPendingCall(s.db, { orgId, config: agentConfig(), transport: 'webrtc' }));
  ids.push(await insertPendingCall(s.db, { orgId, config: agentConfig() }));
  const text = await s.request('POST', '/knowledge-base/create-from-text', { key, body: { text: 'Seed document.' } });
  if (text.status === 201) ids.push(text.body.id);
  const apiKeys = await s.request('GET', '/user/api-keys', { key });
  for (const k of apiKeys.body?.items ?? []) ids.push(String(k.id));

  // The change log: one row per inserted/updated/deleted row of every table.
  await s.db.query(sql.unsafe`CREATE TABLE fuzz_changes (id bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL, row jsonb)`);
  await s.db.query(sql.unsafe`
    CREATE FUNCTION fuzz_log() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO fuzz_changes (tbl, op, row) VALUES (TG_TABLE_NAME, TG_OP, to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END));
      RETURN NULL;
    END $$`);
  const tables = await s.db.anyFirst(sql.type(z.object({ t: z.string() }))`
    SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('fuzz_changes', 'rate_limit_windows', 'media_nodes', 'schema_migrations')`);
  for (const t of tables) {
    await s.db.query(sql.unsafe`CREATE TRIGGER fuzz_log AFTER INSERT OR UPDATE OR DELETE ON ${sql.identifier([t])} FOR EACH ROW EXECUTE FUNCTION fuzz_log()`);
  }
});
test.after.always(async () => {
  await s?.close();
});

interface Change { tbl: string; op: string; row: Record<string, unknown> }
async function changesSinceMark(): Promise<readonly Change[]> {
  const rows = await s.db.any(sql.type(z.object({ id: z.coerce.number(), tbl: z.string(), op: z.string(), row: z.record(z.string(), z.unknown()) }))`
    SELECT id, tbl, op, row FROM fuzz_changes WHERE id > ${mark} ORDER BY id`);
  if (rows.length > 0) mark = rows[rows.length - 1]!.id;
  return rows;
}

/** The rows a refused request may write: the spec's rejected-call records (and the counters kept on calls). */
function allowedForRefusal(c: Change): boolean {
  if (c.tbl === 'calls' && c.op === 'INSERT') {
    const tags = (c.row.tags as string[] | null) ?? [];
    return (c.row.status === 'error' && tags.includes('rejected')) || c.row.connection_status === 'dial_failed';
  }
  return ['call_counts', 'call_counts_daily', 'call_agent_names'].includes(c.tbl);
}

/** Percent-encodes text for a URL; unpaired surrogates cannot be UTF-8 and go as U+FFFD. */
const enc = (v: string) => encodeURIComponent(v.toWellFormed());
const rawEscape = fc.constantFrom('%00', '%ED%A0%80', '%FF', '%', '%zz', '%C0%AF', '..%2F..', '%u0000');

const pathValue = () => fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ids).map(enc) },
  { weight: 2, arbitrary: fc.uuid().map(enc) },
  { weight: 2, arbitrary: anyText.map((t) => enc(t.slice(0, 300)) || 'x') },
  { weight: 1, arbitrary: fc.constantFrom('1', '0', '-1', '99999999999999999999', 'twilio', 'plivo', 'telnyx', 'vonage', 'exotel', 'smartflo').map(enc) },
  { weight: 1, arbitrary: rawEscape },
);

const CONTENT_TYPES = ['application/json', 'application/json; charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'multipart/form-data; boundary=x', 'application/xml', ''];

interface Req { method: string; url: string; headers: Record<string, string>; body?: string | Buffer }

function requestFor(op: Operation): fc.Arbitrary<Req> {
  const path = fc.tuple(...op.pathParams.map(() => pathValue())).map((vals) => {
    let i = 0;
    return `/api/v1${op.path.replace(/\{[^}]+\}/g, () => vals[i++] ?? 'x')}`;
  });
  const documented = op.query.map((q) => fc.option(fc.tuple(fc.constant(q.name), valueFor(doc, q.schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '').slice(0, 2000))), { nil: undefined, freq: 2 }));
  const query = fc.tuple(
    fc.tuple(...documented),
    fc.array(fc.tuple(anyText.map((t) => t.slice(0, 50)), anyText.map((t) => t.slice(0, 200))), { maxLength: 2 }),
    fc.option(rawEscape, { freq: 8 }),
  ).map(([doc, extra, raw]) => {
    const parts = [...doc.filter((x): x is [string, string] => x !== undefined), ...extra].map(([k, v]) => `${enc(k)}=${enc(v)}`);
    if (raw) parts.push(`q=${raw}`);
    return parts.length ? `?${parts.join('&')}` : '';
  });
  const auth = fc.oneof(
    { weight: 12, arbitrary: fc.constant<Record<string, string>>({ 'x-api-key': key }) },
    { weight: 1, arbitrary: fc.constant<Record<string, string>>({}) },
    { weight: 1, arbitrary: fc.constantFrom('garbage', 'x'.repeat(600), `${key}x`, 'sk_live_0000').map((k) => ({ 'x-api-key': k })) },
  );
  const headers = fc.record({
    'x-request-id': fc.option(fc.constantFrom('abc', 'x'.repeat(200), '../../etc', 'a b'), { nil: undefined }),
    accept: fc.option(fc.constantFrom('*/*', 'text/html', 'application/xml'), { nil: undefined }),
    'x-twilio-signature': fc.option(fc.constantFrom('AAAA', ''), { nil: undefined }),
    'idempotency-key': fc.option(fc.constantFrom('k1', 'x'.repeat(300)), { nil: undefined }),
  }, { requiredKeys: [] });
  const hasBody = op.contentTypes.length > 0 || op.method !== 'GET';
  const isForm = op.contentTypes.includes('application/x-www-form-urlencoded') && !op.contentTypes.includes('application/json');
  const body: fc.Arbitrary<{ type: string; body?: string | Buffer }> = !hasBody || op.method === 'GET' || op.method === 'DELETE'
    ? fc.constant({ type: '' })
    : fc.oneof(
      // the documented shape (or close to it)
      { weight: 8, arbitrary: valueFor(doc, op.bodySchema ?? {}).map((v) => isForm
        ? { type: 'application/x-www-form-urlencoded', body: formOf(v) }
        : { type: 'application/json', body: JSON.stringify(v) ?? 'null' }) },
      // unstorable text somewhere in an otherwise documented body
      { weight: 2, arbitrary: fc.tuple(valueFor(doc, op.bodySchema ?? {}), anyText.map((k) => k.slice(0, 40)), unstorableText).map(([v, k, bad]) => {
        const obj = v !== null && typeof v === 'object' && !Array.isArray(v) ? { ...v, [k || 'name']: bad } : { name: bad };
        return isForm ? { type: 'application/x-www-form-urlencoded', body: formOf(obj) } : { type: 'application/json', body: JSON.stringify(obj) };
      }) },
      // malformed bodies and mismatched content types
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...CONTENT_TYPES), fc.constantFrom('{', '{"a":', '[1,2', 'null', '""', '1e999', '{"__proto__":{"x":1}}', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', '\u0000', 'a=%00&b=%ED%A0%80', '--x\r\n\r\n', '', '\ufeff{}')).map(([type, body]) => ({ type, body })) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => ({ type: 'application/json', body: Buffer.from(b) })) },
    );
  return fc.tuple(path, query, auth, headers, body).map(([p, q, a, h, b]) => {
    const hs: Record<string, string> = { ...a };
    for (const [k, v] of Object.entries(h)) if (v !== undefined) hs[k] = v;
    if (op.public) delete hs['x-api-key'];
    if (b.type) hs['content-type'] = b.type;
    return { method: op.method, url: `${s.origin}${p}${q}`, headers: hs, body: b.body };
  });
}

function formOf(v: unknown): string {
  const o = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  const parts: string[] = [];
  for (const [k, x] of Object.entries(o)) parts.push(`${enc(k)}=${enc(typeof x === 'string' ? x : JSON.stringify(x) ?? '')}`);
  return parts.join('&');
}

let previous = '';
/** One request on its own connection (node:http, no keep-alive): each generated request stands alone. */
function rawRequest(r: Req): Promise<number> {
  const u = new URL(r.url);
  const body = r.method === 'GET' || r.method === 'HEAD' || r.body === undefined ? undefined : Buffer.from(r.body);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, method: r.method, path: `${u.pathname}${u.search}`, agent: false,
      headers: { ...r.headers, connection: 'close', ...(body ? { 'content-length': String(body.length) } : {}) },
      timeout: 30_000,
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

async function send(r: Req): Promise<number> {
  const t0 = Date.now();
  const status = await rawRequest(r);
  if (process.env.FUZZ_DEBUG && Date.now() - t0 > 1000) console.error(`[fuzz] slow ${Date.now() - t0} ms: ${r.method} ${r.url.slice(0, 300)} ${String(r.body).slice(0, 200)} (after ${previous})`);
  previous = `${r.method} ${r.url.slice(0, 200)} ${JSON.stringify(r.headers)} ${String(r.body).slice(0, 300)}`;
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
  return status;
}

let watcherKey: string;
/** Health, and an authenticated read by another organization (the fuzz may archive its own organization's keys). */
async function stillServing(): Promise<boolean> {
  const health = await fetch(`${s.origin}/healthz`);
  const list = await s.request('GET', '/agents', { key: watcherKey });
  return health.status === 200 && list.status === 200;
}

/** One request: no 500, and a refused one writes nothing but the spec's rejected-call records. */
async function check(r: Req, label: string): Promise<void> {
  try {
    await checkOne(r, label);
  } catch (err) {
    console.error(`[fuzz] ${(err as Error).message}`);
    throw err;
  }
}
async function checkOne(r: Req, label: string): Promise<void> {
  const status = await send(r).catch(async (err: Error) => {
    if (process.env.FUZZ_DEBUG) {
      const pg = await import('pg');
      const c = new pg.default.Client({ connectionString: s.config.DATABASE_URL });
      await c.connect();
      const act = await c.query(`SELECT state, wait_event_type, now() - query_start AS age, left(query, 200) AS q FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
      console.error(`[fuzz] activity ${JSON.stringify(act.rows)}`);
      await c.end();
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 10));
      console.error(`[fuzz] timer latency ${Date.now() - t0} ms`);
    }
    throw new Error(`${err.message} for ${label}: ${r.method} ${r.url} ${JSON.stringify(r.headers)} ${String(r.body).slice(0, 500)} (previous request: ${previous})`);
  });
  if (status === 500) throw new Error(`500 for ${label}: ${r.method} ${r.url} ${JSON.stringify(r.headers)} ${String(r.body).slice(0, 500)}`);
  let changes = await changesSinceMark();
  if (status < 300 && /\/user\/api-keys\//.test(r.url)) {
    // an accepted DELETE archived the fuzz organization's key: put it back (outside the checked request) so that
    // the rest of the run still reaches past authentication
    await s.db.query(sql.unsafe`UPDATE api_keys SET status = 'active', archived_at = NULL WHERE organization_id = ${orgId}`);
    changes = changes.concat(await changesSinceMark()).filter((c) => c.tbl !== 'api_keys');
  }
  if (status >= 400 && status < 500) {
    const bad = changes.filter((c) => !allowedForRefusal(c));
    if (bad.length > 0) throw new Error(`${status} for ${label} changed rows ${JSON.stringify(bad).slice(0, 800)}: ${r.method} ${r.url} ${String(r.body).slice(0, 300)}`);
  }
}

test.serial(`${HTTP_RUNS} generated requests over every documented operation: no 500, nothing changed by a refused one`, async (t) => {
  t.timeout(600_000);
  t.true(ops.length >= 70, `${ops.length} operations`);
  await changesSinceMark();
  const arb = fc.constantFrom(...ops).chain((op) => requestFor(op).map((r) => ({ op, r })));
  let n = 0;
  await fc.assert(
    fc.asyncProperty(arb, async ({ op, r }) => {
      await check(r, `${op.method} ${op.path}`);
      n += 1;
      if (n % 1000 === 0 && !(await stillServing())) throw new Error(`not serving after ${n} requests`);
    }),
    { numRuns: HTTP_RUNS, seed, endOnFailure: true },
  );
  t.is(n, HTTP_RUNS);
  t.true(await stillServing());
  t.log(`seed ${seed}; statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
  t.false(statuses.has(500));
});

test.serial(`${MULTIPART_RUNS} multipart edge cases on POST /files: no 500, nothing changed by a refused one`, async (t) => {
  await changesSinceMark();
  const part: fc.Arbitrary<Part> = fc.record({
    name: fc.constantFrom('file', 'retrievalMode', 'file', 'x', '', 'FILE'),
    value: fc.oneof(anyText.map((x) => x.slice(0, 2000)), fc.uint8Array({ maxLength: 3000 }).map((b) => Buffer.from(b)), fc.constant('<5 MB + 1>')),
    filename: fc.option(fc.constantFrom('a.txt', 'a.pdf', '', '../../etc/passwd.txt', 'x.exe', 'noext', '.txt', 'a'.repeat(300) + '.md', 'ü.txt', 'a"b.txt', `x"; filename*=utf-8''a%00b.txt; y="`), { nil: undefined }),
    contentType: fc.option(fc.constantFrom('text/plain', 'application/pdf', 'application/octet-stream', ''), { nil: undefined }),
  }, { requiredKeys: ['name', 'value'] });
  const edit = fc.constantFrom('none', 'none', 'truncate', 'no-boundary', 'wrong-boundary', 'no-final', 'preamble', 'json-type', 'many-fields', 'crlf-only');
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(part, { maxLength: 4 }), edit, fc.nat(), async (parts, how, cut) => {
      let { body, contentType } = multipart(parts.map((p) => (p.value === '<5 MB + 1>' ? { ...p, value: Buffer.alloc(5 * 1024 * 1024 + 1, 97) } : p)));
      if (how === 'truncate') body = body.subarray(0, cut % (body.length + 1));
      if (how === 'no-boundary') contentType = 'multipart/form-data';
      if (how === 'wrong-boundary') contentType = 'multipart/form-data; boundary=nope';
      if (how === 'no-final') body = body.subarray(0, Math.max(0, body.length - 4));
      if (how === 'preamble') body = Buffer.concat([Buffer.from('garbage before\r\n'), body]);
      if (how === 'json-type') contentType = 'application/json';
      if (how === 'many-fields') body = multipart(Array.from({ length: 45 }, (_, i) => ({ name: `f${i}`, value: 'v' }))).body;
      if (how === 'crlf-only') body = Buffer.from('\r\n\r\n\r\n');
      await check({ method: 'POST', url: `${s.baseUrl}/files`, headers: { 'x-api-key': key, 'content-type': contentType }, body }, `multipart ${how}`);
      n += 1;
    }),
    { numRuns: MULTIPART_RUNS, seed, endOnFailure: true },
  );
  t.is(n, MULTIPART_RUNS);
  t.true(await stillServing());
});

test.serial(`WebSocket audio: ${WS_SESSIONS * WS_FRAMES_PER_SESSION} odd, text and oversized frames on live calls: the calls end cleanly, the service keeps serving`, async (t) => {
  const frame = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(0, 1, 3, 17, 319, 321, 640, 641, 1279, 4097, 65_537).map((n) => ({ binary: true as const, data: n })) },
    { weight: 1, arbitrary: fc.constant({ binary: true as const, data: (1 << 20) + 1 }) },
    { weight: 3, arbitrary: fc.oneof(anyText.map((x) => x.slice(0, 5000)), fc.jsonValue().map((v) => JSON.stringify(v)), fc.constantFrom('{"type":"end"}', '{"type":"mute"}', '{"type":', 'null'))
      .map((x) => ({ binary: false as const, data: x.toWellFormed() })) },
  );
  const sessions = fc.sample(fc.array(frame, { minLength: WS_FRAMES_PER_SESSION, maxLength: WS_FRAMES_PER_SESSION }), { numRuns: WS_SESSIONS, seed });
  const codes: number[] = [];
  let frames = 0;
  for (const seq of sessions) {
    const callId = await insertPendingCall(s.db, { orgId, config: agentConfig() });
    const ws = new WebSocket(`${s.origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${callId}?api_key=${encodeURIComponent(key)}`);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('error', () => {});
    await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('close', () => reject(new Error('closed before open'))); });
    for (const f of seq) {
      if (ws.readyState !== WebSocket.OPEN) break;
      const data = typeof f.data === 'number' ? Buffer.alloc(f.data, 7) : f.data;
      await new Promise<void>((resolve) => ws.send(data, { binary: f.binary }, () => resolve()));
      frames += 1;
    }
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    const code = await closed;
    codes.push(code);
    const row = await endedRow(s.db, callId).catch(async (err: Error) => {
      const now = await s.db.one(sql.unsafe`SELECT status, ended_reason, connection_status FROM calls WHERE id = ${callId}`);
      throw new Error(`${err.message}: close code ${code}, row ${JSON.stringify(now)}, frames ${JSON.stringify(seq.map((f) => (f.binary ? f.data : `text ${String(f.data).length}`)))}`);
    });
    t.not(row.status, 'active', `call ${callId} ended`);
  }
  t.log(`frames sent before the server closed: ${frames}; close codes: ${JSON.stringify(codes)}`);
  t.false(codes.includes(1011), 'no internal-error close');
  t.true(await stillServing());
});
