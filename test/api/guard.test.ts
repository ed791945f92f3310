// The one input guard (api/middleware/guard.ts), over every operation of the served OpenAPI document: a NUL or an
// unpaired surrogate in a query value, a path parameter, a JSON or form body field or a multipart field is refused
// with the error shape of the route family, naming the field, and changes no row (POST /call records the rejected
// attempt, as the spec asks of every rejected call). Routes added later are covered because the guard sits in the
// routers' shared middleware: the operations come from the served document, not from a list here.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import { documentedOperations, tableFingerprint, type Operation } from './fuzz-helpers.ts';

let s: TestServer;
let key: string;
let ops: Operation[];

test.before(async () => {
  s = await startTestServer({ temporal: false });
  key = (await s.createOrg({ ratePerMinute: 10_000_000 })).apiKey;
  ops = documentedOperations((await s.request('GET', '/openapi.json', { key: null })).body);
});
test.after.always(async () => {
  await s?.close();
});

/** A path with every {param} filled (a syntactically valid id), optionally one of them replaced. */
function fill(op: Operation, replace?: { name: string; value: string }): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    encodeURIComponent(replace?.name === name ? replace.value : name === 'carrier' ? 'plivo' : '00000000-0000-4000-8000-000000000000'));
}

const BAD = ['nul\u0000here', 'lone \ud800 surrogate', '\udfff'];

test('a NUL in a query value is refused on every documented operation with 422 naming the parameter', async (t) => {
  t.true(ops.length >= 70, `${ops.length} operations`);
  for (const op of ops) {
    const r = await s.request(op.method, `${fill(op)}?zzq=a%00b`, { key: op.public ? null : key });
    t.is(r.status, 422, `${op.method} ${op.path}: ${JSON.stringify(r.body)}`);
    t.deepEqual(r.body.detail, [{ type: 'string_unicode', loc: ['query', 'zzq'], msg: 'Input should be a valid string without NUL characters or unpaired surrogates', input: 'a\u0000b' }], `${op.method} ${op.path}`);
  }
});

test('a NUL in a path parameter is refused on every operation that has one, naming it', async (t) => {
  let checked = 0;
  for (const op of ops) {
    for (const name of op.pathParams) {
      const r = await s.request(op.method, fill(op, { name, value: 'x\u0000y' }), { key: op.public ? null : key });
      t.is(r.status, 422, `${op.method} ${op.path} ${name}: ${JSON.stringify(r.body)}`);
      t.deepEqual(r.body.detail?.[0]?.loc, ['path', name], `${op.method} ${op.path}`);
      checked += 1;
    }
  }
  t.true(checked > 40, `${checked} path parameters`);
});

