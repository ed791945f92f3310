// Saved tools API: create/list/get/put/delete/unarchive, definition configs, category rules, function names,
// and the spec's 400/404/422 strings.
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { createApiKey } from '../../core/orgs.ts';
import { functionNameFor, loadSavedTools } from '../../core/agent-config/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { chirp, wavFile } from '../recordings/audio-files.ts';
import { uploadRecording } from '../recordings/helpers.ts';

let s: TestServer;
let key: string;
let orgId: string;
let otherKey: string;
let documentId: string;

type Body = Record<string, any>;
const fnTool = (over: Body = {}, config: Body = {}): Body => ({ name: 'Get Weather', definition: { type: 'function', config: { method: 'GET', url: 'https://api.example.com/w/{city}', ...config } }, ...over });

test.before(async () => {
  s = await startTestServer({ temporal: false, env: { OUTBOUND_BLOCK_HOSTS: 'blocked.example.com' } });
  const a = await s.createOrg({ ratePerMinute: 1_000_000 });
  key = a.apiKey;
  orgId = a.orgId;
  otherKey = (await s.createOrg({ ratePerMinute: 1_000_000 })).apiKey;
  documentId = await s.db.oneFirst(sql.unsafe`
    INSERT INTO documents (organization_id, name, original_name, storage_key, status)
    VALUES (${orgId}, 'kb.txt', 'kb.txt', 'documents/kb.txt', 'completed') RETURNING id::text`) as string;
});
test.after.always(async () => {
  await s?.close();
});

const post = (body: unknown, k = key) => s.request('POST', '/tools', { key: k, body });

test('function-name rule', (t) => {
  t.is(functionNameFor('Get Weather!'), 'get_weather_');
  t.is(functionNameFor('CRM -- Lookup'), 'crm_lookup');
  t.is(functionNameFor('already_ok'), 'already_ok');
  t.regex(functionNameFor('!!!'), /^tool_[0-9a-f]{6}$/);
  t.regex(functionNameFor('संपर्क'), /^tool_[0-9a-f]{6}$/);
  const long = functionNameFor('x'.repeat(80));
  t.is(long.length, 64);
  t.regex(long, /^x{57}_[0-9a-f]{6}$/);
  t.not(functionNameFor('!!!'), functionNameFor('!!!'));
  t.is(functionNameFor('y'.repeat(64)), 'y'.repeat(64));
});

test('POST /tools → 200 tool with tool_uuid and defaults', async (t) => {
  const r = await post(fnTool());
  t.is(r.status, 200, JSON.stringify(r.body));
  t.regex(r.body.tool_uuid, /^[0-9a-f-]{36}$/);
  t.is(r.body.name, 'Get Weather');
  t.is(r.body.function_name, 'get_weather');
  t.is(r.body.category, 'function');
  t.is(r.body.icon, 'globe');
  t.is(r.body.icon_color, '#3B82F6');
  t.is(r.body.description, '');
  t.is(r.body.status, 'active');
  t.deepEqual(r.body.definition, {
    schema_version: 1,
    type: 'function',
    config: { method: 'GET', url: 'https://api.example.com/w/{city}', headers: {}, parameters: [], timeout_ms: 5000, customMessages: [], customMessagesOrder: 'random', customMessageType: 'none' },
  });
  const got = await s.request('GET', `/tools/${r.body.tool_uuid}`, { key });
  t.deepEqual(got.body, r.body);
  const loaded = await loadSavedTools(s.db, orgId, [r.body.tool_uuid.toUpperCase(), '00000000-0000-4000-8000-000000000000', 'junk']);
  t.is(loaded.length, 1);
  t.is(loaded[0]!.functionName, 'get_weather');
  t.deepEqual(loaded[0]!.definition, r.body.definition);
  t.deepEqual(await loadSavedTools(s.db, '00000000-0000-4000-8000-000000000000', [r.body.tool_uuid]), []);
});

test('unknown fields are ignored on tool bodies', async (t) => {
  const r = await post({ ...fnTool({ name: 'ign' }), whatever: 1 });
  t.is(r.status, 200);
  t.false('whatever' in r.body);
});

