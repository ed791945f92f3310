// Stored credentials: the /credentials API (create/list/get/patch/delete, masking, 409s, foreign 404, 422s), the
// credential_uuid check on saved tools, and a real call whose saved HTTP tools send each credential type's header
// to a loopback receiver — with every API response and every log line (captured at trace level) checked for the
// secrets.
import test from 'ava';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { sql } from '../../core/db/pool.ts';
import { REDACT_PATHS } from '../../core/logger.ts';
import { credentialHeaders, withHeaders } from '../../media/tools/http-auth.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/http.ts';
import { ScenarioBook } from '../media/session/scenarios.ts';

const SECRETS = {
  token: 'tok-SECRET-bearer-9f8e7d6c5b4a',
  apiKey: 'key-SECRET-apikey-1a2b3c4d5e6f',
  password: 'pw-SECRET-basic-0011223344',
  headerValue: 'val-SECRET-custom-aabbccddeeff',
  rotated: 'tok-SECRET-rotated-77665544',
};
const BASIC = Buffer.from(`svc-user:${SECRETS.password}`).toString('base64');
const allSecrets = () => [...Object.values(SECRETS), BASIC];

const book = new ScenarioBook();
const logLines: string[] = [];
const responses: string[] = [];
let s: TestServer;
let org: { orgId: string; apiKey: string };
let other: { orgId: string; apiKey: string };
let receiver: Receiver;

test.before(async () => {
  receiver = await startReceiver(); // the HTTP tools' endpoint
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  const logger = pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
  s = await startTestServer({ temporal: false, logger, env: { OUTBOUND_ALLOW_HOSTS: '127.0.0.1', LOG_LEVEL: 'trace' }, media: { engines: book.factory } });
  org = await s.createOrg({ ratePerMinute: 1_000_000 });
  other = await s.createOrg({ ratePerMinute: 1_000_000 });
});
test.after.always(async () => {
  await s?.close();
  await receiver?.close();
});

/** Every API answer is kept: none may carry a secret. */
async function call(method: string, path: string, body?: unknown, key = org.apiKey) {
  const r = await s.request(method, path, { key, body });
  responses.push(JSON.stringify(r.body ?? ''));
  return r;
}

const bearer = (name = 'crm bearer') => ({ name, type: 'bearer_token', token: SECRETS.token });

test.serial('create each type → 201 with non-secret fields in clear and secrets masked; stored sealed', async (t) => {
  const made = [
    await call('POST', '/credentials', bearer('types bearer')),
    await call('POST', '/credentials', { name: 'types key', type: 'api_key', header_name: 'X-Api-Key', api_key: SECRETS.apiKey, ignored: 1 }),
    await call('POST', '/credentials', { name: 'types basic', type: 'basic_auth', username: 'svc-user', password: SECRETS.password }),
    await call('POST', '/credentials', { name: 'types custom', type: 'custom_header', header_name: 'X-Tenant-Secret', header_value: SECRETS.headerValue }),
  ];
  for (const r of made) t.is(r.status, 201, JSON.stringify(r.body));
  const [b, k, basic, custom] = made.map((r) => r.body);
  t.regex(b.credential_uuid, /^[0-9a-f-]{36}$/);
  t.deepEqual(Object.keys(b).sort(), ['created_at', 'credential_uuid', 'credentials_state', 'name', 'token', 'type', 'updated_at']);
  t.is(b.token, `••••${SECRETS.token.slice(-4)}`);
  t.is(k.header_name, 'X-Api-Key');
  t.is(k.api_key, `••••${SECRETS.apiKey.slice(-4)}`);
  t.false('ignored' in k);
  t.is(basic.username, 'svc-user');
  t.is(basic.password, `••••${SECRETS.password.slice(-4)}`);
  t.is(custom.header_name, 'X-Tenant-Secret');
  t.is(custom.header_value, `••••${SECRETS.headerValue.slice(-4)}`);
  const got = await call('GET', `/credentials/${b.credential_uuid.toUpperCase()}`);
  t.deepEqual(got.body, b);
  // at rest: no plaintext in the row
  const blobs = await s.db.anyFirst(sql.unsafe`SELECT encode(secret, 'escape') FROM credentials WHERE organization_id = ${org.orgId}`);
  for (const blob of blobs) for (const secret of allSecrets()) t.false(String(blob).includes(secret));
});

