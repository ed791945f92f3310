// Archived saved tools (spec "Tool": DELETE archives; "agents referencing it keep working"): an agent that already
// references a tool keeps working after the tool is archived (calls, test calls, PATCH of unrelated fields,
// preview, duplicate); only newly adding an archived tool to an agent (create, PATCH, inline agent) is refused.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let key: string;

// Engines that run on every install without credentials, so the calls below are admitted.
const engines = { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } };

test.before(async () => {
  s = await startTestServer({ temporal: false });
  key = (await s.createOrg({ ratePerMinute: 1_000_000, concurrency: 50 })).apiKey;
});
test.after.always(async () => {
  await s?.close();
});

async function archivedToolAndAgent() {
  const tool = await s.request('POST', '/tools', { key, body: { name: 'Order Lookup', definition: { type: 'function', config: { method: 'GET', url: 'https://api.example.com/orders' } } } });
  if (tool.status !== 200) throw new Error(JSON.stringify(tool.body));
  const agent = await s.request('POST', '/agents', { key, body: { name: 'Keeps working', ...engines, tools: [tool.body.tool_uuid] } });
  if (agent.status !== 201) throw new Error(JSON.stringify(agent.body));
  const del = await s.request('DELETE', `/tools/${tool.body.tool_uuid}`, { key });
  if (del.status !== 200) throw new Error(JSON.stringify(del.body));
  return { toolId: tool.body.tool_uuid as string, agentId: agent.body.uuid as string };
}

test('an agent referencing a tool that was archived keeps working: POST /call, test call, PATCH, preview, duplicate', async (t) => {
  const { toolId, agentId } = await archivedToolAndAgent();

  const call = await s.request('POST', '/call', { key, body: { agentId } });
  t.is(call.status, 200, JSON.stringify(call.body));
  const webrtc = await s.request('POST', '/call', { key, body: { agentId, transport: 'webrtc' } });
  t.is(webrtc.status, 201, JSON.stringify(webrtc.body));
  const detail = await s.request('GET', `/calls/${call.body.callId}`, { key });
  t.true(detail.body.configSnapshot.tools.includes(toolId), 'the frozen snapshot keeps the reference');

  const testCall = await s.request('POST', `/agents/${agentId}/test-call`, { key });
  t.is(testCall.status, 200, JSON.stringify(testCall.body));

  const patched = await s.request('PATCH', `/agents/${agentId}`, { key, body: { name: 't2' } });
  t.is(patched.status, 200, JSON.stringify(patched.body));
  t.is(patched.body.config.name, 't2');
  t.true(patched.body.config.tools.includes(toolId));

  // Sending the same list back is not adding anything.
  const sameList = await s.request('PATCH', `/agents/${agentId}`, { key, body: { tools: patched.body.config.tools } });
  t.is(sameList.status, 200, JSON.stringify(sameList.body));

  const preview = await s.request('POST', '/agents/preview-snapshot', { key, body: { agentId } });
  t.is(preview.status, 200, JSON.stringify(preview.body));
  t.true(preview.body.snapshot.tools.includes(toolId));

  const copy = await s.request('POST', `/agents/${agentId}/duplicate`, { key });
  t.is(copy.status, 201, JSON.stringify(copy.body));
  t.true(copy.body.config.tools.includes(toolId));
});

test('newly adding an archived tool is refused: agent create, PATCH adding it, inline agent on POST /call and preview', async (t) => {
  const { toolId } = await archivedToolAndAgent();
  const archivedItem = (loc: unknown[]) => ({ loc, msg: `Saved tool '${toolId}' is archived`, type: 'value_error' });

  const created = await s.request('POST', '/agents', { key, body: { name: 'New', ...engines, tools: [toolId] } });
  t.is(created.status, 400);
  t.deepEqual(created.body.detail.details, [archivedItem(['tools', 0])]);

  const other = await s.request('POST', '/agents', { key, body: { name: 'Other', ...engines } });
  t.is(other.status, 201);
  const added = await s.request('PATCH', `/agents/${other.body.uuid}`, { key, body: { tools: [...other.body.config.tools, toolId] } });
  t.is(added.status, 400);
  t.deepEqual(added.body.detail.details, [archivedItem(['tools', 1])]);
  t.deepEqual((await s.request('GET', `/agents/${other.body.uuid}`, { key })).body.config.tools, other.body.config.tools, 'nothing persisted');

  const inline = await s.request('POST', '/call', { key, body: { agent: { name: 'Inline', ...engines, tools: [toolId] } } });
  t.is(inline.status, 400);
  t.deepEqual(inline.body.detail.details, [{ path: 'agent.tools.0', message: `Saved tool '${toolId}' is archived`, type: 'value_error' }]);

  const preview = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent: { name: 'Inline', ...engines, tools: [toolId] } } });
  t.is(preview.status, 400);

  // Restored, it can be added again.
  await s.request('POST', `/tools/${toolId}/unarchive`, { key });
  const again = await s.request('PATCH', `/agents/${other.body.uuid}`, { key, body: { tools: [...other.body.config.tools, toolId] } });
  t.is(again.status, 200);
});