test('each definition type with its config rules and defaults', async (t) => {
  const end = await post({ name: 'Bye', category: 'endCall', definition: { type: 'endCall', config: { messageType: 'custom', customMessage: 'Take care', audioRecordingId: 'dropped' } } });
  t.is(end.status, 200, JSON.stringify(end.body));
  t.deepEqual(end.body.definition.config, { messageType: 'custom', customMessage: 'Take care' });
  const endDefault = await post({ name: 'Bye2', definition: { type: 'endCall' } });
  t.is(endDefault.status, 200);
  t.is(endDefault.body.category, 'endCall');
  t.deepEqual(endDefault.body.definition.config, { messageType: 'none' });
  const xfer = await post({ name: 'Transfer', category: 'transferCall', definition: { type: 'transferCall', config: { destination: 'SIP/100' } } });
  t.deepEqual(xfer.body.definition.config, { destination: 'SIP/100', messageType: 'none', timeout: 30, recordTransfer: true });
  const calc = await post({ name: 'Calc', category: 'calculator', definition: { type: 'calculator' } });
  t.is(calc.status, 200);
  t.deepEqual(calc.body.definition, { schema_version: 1, type: 'calculator', config: {} });
  const q = await post({ name: 'KB', category: 'query', definition: { type: 'query', config: { groups: [{ name: 'FAQ', description: 'answers', documentIds: [documentId] }], messagesOrder: 'in-order' } } });
  t.is(q.status, 200, JSON.stringify(q.body));
  t.deepEqual(q.body.definition.config, { groups: [{ name: 'FAQ', description: 'answers', documentIds: [documentId] }], messages: [], messagesOrder: 'in-order', timeout: 5 });
  // only the selected custom-message mode's payload is stored
  const text = await post(fnTool({ name: 'msg' }, { customMessageType: 'text', customMessages: ['One moment', ''], customMessageRecordingId: 'rec-1' }));
  t.deepEqual([text.body.definition.config.customMessages, text.body.definition.config.customMessageRecordingId], [['One moment'], undefined]);
  const rec = await uploadRecording(s, key, 'wait.wav', wavFile(chirp(0.2, 24_000), 24_000));
  const audio = await post(fnTool({ name: 'aud' }, { customMessageType: 'audio', customMessages: ['x'], customMessageRecordingId: rec.recording_id }));
  t.deepEqual([audio.body.definition.config.customMessages, audio.body.definition.config.customMessageRecordingId], [[], rec.recording_id]);
});

test('create accepts placeholder-empty definitions', async (t) => {
  for (const definition of [
    { type: 'function', config: { method: 'POST', url: '' } },
    { type: 'transferCall', config: { destination: '' } },
    { type: 'query', config: { groups: [] } },
  ]) {
    const r = await post({ name: `blank ${definition.type}`, definition });
    t.is(r.status, 200, JSON.stringify(r.body));
  }
});

const expect422 = async (t: any, body: unknown, loc: (string | number)[]) => {
  const r = await post(body);
  t.is(r.status, 422, JSON.stringify(r.body));
  t.true(Array.isArray(r.body.detail));
  const hit = r.body.detail.find((d: Body) => JSON.stringify(d.loc) === JSON.stringify(loc));
  t.truthy(hit, `${JSON.stringify(loc)} in ${JSON.stringify(r.body.detail)}`);
  if (hit) t.deepEqual(Object.keys(hit).filter((k) => k !== 'ctx').sort(), ['input', 'loc', 'msg', 'type']);
};

test('422 arrays for definition failures with exact locs', async (t) => {
  await expect422(t, { name: 'x', definition: { type: 'webhook', config: {} } }, ['body', 'definition', 'type']);
  await expect422(t, { name: 'x' }, ['body', 'definition']);
  await expect422(t, { definition: { type: 'calculator' } }, ['body', 'name']);
  await expect422(t, { name: 'x', definition: { type: 'function', config: { url: 'https://a.example.com' } } }, ['body', 'definition', 'config', 'method']);
  await expect422(t, fnTool({}, { url: 'ftp://a.example.com' }), ['body', 'definition', 'config', 'url']);
  await expect422(t, fnTool({}, { url: 'http://127.0.0.1/' }), ['body', 'definition', 'config', 'url']);
  await expect422(t, fnTool({}, { url: 'https://x.blocked.example.com/' }), ['body', 'definition', 'config', 'url']);
  await expect422(t, fnTool({}, { timeout_ms: 30001 }), ['body', 'definition', 'config', 'timeout_ms']);
  await expect422(t, fnTool({}, { customMessages: ['1', '2', '3', '4', '5', '6'] }), ['body', 'definition', 'config', 'customMessages']);
  await expect422(t, fnTool({}, { customMessageType: 'text' }), ['body', 'definition', 'config', 'customMessages']);
  await expect422(t, fnTool({}, { customMessageType: 'audio' }), ['body', 'definition', 'config', 'customMessageRecordingId']);
  await expect422(t, fnTool({}, { parameters: [{ name: 'city', type: 'date' }] }), ['body', 'definition', 'config', 'parameters', 0, 'type']);
  await expect422(t, { name: 'x', category: 'endCall', definition: { type: 'endCall', config: { messageType: 'custom' } } }, ['body', 'definition', 'config', 'customMessage']);
  await expect422(t, { name: 'x', category: 'transferCall', definition: { type: 'transferCall', config: { destination: 'nowhere' } } }, ['body', 'definition', 'config', 'destination']);
  await expect422(t, { name: 'x', category: 'transferCall', definition: { type: 'transferCall', config: { destination: '+14155550100', timeout: 121 } } }, ['body', 'definition', 'config', 'timeout']);
  await expect422(t, { name: 'x', category: 'query', definition: { type: 'query', config: { groups: [{ name: 'g', description: 'd', documentIds: [] }] } } }, ['body', 'definition', 'config', 'groups', 0, 'documentIds']);
  await expect422(t, { name: 'x', category: 'query', definition: { type: 'query', config: { groups: [{ name: 'g', description: 'd', documentIds: ['00000000-0000-4000-8000-00000000000a'] }] } } }, ['body', 'definition', 'config', 'groups', 0, 'documentIds', 0]);
  await expect422(t, { name: 'x', definition: { type: 'calculator', schema_version: 2 } }, ['body', 'definition', 'schema_version']);
  await expect422(t, fnTool({ icon: 'i'.repeat(51) }), ['body', 'icon']);
  await expect422(t, fnTool({ icon_color: 'blue' }), ['body', 'icon_color']);
  await expect422(t, fnTool({ name: 'n'.repeat(256) }), ['body', 'name']);
});