test.serial('list envelope and 422 rules; validation 422s; duplicate 409; foreign and malformed ids 404', async (t) => {
  const list = await call('GET', '/credentials?per_page=2');
  t.is(list.status, 200);
  t.is(list.body.total, 4);
  t.is(list.body.items.length, 2);
  t.is(list.body.perPage, 2);
  t.is(list.body.totalPages, 2);
  t.is((await call('GET', '/credentials?per_page=0')).status, 422);
  t.is((await call('GET', '/credentials?page=x')).status, 422);
  t.is((await call('GET', '/credentials', undefined, other.apiKey)).body.total, 0);

  const missing = await call('POST', '/credentials', { name: 'x', type: 'bearer_token' });
  t.is(missing.status, 422);
  t.deepEqual(missing.body.detail.map((d: { loc: unknown[] }) => d.loc), [['body', 'token']]);
  t.is((await call('POST', '/credentials', { name: 'x', type: 'oauth', token: 'a' })).status, 422);
  t.is((await call('POST', '/credentials', { name: 'x', type: 'api_key', header_name: 'bad header', api_key: 'a' })).status, 422);
  t.is((await call('POST', '/credentials', { name: 'x', type: 'custom_header', header_name: 'Host', header_value: 'a' })).status, 422);
  t.is((await call('POST', '/credentials', { name: 'x', type: 'custom_header', header_name: 'X-A', header_value: 'a\r\nX-Evil: 1' })).status, 422);
  t.is((await call('POST', '/credentials', { name: 'x', type: 'basic_auth', username: 'a:b', password: 'p' })).status, 422);
  t.is((await call('POST', '/credentials', { name: '', type: 'bearer_token', token: 'a' })).status, 422);
  // a 422 echoes inputs, but never a secret: neither a refused one nor one inside an echoed body
  const refusedSecret = await call('POST', '/credentials', { name: 'x', type: 'custom_header', header_name: 'X-A', header_value: `${SECRETS.headerValue}\n` });
  t.is(refusedSecret.status, 422);
  t.is(refusedSecret.body.detail[0].input, '[redacted]');
  const badType = await call('POST', '/credentials', { name: 'x', type: 'oauth2', token: SECRETS.token, password: SECRETS.password });
  t.is(badType.status, 422);
  t.false(JSON.stringify(badType.body).includes(SECRETS.token));

  const dup = await call('POST', '/credentials', bearer('types bearer'));
  t.is(dup.status, 409);
  t.is(dup.body.detail, "A credential named 'types bearer' already exists in this organization.");
  // the same name in another organization is fine
  t.is((await call('POST', '/credentials', bearer('types bearer'), other.apiKey)).status, 201);

  const mine = list.body.items[0].credential_uuid as string;
  for (const [method, body] of [['GET', undefined], ['PATCH', { name: 'stolen' }], ['DELETE', undefined]] as const) {
    const r = await call(method, `/credentials/${mine}`, body, other.apiKey);
    t.is(r.status, 404, method);
    t.is(r.body.detail, 'Credential not found');
  }
  t.is((await call('GET', '/credentials/not-a-uuid')).body.detail, 'Credential not found');
  t.is((await call('GET', '/credentials/00000000-0000-4000-8000-000000000000')).status, 404);
  t.is((await call('GET', `/credentials/${mine}`)).status, 200);
});

test.serial('PATCH: rename, replace a secret (never readable), change type needs the new fields, name clash 409', async (t) => {
  const c = (await call('POST', '/credentials', bearer('patch me'))).body;
  const renamed = await call('PATCH', `/credentials/${c.credential_uuid}`, { name: 'patched' });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, 'patched');
  t.is(renamed.body.token, c.token, 'the secret is kept when not sent');
  const rotated = await call('PATCH', `/credentials/${c.credential_uuid}`, { token: SECRETS.rotated });
  t.is(rotated.body.token, `••••${SECRETS.rotated.slice(-4)}`);
  const retype = await call('PATCH', `/credentials/${c.credential_uuid}`, { type: 'api_key' });
  t.is(retype.status, 422);
  t.deepEqual(retype.body.detail.map((d: { loc: unknown[] }) => d.loc).sort(), [['body', 'api_key'], ['body', 'header_name']]);
  const badSecret = await call('PATCH', `/credentials/${c.credential_uuid}`, { token: '' });
  t.is(badSecret.status, 422);
  const clash = await call('PATCH', `/credentials/${c.credential_uuid}`, { name: 'types key' });
  t.is(clash.status, 409);
  const still = await call('GET', `/credentials/${c.credential_uuid}`);
  t.is(still.body.name, 'patched');
  t.is(still.body.type, 'bearer_token');
  const asKey = await call('PATCH', `/credentials/${c.credential_uuid}`, { type: 'api_key', header_name: 'X-Key', api_key: SECRETS.apiKey });
  t.is(asKey.status, 200);
  t.deepEqual([asKey.body.type, asKey.body.header_name, 'token' in asKey.body], ['api_key', 'X-Key', false]);
  t.is((await call('DELETE', `/credentials/${c.credential_uuid}`)).status, 204);
  t.is((await call('GET', `/credentials/${c.credential_uuid}`)).status, 404);
});

