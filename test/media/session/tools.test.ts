// Tools at run time over a real call: inline function tools (substitution, headers, messages, async, timeout,
// SSRF refusal), saved function and calculator tools, transfer refusal on a web call, testTool, query; plus the
// lifecycle webhooks (signed for saved agents, unsigned inline) and reconciliation after a media crash.
import test from 'ava';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';
import { sql } from '../../../core/db/pool.ts';
import { createMediaService } from '../../../media/server.ts';
import { createLogger } from '../../../core/logger.ts';
import type { LlmRequest } from '../../../media/services/types.ts';
import { until } from '../../helpers/wait.ts';
import { startReceiver } from '../../helpers/http.ts';

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };
let api: http.Server;
let apiUrl = '';
const hits: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

test.before(async () => {
  api = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const delay = req.url!.startsWith('/slow') ? 3000 : 0;
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true, path: req.url }));
      }, delay);
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
  apiUrl = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  s = await startTestServer({ env: { OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TEMPORAL_TASK_QUEUE: 'media-tools-test' }, media: { engines: book.factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  api?.close();
});

function toolMessages(req: { messages: LlmRequest['messages'] }): Array<{ name: string; content: string }> {
  return req.messages.filter((m) => m.role === 'tool').map((m) => ({ name: (m as { name: string }).name, content: (m as { content: string }).content }));
}

async function talk(config: Record<string, unknown>, contextVariables: Record<string, string> = {}) {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config, contextVariables });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet();
  await caller.speak(400);
  await caller.silence(300);
  return { callId, caller };
}

test('inline function tool: {param} and {{var}} substitution, headers, in-order messages, timeout, SSRF refusal', async (t) => {
  const name = book.add({
    stt: { utterances: ['where is my order'] },
    llm: [
      { toolCalls: [{ name: 'lookup_order', arguments: '{"order_id":"A 1","verbose":true}' }] },
      { toolCalls: [{ name: 'lookup_order', arguments: '{"order_id":"B2"}' }] },
      { toolCalls: [{ name: 'slow_api', arguments: '{}' }, { name: 'metadata', arguments: '{}' }] },
      { text: 'All checked.' },
    ],
  });
  const fn = (n: string, url: string, extra: Record<string, unknown> = {}) => ({
    type: 'function',
    name: n,
    description: n,
    config: { server: { url, method: 'GET', ...extra }, parameters: { type: 'object', properties: { order_id: { type: 'string' } } }, messages: [], messagesOrder: 'random' },
  });
  const lookup = fn('lookup_order', `${apiUrl}/orders/{order_id}?src={{source}}`, { headers: { 'X-Token': 'Bearer {{token}}' } });
  (lookup.config as Record<string, unknown>).messages = ['One moment.', 'Still checking.'];
  (lookup.config as Record<string, unknown>).messagesOrder = 'in-order';
  const config = agentConfig({
    name,
    tools: [lookup, fn('slow_api', `${apiUrl}/slow`, { timeout_ms: 1000 }), fn('metadata', 'http://169.254.169.254/latest/meta-data')],
  });
  const { callId, caller } = await talk(config, { source: 'voice', token: 'abc' });
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'All checked.', 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);

  const orders = hits.filter((h) => h.url.startsWith('/orders/'));
  t.deepEqual(orders.map((h) => h.url), ['/orders/A%201?src=voice&verbose=true', '/orders/B2?src=voice']);
  t.is(orders[0]!.headers['x-token'], 'Bearer abc');
  t.is(orders[0]!.method, 'GET');
  const bot = caller.botTexts();
  t.true(bot.indexOf('One moment.') >= 0 && bot.indexOf('Still checking.') > bot.indexOf('One moment.'), bot.join(' | '));

  const last = book.engines(name).engines.llm.requests[3]!;
  const results = toolMessages(last);
  t.is(results.length, 4);
  t.regex(results[0]!.content, /"path":"\/orders\/A%201/);
  t.regex(results.find((r) => r.name === 'slow_api')!.content, /timed out/);
  t.regex(results.find((r) => r.name === 'metadata')!.content, /refused|not a public/);
  const tools = row.transcript.filter((e: { role: string }) => e.role === 'tool');
  t.deepEqual(
    tools.map((e: { name: string; status: string }) => [e.name, e.status]),
    [
      ['lookup_order', 'success'],
      ['lookup_order', 'success'],
      ['slow_api', 'timeout'],
      ['metadata', 'failed'],
    ],
  );
});