test('category rules: invalid, reserved, mismatch → 400 strings', async (t) => {
  const invalid = await post(fnTool({ category: 'webhook' }));
  t.is(invalid.status, 400);
  t.is(invalid.body.detail, "Invalid category 'webhook'. Must be one of: function, endCall, transferCall, calculator, query");
  for (const reserved of ['native', 'integration']) {
    const r = await post(fnTool({ category: reserved }));
    t.is(r.status, 400);
    t.regex(r.body.detail, new RegExp(`^Invalid category '${reserved}'.*reserved`));
  }
  const mismatch = await post(fnTool({ category: 'query' }));
  t.is(mismatch.status, 400);
  t.is(mismatch.body.detail, "Category 'query' does not match definition type 'function'");
});

test('no organization → 400 No organization selected for the user', async (t) => {
  const { key: orgless } = await createApiKey(s.db, null, 'orgless-tools');
  for (const [m, p] of [['POST', '/tools'], ['GET', '/tools'], ['DELETE', '/tools/00000000-0000-4000-8000-000000000000']] as const) {
    const r = await s.request(m, p, { key: orgless, body: m === 'POST' ? fnTool() : undefined });
    t.is(r.status, 400);
    t.deepEqual(r.body, { detail: 'No organization selected for the user' });
  }
});