const fnTool = (name: string, credential_uuid: string | undefined, headers: Record<string, string> = {}) => ({
  name,
  definition: { type: 'function', config: { method: 'POST', url: `${receiver.url}/hook/${name}`, headers, ...(credential_uuid === undefined ? {} : { credential_uuid }) } },
});

test.serial('saved tools: unknown, foreign or malformed credential_uuid → 400 on create and update; delete while used → 409 naming the tool', async (t) => {
  const mine = (await call('POST', '/credentials', bearer('tool check'))).body.credential_uuid as string;
  const foreign = (await call('POST', '/credentials', bearer('tool check'), other.apiKey)).body.credential_uuid as string;
  for (const ref of [foreign, '00000000-0000-4000-8000-000000000000', 'junk']) {
    const r = await call('POST', '/tools', fnTool('nope', ref));
    t.is(r.status, 400, ref);
    t.regex(r.body.detail, /^Credential '.*' not found/);
  }
  const tool = await call('POST', '/tools', fnTool('Uses Cred', mine.toUpperCase()));
  t.is(tool.status, 200, JSON.stringify(tool.body));
  t.is(tool.body.definition.config.credential_uuid, mine);
  const put = await call('PUT', `/tools/${tool.body.tool_uuid}`, fnTool('Uses Cred', foreign));
  t.is(put.status, 400);
  t.is((await call('GET', `/tools/${tool.body.tool_uuid}`)).body.definition.config.credential_uuid, mine);

  const del = await call('DELETE', `/credentials/${mine}`);
  t.is(del.status, 409);
  t.true(del.body.detail.includes(`'Uses Cred' (${tool.body.tool_uuid})`), del.body.detail);
  // archived tools still run in calls that reference them: still in use
  await call('DELETE', `/tools/${tool.body.tool_uuid}`);
  const archived = await call('DELETE', `/credentials/${mine}`);
  t.is(archived.status, 409);
  t.regex(archived.body.detail, /archived/);
  // the other organization's tools cannot use it, nor do they hold it
  t.is((await call('PUT', `/tools/${tool.body.tool_uuid}`, fnTool('Uses Cred', undefined))).status, 200);
  t.is((await call('DELETE', `/credentials/${mine}`)).status, 204);
});