test('async function tool returns at once; saved function tool posts its JSON body; saved calculator evaluates', async (t) => {
  const saved = await s.db.oneFirst(sql.type(z.object({ uuid: z.string() }))`
    INSERT INTO tools (organization_id, name, function_name, description, category, definition)
    VALUES (${org.orgId}, 'Weather', 'weather', 'Weather by city', 'function', ${JSON.stringify({
      schema_version: 1,
      type: 'function',
      config: { method: 'POST', url: `${apiUrl}/weather/{city}`, headers: { 'X-Static': 'yes' }, parameters: [{ name: 'city', type: 'string', description: 'city', required: true }], customMessageType: 'text', customMessages: ['Looking up the weather.'] },
    })}::jsonb) RETURNING uuid::text`);
  const calc = await s.db.oneFirst(sql.type(z.object({ uuid: z.string() }))`
    INSERT INTO tools (organization_id, name, function_name, description, category, definition)
    VALUES (${org.orgId}, 'Calculator', 'calculator', '', 'calculator', ${JSON.stringify({ schema_version: 1, type: 'calculator', config: {} })}::jsonb) RETURNING uuid::text`);
  const name = book.add({
    stt: { utterances: ['weather and math please'] },
    llm: [
      {
        toolCalls: [
          { name: 'notify', arguments: '{"event":"asked"}' },
          { name: 'weather', arguments: '{"city":"Paris","units":"c"}' },
          { name: 'safe_calculator', arguments: '{"expression":"(12.5 * 3) + 7"}' },
        ],
      },
      { text: 'Done.' },
    ],
  });
  const config = agentConfig({
    name,
    tools: [
      { type: 'function', name: 'notify', description: 'fire and forget', config: { server: { url: `${apiUrl}/slow/notify`, method: 'POST' }, parameters: null, async: true } },
      saved,
      calc,
    ],
  });
  const { callId, caller } = await talk(config);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Done.', 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);
  const req = book.engines(name).engines.llm.requests[1]!;
  t.true(book.engines(name).engines.llm.requests[0]!.tools.includes('safe_calculator'));
  const results = toolMessages(req);
  t.regex(results.find((r) => r.name === 'notify')!.content, /sent/);
  t.is(results.find((r) => r.name === 'safe_calculator')!.content, '44.5');
  const weather = hits.find((h) => h.url === '/weather/Paris')!;
  t.truthy(weather);
  t.is(weather.method, 'POST');
  t.deepEqual(JSON.parse(weather.body), { city: 'Paris', units: 'c' });
  t.is(weather.headers['x-static'], 'yes');
  t.true(caller.botTexts().includes('Looking up the weather.'));
  const statuses = Object.fromEntries(row.transcript.filter((e: { role: string }) => e.role === 'tool').map((e: { name: string; status: string }) => [e.name, e.status]));
  t.deepEqual(statuses, { notify: 'completed', weather: 'success', safe_calculator: 'success' });
  // the async request did reach the server (after the tool had returned)
  await until(() => hits.some((h) => h.url === '/slow/notify'), { what: 'async request', timeoutMs: 10_000 });
});