test('DELETE archives (200 {status, tool_uuid}); unarchive restores; 404 Tool not found across organizations', async (t) => {
  const c = await post(fnTool({ name: 'arch' }));
  const uuid = c.body.tool_uuid;
  for (const [m, p] of [['GET', `/tools/${uuid}`], ['DELETE', `/tools/${uuid}`], ['PUT', `/tools/${uuid}`], ['POST', `/tools/${uuid}/unarchive`], ['GET', '/tools/not-a-uuid']] as const) {
    const r = await s.request(m, p, { key: otherKey, body: m === 'PUT' ? { name: 'x' } : undefined });
    t.is(r.status, 404, `${m} ${p}`);
    t.deepEqual(r.body, { detail: 'Tool not found' });
  }
  const del = await s.request('DELETE', `/tools/${uuid}`, { key });
  t.deepEqual([del.status, del.body], [200, { status: 'archived', tool_uuid: uuid }]);
  t.is((await s.request('GET', `/tools/${uuid}`, { key })).body.status, 'archived');
  // archived tools are not listed by default and cannot be referenced by agents
  const list = await s.request('GET', '/tools?per_page=100', { key });
  t.false(list.body.items.some((x: Body) => x.tool_uuid === uuid));
  const archivedList = await s.request('GET', '/tools?status=archived', { key });
  t.true(archivedList.body.items.some((x: Body) => x.tool_uuid === uuid));
  const agent = await s.request('POST', '/agents', { key, body: { name: 'A', llm: { provider: 'openai', model: null }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' }, tools: [uuid] } });
  t.is(agent.status, 400);
  t.deepEqual(agent.body.detail.details[0].loc, ['tools', 0]);
  const un = await s.request('POST', `/tools/${uuid}/unarchive`, { key });
  t.is(un.status, 200);
  t.is(un.body.status, 'active');
  const again = await s.request('POST', '/agents', { key, body: { name: 'A', llm: { provider: 'openai', model: null }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' }, tools: [uuid] } });
  t.is(again.status, 201);
});

test('GET /tools: paginated, filters category and status', async (t) => {
  const org = await s.createOrg({ ratePerMinute: 1_000_000 });
  const mk = (body: Body) => s.request('POST', '/tools', { key: org.apiKey, body });
  await mk(fnTool({ name: 'f1' }));
  await mk(fnTool({ name: 'f2' }));
  await mk({ name: 'c', definition: { type: 'calculator' } });
  const gone = await mk({ name: 'e', definition: { type: 'endCall' } });
  await s.request('DELETE', `/tools/${gone.body.tool_uuid}`, { key: org.apiKey });
  const all = await s.request('GET', '/tools?per_page=2', { key: org.apiKey });
  t.deepEqual({ ...all.body, items: all.body.items.map((x: Body) => x.name) }, { items: ['c', 'f2'], total: 3, page: 1, perPage: 2, totalPages: 2 });
  const fns = await s.request('GET', '/tools?category=function', { key: org.apiKey });
  t.deepEqual(fns.body.items.map((x: Body) => x.name), ['f2', 'f1']);
  const arch = await s.request('GET', '/tools?status=archived', { key: org.apiKey });
  t.deepEqual(arch.body.items.map((x: Body) => x.name), ['e']);
  const both = await s.request('GET', '/tools?status=all&category=endCall', { key: org.apiKey });
  t.is(both.body.total, 1);
  const bad = await s.request('GET', '/tools?category=webhook', { key: org.apiKey });
  t.is(bad.status, 422);
  t.deepEqual(bad.body.detail[0].loc, ['query', 'category']);
});

test('PUT /tools: updates, refuses incomplete definitions (400) and category changes', async (t) => {
  const blank = await post({ name: 'Blank fn', definition: { type: 'function', config: { method: 'POST', url: '' } } });
  const uuid = blank.body.tool_uuid;
  const put = (body: unknown) => s.request('PUT', `/tools/${uuid}`, { key, body });
  const incomplete = await put({ definition: { type: 'function', config: { method: 'POST', url: '' } } });
  t.is(incomplete.status, 400);
  t.is(incomplete.body.detail, 'Incomplete tool definition: a function tool needs a url');
  const ok = await put({ name: 'Renamed Tool', description: 'desc', icon_color: '#000000', definition: { type: 'function', config: { method: 'POST', url: 'https://api.example.com/r' } } });
  t.is(ok.status, 200, JSON.stringify(ok.body));
  t.is(ok.body.function_name, 'renamed_tool');
  t.is(ok.body.definition.config.url, 'https://api.example.com/r');
  t.is(ok.body.description, 'desc');
  t.is(ok.body.icon_color, '#000000');
  const partial = await put({ description: 'only this' });
  t.is(partial.body.definition.config.url, 'https://api.example.com/r');
  t.is(partial.body.name, 'Renamed Tool');
  const cat = await put({ category: 'query' });
  t.is(cat.status, 400);
  t.regex(cat.body.detail, /category cannot be changed/);
  const type = await put({ definition: { type: 'calculator' } });
  t.is(type.status, 400);
  t.regex(type.body.detail, /does not match the tool category 'function'/);
  const schema = await put({ definition: { type: 'function', config: { method: 'GET', url: 'https://a.example.com', timeout_ms: 1 } } });
  t.is(schema.status, 422);
  t.deepEqual(schema.body.detail[0].loc, ['body', 'definition', 'config', 'timeout_ms']);
  for (const [definition, msg] of [
    [{ type: 'transferCall', config: { destination: '' } }, 'Incomplete tool definition: a transferCall tool needs a destination'],
    [{ type: 'query', config: { groups: [] } }, 'Incomplete tool definition: a query tool needs at least one group'],
  ] as const) {
    const created = await post({ name: `blank ${definition.type}`, definition });
    const r = await s.request('PUT', `/tools/${created.body.tool_uuid}`, { key, body: { definition } });
    t.deepEqual([r.status, r.body.detail], [400, msg]);
  }
});

test('saved tool function names collide with inline names in an agent', async (t) => {
  const tool = await post(fnTool({ name: 'Book-Table' }));
  const r = await s.request('POST', '/agents', { key, body: { name: 'A', llm: { provider: 'openai', model: null }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' }, tools: [{ type: 'testTool', name: 'book_table', config: {} }, tool.body.tool_uuid] } });
  t.is(r.status, 400);
  t.deepEqual(r.body.detail.details.map((d: Body) => d.loc), [['tools', 1]]);
});
