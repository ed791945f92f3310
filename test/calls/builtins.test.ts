// The built-ins {{user_number}} / {{agent_number}} follow one rule (core/agent-config/snapshot.ts liveCallBuiltins):
// on a live call they are the call's phone numbers; a web call (WebSocket, WebRTC, test call) has no phone leg, so
// both are the empty string — in the system prompt, greeting, idle messages, tool strings and the stored snapshot
// alike. Previews are not calls: there they stay literal. Callers cannot set them through contextVariables.
import test from 'ava';
import { contextValues, liveCallBuiltins, resolveSnapshot, substitute, validateAgentConfig } from '../../core/agent-config/index.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rowById } from './helpers.ts';

let s: TestServer;
let key: string;
test.before(async () => {
  s = await startTestServer({ temporal: false });
  key = (await s.createOrg({ concurrency: 10 })).apiKey;
});
test.after.always(async () => {
  await s?.close();
});

const N = 'caller=[{{user_number}}] agent=[{{agent_number}}]';
const EMPTY = 'caller=[] agent=[]';
const agent = {
  name: 'Numbers',
  llm: { provider: 'local', model: 'local-demo' },
  stt: { provider: 'local' },
  tts: { provider: 'local' },
  systemPrompt: `Prompt ${N}`,
  greeting: { firstMessages: [`Hello ${N}`] },
  userIdleMessages: [`Still there? ${N}`],
  tools: [
    { type: 'function', name: 'lookup', config: { server: { url: 'https://api.example.com/lookup?caller={{user_number}}&agent={{agent_number}}', headers: { 'X-Caller': '{{user_number}}' } }, messages: [`Looking up ${N}`] } },
    { type: 'endCall', config: { customMessages: [`Bye ${N}`] } },
    { type: 'transferCall', name: 'transfer', config: { destination: '+14155550100', customMessage: `Transferring ${N}` } },
  ],
};

function expectResolved(t: import('ava').ExecutionContext, snap: any, expected: string) {
  t.is(snap.systemPrompt, `Prompt ${expected}`);
  t.deepEqual(snap.greeting.firstMessages, [`Hello ${expected}`]);
  t.deepEqual(snap.userIdleMessages, [`Still there? ${expected}`]);
  const [fn, end, xfer] = snap.tools;
  const url = expected === EMPTY ? 'https://api.example.com/lookup?caller=&agent=' : agent.tools[0]!.config.server!.url;
  t.is(fn.config.server.url, url);
  t.deepEqual(fn.config.server.headers, { 'X-Caller': expected === EMPTY ? '' : '{{user_number}}' });
  t.deepEqual(fn.config.messages, [`Looking up ${expected}`]);
  t.deepEqual(end.config.customMessages, [`Bye ${expected}`]);
  t.is(xfer.config.customMessage, `Transferring ${expected}`);
}

test('web calls: empty everywhere in the stored snapshot (POST /call websocket and webrtc, test call); call-time values cannot set them', async (t) => {
  const ws = await s.request('POST', '/call', { key, body: { agent, contextVariables: { user_number: '+15550009999' } } });
  t.is(ws.status, 200, JSON.stringify(ws.body));
  const rtc = await s.request('POST', '/call', { key, body: { agent, transport: 'webrtc' } });
  t.is(rtc.status, 201);
  const saved = await s.request('POST', '/agents', { key, body: agent });
  t.is(saved.status, 201);
  const tc = await s.request('POST', `/agents/${saved.body.uuid}/test-call`, { key, body: { contextVariables: { agent_number: '+15550008888' } } });
  t.is(tc.status, 200);
  for (const id of [ws.body.callId, rtc.body.callId, tc.body.callId]) {
    const row = await rowById(s.db, id);
    expectResolved(t, row.config_snapshot, EMPTY);
    t.false('user_number' in row.config_snapshot.contextVariables);
  }
});

test('previews keep them literal', async (t) => {
  const r = await s.request('POST', '/agents/preview-snapshot', { key, body: { agent } });
  t.is(r.status, 200);
  expectResolved(t, r.body.snapshot, N);
});

test('one function for api and media: liveCallBuiltins; numbers substitute when the call has them', async (t) => {
  t.deepEqual(liveCallBuiltins({ customerNumber: null, platformNumber: null }), { userNumber: '', agentNumber: '' });
  t.deepEqual(liveCallBuiltins({ customerNumber: '+15550001111', platformNumber: '+15550002222' }), { userNumber: '+15550001111', agentNumber: '+15550002222' });
  const v = await validateAgentConfig(agent, { db: s.db, orgId: '00000000-0000-4000-8000-000000000000', policy: policyFromConfig(s.config) });
  if (!v.ok) throw new Error(JSON.stringify(v));
  const phone = resolveSnapshot(v.config, { callVariables: null, builtins: liveCallBuiltins({ customerNumber: '+15550001111', platformNumber: '+15550002222' }) });
  t.is(phone.systemPrompt, 'Prompt caller=[+15550001111] agent=[+15550002222]');
  const vars = contextValues(v.config, { callVariables: null, builtins: liveCallBuiltins({ customerNumber: null, platformNumber: null }) }).all;
  t.is(substitute(N, vars), EMPTY);
});