test('transfer on a web call is refused with provider_not_supported and the call goes on; testTool; query before documents are ready', async (t) => {
  const doc = await s.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO documents (organization_id, name, original_name, status, storage_key) VALUES (${org.orgId}, 'faq', 'faq.txt', 'processing', 'x') RETURNING id::text`);
  const name = book.add({
    stt: { utterances: ['transfer me'] },
    llm: [
      { toolCalls: [{ name: 'to_sales', arguments: '{}' }, { name: 'simulate', arguments: '{}' }, { name: 'faq', arguments: '{"query":"opening hours"}' }] },
      { text: 'I cannot transfer you, but I can help.' },
    ],
  });
  const config = agentConfig({
    name,
    tools: [
      { type: 'transferCall', name: 'to_sales', description: 'sales', config: { destination: '+14155550100' } },
      { type: 'testTool', name: 'simulate', description: 'sim', config: { delaySeconds: 0.5, outcome: 'failure', responseText: '', messages: ['Working on it.'] } },
      { type: 'query', name: 'faq', description: 'faq', config: { knowledgeBases: [{ name: 'faq', description: 'faq', documentIds: [doc] }] } },
    ],
  });
  const { callId, caller } = await talk(config);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /but I can help/.test(e.payload!.text), 20_000);
  t.true(caller.isOpen);
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  const results = toolMessages(book.engines(name).engines.llm.requests[1]!);
  t.is(JSON.parse(results.find((r) => r.name === 'to_sales')!.content).error, 'provider_not_supported');
  t.regex(results.find((r) => r.name === 'simulate')!.content, /failed/);
  t.regex(results.find((r) => r.name === 'faq')!.content, /still being processed/);
  t.true(caller.botTexts().includes('Working on it.'));
  const statuses = Object.fromEntries(row.transcript.filter((e: { role: string }) => e.role === 'tool').map((e: { name: string; status: string }) => [e.name, e.status]));
  t.deepEqual(statuses, { to_sales: 'failed', simulate: 'failed', faq: 'failed' });
});

test('call.started and call.ended webhooks: signed for a saved agent with a secret, agent headers, exact body', async (t) => {
  const hook = await startReceiver({ status: 204 });
  const got = hook.events;
  const hookUrl = `${hook.url}/hook`;
  try {
    const name = book.add({});
    const config = agentConfig({ name, webhook: { url: hookUrl, headers: { 'X-Custom': 'c1' } } });
    const agent = await s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
      INSERT INTO agents (organization_id, name, config, webhook_secret) VALUES (${org.orgId}, ${name}, ${JSON.stringify(config)}::jsonb, 'whsec_test')
      RETURNING id, uuid::text`);
    const callId = await insertPendingCall(s.db, { orgId: org.orgId, config, agentId: agent.id, agentUuid: agent.uuid });
    const caller = TestCaller.connect(s.origin, callId, org.apiKey);
    await caller.waitOpen();
    await until(() => got.length >= 1, { what: 'call.started', timeoutMs: 10_000 });
    caller.close();
    await until(() => got.length >= 2, { what: 'call.ended', timeoutMs: 15_000 });
    const [started, ended] = got.map((g) => ({ ...g, body: g.json }));
    t.deepEqual(Object.keys(started!.body).sort(), ['agentId', 'callId', 'event', 'startedAt', 'transport']);
    t.like(started!.body, { event: 'call.started', callId, agentId: agent.uuid, transport: 'websocket' });
    t.like(ended!.body, { event: 'call.ended', callId, agentId: agent.uuid, endedReason: 'user_hangup', connectionStatus: 'completed' });
    t.is(typeof ended!.body.duration, 'number');
    t.regex(ended!.body.endedAt, /^\d{4}-/);
    for (const g of got) {
      t.is(g.headers['x-service-signature'], createHmac('sha256', 'whsec_test').update(g.raw).digest('hex'));
      t.is(g.headers['x-custom'], 'c1');
    }

    // inline agent: unsigned
    got.length = 0;
    const name2 = book.add({});
    const callId2 = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: name2, webhook: { url: hookUrl, headers: {} } }) });
    const c2 = TestCaller.connect(s.origin, callId2, org.apiKey);
    await c2.waitOpen();
    await until(() => got.length >= 1, { what: 'call.started (inline)', timeoutMs: 10_000 });
    c2.close();
    await until(() => got.length >= 2, { what: 'call.ended (inline)', timeoutMs: 15_000 });
    t.is(got[0]!.json.agentId, null);
    t.false('x-service-signature' in got[1]!.headers);
  } finally {
    await hook.close();
  }
});

test('a call left active by a crashed media process is reconciled to pipeline_error by a live one', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig() });
  await s.db.query(sql.type(z.object({}))`
    UPDATE calls SET status = 'active', started_at = now() - interval '30 seconds', connection_status = 'completed', media_node = 'ghost:1:dead'
    WHERE id = ${callId}`);
  const other = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig() });
  await s.db.query(sql.type(z.object({}))`
    INSERT INTO media_nodes (node_id, heartbeat_at) VALUES ('alive:2:node', now()) ON CONFLICT DO NOTHING`);
  await s.db.query(sql.type(z.object({}))`
    UPDATE calls SET status = 'active', started_at = now(), connection_status = 'completed', media_node = 'alive:2:node' WHERE id = ${other}`);
  // a node is dead after MEDIA_NODE_DEAD_AFTER_S; reconciliation waits until the database has been up that long (a
  // restarted database has not seen the nodes' heartbeats yet); 10 s rather than the default 45 s, so that a file
  // that runs soon after the suite's PostgreSQL started waits only a little
  const deadAfterS = 10;
  const upS = async () => Number((await s.db.one(sql.type(z.object({ s: z.coerce.number() }))`SELECT extract(epoch FROM now() - pg_postmaster_start_time()) AS s`)).s);
  const wait = deadAfterS + 1 - (await upS());
  if (wait > 0) await new Promise((r) => setTimeout(r, wait * 1000));
  await s.db.query(sql.type(z.object({}))`UPDATE media_nodes SET heartbeat_at = now() WHERE node_id = 'alive:2:node'`);
  // a freshly started media process reconciles at start
  const media = createMediaService({ config: { ...s.config, MEDIA_NODE_DEAD_AFTER_S: deadAfterS }, db: s.db, logger: createLogger({ level: 'silent' }), storage: s.storage, temporal: null });
  try {
    const row = await until(async () => {
      const r = await getCallRow(s.db, callId);
      return r.status === 'error' ? r : null;
    }, { what: 'reconcile', timeoutMs: 10_000 });
    t.is(row.ended_reason, 'pipeline_error');
    t.is(row.connection_status, 'completed');
    t.true(row.duration_seconds! >= 29);
    // the call on a live node is untouched
    t.is((await getCallRow(s.db, other)).status, 'active');
  } finally {
    await media.close();
  }
});