test('NUL and unpaired surrogates in JSON and form bodies: refused in the family shape, field named, no row changed', async (t) => {
  const before = await tableFingerprint(s.db);
  let calls = 0;
  for (const op of ops) {
    for (const bad of BAD) {
      const path = fill(op);
      const keyFor = op.public ? null : key;
      if (op.contentTypes.includes('application/json')) {
        const r = await s.request(op.method, path, { key: keyFor, body: { name: bad, nested: { list: ['ok', bad] } } });
        if (op.method === 'POST' && op.path === '/call') {
          calls += 1;
          t.is(r.status, 400);
          t.is(r.body.detail.error, 'Agent configuration validation failed');
          t.deepEqual(r.body.detail.details.map((d: { path: string }) => d.path).sort(), ['name', 'nested.list.1']);
        } else if (op.path === '/agents/preview-snapshot') {
          t.is(r.status, 400);
          t.is(r.body.detail.error, 'Agent configuration validation failed');
        } else if ((op.method === 'POST' && op.path === '/agents') || (op.method === 'PATCH' && op.path === '/agents/{agent_uuid}')) {
          t.is(r.status, 400);
          t.is(r.body.detail.error, 'invalid_agent_config');
          t.deepEqual(r.body.detail.details.map((d: { loc: unknown[] }) => d.loc).sort(), [['name'], ['nested', 'list', 1]]);
        } else {
          t.is(r.status, 422, `${op.method} ${op.path}: ${JSON.stringify(r.body)}`);
          t.deepEqual(r.body.detail.map((d: { loc: unknown[] }) => d.loc).sort(), [['body', 'name'], ['body', 'nested', 'list', 1]], `${op.method} ${op.path}`);
        }
      }
      if (op.contentTypes.includes('application/x-www-form-urlencoded')) {
        const form = new URLSearchParams({ CallSid: 'CA1', CallStatus: bad }).toString();
        const r = await s.request(op.method, path, { key: keyFor, raw: form, headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'x' } });
        if (bad.includes('\u0000')) {
          t.is(r.status, 422, `${op.method} ${op.path}: ${JSON.stringify(r.body)}`);
          t.deepEqual(r.body.detail[0].loc, ['body', 'CallStatus']);
        } else {
          // A form body is UTF-8 percent-encoding: an unpaired surrogate cannot be sent, it arrives as U+FFFD.
          t.true(r.status < 500, `${op.method} ${op.path}: ${r.status}`);
        }
      }
    }
  }
  t.is(calls, BAD.length);
  // Only the rejected call starts were recorded — POST /call and POST /agents/{uuid}/test-call (spec: every rejected
  // call is a row, status error, tag rejected; a refused test-call body leaves its row too).
  const rejected = await s.db.any(sql.type(z.object({ status: z.string(), tags: z.array(z.string()), connection_status: z.string().nullable() }))`
    SELECT status, tags, connection_status FROM calls`);
  t.is(rejected.length, 2 * BAD.length);
  for (const r of rejected) t.like(r, { status: 'error', connection_status: 'schema_validation' });
  for (const r of rejected) t.true(r.tags.includes('rejected'));
  // (call_counts* are the counters of those rows)
  await s.db.query(sql.unsafe`DELETE FROM calls`);
  const { call_counts: _a, call_counts_daily: _b, ...after } = await tableFingerprint(s.db);
  const { call_counts: _c, call_counts_daily: _d, ...expected } = before;
  t.deepEqual(after, expected);
});

test('multipart: NUL in a text field or the (RFC 5987) file name is refused with 422 naming it; in a part header, 400; nothing stored', async (t) => {
  const file = { name: 'file', filename: 'a.txt', contentType: 'text/plain', value: Buffer.from('hi') };
  const cases = [
    { parts: [{ name: 'retrievalMode', value: 'chunked\u0000' }, file], status: 422, loc: ['body', 'retrievalMode'] },
    { parts: [{ ...file, filename: `x"; filename*=utf-8''a%00b.txt; y="` }], status: 422, loc: ['body', 'file.filename'] },
    // a raw NUL inside a part header is malformed multipart: busboy refuses it before any field exists
    { parts: [{ ...file, filename: 'a\u0000b.txt' }], status: 400, loc: null },
    { parts: [{ name: 'x\u0000', value: 'v' }, file], status: 400, loc: null },
  ];
  const before = await tableFingerprint(s.db);
  for (const c of cases) {
    const { body, contentType } = multipart(c.parts);
    const r = await s.request('POST', '/files', { key, raw: body as unknown as string, headers: { 'content-type': contentType } });
    t.is(r.status, c.status, JSON.stringify(r.body));
    if (c.loc) t.deepEqual(r.body.detail[0].loc, c.loc);
    else t.regex(r.body.detail, /^Malformed multipart body/);
  }
  t.deepEqual(await tableFingerprint(s.db), before);
});

test('the per-route checks the guard replaced still answer as before for storable text', async (t) => {
  const ok = await s.request('GET', '/agents?name=caf%C3%A9', { key });
  t.is(ok.status, 200);
  const emoji = await s.request('POST', '/knowledge-base/upload-url', { key, body: { filename: 'notes \ud83d\ude00.txt', mime_type: 'text/plain' } });
  t.not(emoji.status, 422, 'a well-formed surrogate pair is ordinary text');
  const unauth = await s.request('GET', '/agents?name=%00', { key: null });
  t.is(unauth.status, 401, 'the key check still comes first');
});

test('multipart bodies are read only through the guarded reader (api/middleware/multipart.ts)', async (t) => {
  const { readdir, readFile } = await import('node:fs/promises');
  const files = (await readdir('api', { recursive: true })).filter((f) => f.endsWith('.ts'));
  const direct = [];
  for (const f of files) if (/from 'busboy'/.test(await readFile(`api/${f}`, 'utf8')) && f !== 'middleware/multipart.ts') direct.push(f);
  t.deepEqual(direct, [], 'read multipart with readMultipart() so text fields go through the input guard');
});