test('credential headers by type; a credential header replaces a static one of the same name', (t) => {
  t.deepEqual(credentialHeaders({ type: 'bearer_token', token: 't' }), { Authorization: 'Bearer t' });
  t.deepEqual(credentialHeaders({ type: 'api_key', header_name: 'X-K', api_key: 'k' }), { 'X-K': 'k' });
  t.deepEqual(credentialHeaders({ type: 'basic_auth', username: 'Aladdin', password: 'open sesame' }), { Authorization: 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==' });
  t.deepEqual(credentialHeaders({ type: 'custom_header', header_name: 'X-C', header_value: 'v' }), { 'X-C': 'v' });
  t.deepEqual(withHeaders({ authorization: 'old', 'X-Other': '1' }, { Authorization: 'new' }), { 'X-Other': '1', Authorization: 'new' });
});

test.serial('a call: each saved HTTP tool sends its credential header to the receiver; secrets appear in no response or log line', async (t) => {
  const creds = {
    bearer: (await call('POST', '/credentials', bearer('call bearer'))).body.credential_uuid as string,
    key: (await call('POST', '/credentials', { name: 'call key', type: 'api_key', header_name: 'X-Api-Key', api_key: SECRETS.apiKey })).body.credential_uuid as string,
    basic: (await call('POST', '/credentials', { name: 'call basic', type: 'basic_auth', username: 'svc-user', password: SECRETS.password })).body.credential_uuid as string,
    custom: (await call('POST', '/credentials', { name: 'call custom', type: 'custom_header', header_name: 'X-Tenant-Secret', header_value: SECRETS.headerValue })).body.credential_uuid as string,
  };
  const tools = {
    bearer: (await call('POST', '/tools', fnTool('t_bearer', creds.bearer, { Authorization: 'Bearer static-should-be-replaced', 'X-Static': 'kept' }))).body.tool_uuid as string,
    key: (await call('POST', '/tools', fnTool('t_key', creds.key))).body.tool_uuid as string,
    basic: (await call('POST', '/tools', fnTool('t_basic', creds.basic))).body.tool_uuid as string,
    custom: (await call('POST', '/tools', fnTool('t_custom', creds.custom))).body.tool_uuid as string,
    plain: (await call('POST', '/tools', fnTool('t_plain', undefined))).body.tool_uuid as string,
  };
  const name = book.add({
    stt: { utterances: ['check everything'] },
    llm: [
      { toolCalls: ['t_bearer', 't_key', 't_basic', 't_custom', 't_plain'].map((n) => ({ name: n, arguments: '{}' })) },
      { text: 'All called.' },
    ],
  });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name, tools: Object.values(tools) }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet();
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'All called.', 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);

  const hit = (n: string) => receiver.events.find((h) => h.url === `/hook/${n}`)!.headers;
  t.is(hit('t_bearer').authorization, `Bearer ${SECRETS.token}`);
  t.is(hit('t_bearer')['x-static'], 'kept');
  t.is(hit('t_key')['x-api-key'], SECRETS.apiKey);
  t.is(hit('t_basic').authorization, `Basic ${BASIC}`);
  t.is(hit('t_custom')['x-tenant-secret'], SECRETS.headerValue);
  t.is(hit('t_plain').authorization, undefined);
  const statuses = row.transcript.filter((e: { role: string }) => e.role === 'tool').map((e: { status: string }) => e.status);
  t.deepEqual(statuses, ['success', 'success', 'success', 'success', 'success']);

  // the secret rotates: the next call of the tool sends the new one
  await call('PATCH', `/credentials/${creds.bearer}`, { token: SECRETS.rotated });
  const name2 = book.add({ stt: { utterances: ['again'] }, llm: [{ toolCalls: [{ name: 't_bearer', arguments: '{}' }] }, { text: 'Again.' }] });
  const call2 = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: name2, tools: [tools.bearer] }) });
  const c2 = TestCaller.connect(s.origin, call2, org.apiKey);
  await c2.waitOpen();
  await c2.waitAgentQuiet();
  await c2.speak(400);
  await c2.silence(300);
  await c2.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Again.', 20_000);
  c2.close();
  await endedRow(s.db, call2);
  t.is(receiver.events.filter((h) => h.url === '/hook/t_bearer').at(-1)!.headers.authorization, `Bearer ${SECRETS.rotated}`);

  // every API response so far, the call's detail, and every log line: no secret
  responses.push(JSON.stringify((await call('GET', `/calls/${callId}`)).body));
  responses.push(JSON.stringify((await call('GET', '/credentials?per_page=100')).body));
  t.true(logLines.length > 50, `captured ${logLines.length} log lines`);
  t.true(logLines.some((l) => l.includes(callId)), 'the call was logged');
  for (const secret of allSecrets()) {
    t.false(responses.some((r) => r.includes(secret)), `secret in a response: ${secret}`);
    t.false(logLines.some((l) => l.includes(secret)), `secret in a log line: ${secret}`);
  }
});

test('OpenAPI documents the store: paths, the four body types, and every field a response carries', async (t) => {
  const doc = await (await fetch(`${s.baseUrl}/openapi.json`)).json() as { paths: Record<string, any> };
  t.truthy(doc.paths['/credentials']?.post && doc.paths['/credentials']?.get);
  const one = doc.paths['/credentials/{credential_uuid}'];
  t.truthy(one?.get && one?.patch && one?.delete);
  t.deepEqual(Object.keys(one.delete.responses).sort(), ['204', '404', '409']);
  const body = doc.paths['/credentials'].post.requestBody.content['application/json'].schema;
  const variants = (body.oneOf ?? body.anyOf) as Array<{ properties: { type: { const: string } } }>;
  t.deepEqual(variants.map((v) => v.properties.type.const).sort(), ['api_key', 'basic_auth', 'bearer_token', 'custom_header']);
  const documented = Object.keys(doc.paths['/credentials'].post.responses['201'].content['application/json'].schema.properties);
  const made = await call('POST', '/credentials', { name: 'openapi basic', type: 'basic_auth', username: 'u', password: 'p-123456789' });
  for (const k of Object.keys(made.body)) t.true(documented.includes(k), k);
});
