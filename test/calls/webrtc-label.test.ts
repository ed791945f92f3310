// Browser WebRTC calls are one kind of call whichever endpoint created them: POST /call transport=webrtc and
// POST /agents/{uuid}/test-call store the same transport (`webrtc`) and callSource (`webrtc`), and the history
// filter finds them by `transport=web` as well as `transport=webrtc` (rows stored as `web` before included).
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { rowById, seedCall } from './helpers.ts';

let s: TestServer;
test.before(async () => {
  s = await startTestServer({ temporal: false });
});
test.after.always(async () => {
  await s?.close();
});

const localAgent = { name: 'Browser agent', llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } };

test('POST /call transport=webrtc and test calls store one label; transport=web and transport=webrtc both find them', async (t) => {
  const { orgId, apiKey } = await s.createOrg({ concurrency: 10 });
  const created = await s.request('POST', '/call', { key: apiKey, body: { agent: localAgent, transport: 'webrtc' } });
  t.is(created.status, 201);
  t.is(created.body.transport, 'webrtc');
  const saved = await s.request('POST', '/agents', { key: apiKey, body: localAgent });
  const testCall = await s.request('POST', `/agents/${saved.body.uuid}/test-call`, { key: apiKey });
  t.is(testCall.status, 200);
  const ws = await s.request('POST', '/call', { key: apiKey, body: { agent: localAgent } });
  t.is(ws.status, 200);

  const a = await rowById(s.db, created.body.callId);
  const b = await rowById(s.db, testCall.body.callId);
  t.deepEqual([a.transport, a.call_source], ['webrtc', 'webrtc']);
  t.deepEqual([b.transport, b.call_source], [a.transport, a.call_source], 'test calls are stored like POST /call WebRTC calls');

  // A row written with the older `web` label is the same kind of call.
  const legacy = await seedCall(s.db, { organizationId: orgId, transport: 'web', callSource: 'webrtc' });
  const browser = [created.body.callId, testCall.body.callId, legacy].sort();
  for (const q of ['transport=web', 'transport=webrtc', 'transport=web,webrtc']) {
    const r = await s.request('GET', `/calls?${q}`, { key: apiKey });
    t.is(r.status, 200);
    t.deepEqual(r.body.items.map((i: { callId: string }) => i.callId).sort(), browser, q);
    t.is(r.body.total, 3, `${q} total`);
  }
  const list = await s.request('GET', '/calls?transport=websocket', { key: apiKey });
  t.deepEqual(list.body.items.map((i: { callId: string }) => i.callId), [ws.body.callId]);
  const detail = await s.request('GET', `/calls/${created.body.callId}`, { key: apiKey });
  t.like(detail.body, { transport: 'webrtc', callSource: 'webrtc' });
});

test('rejected WebRTC attempts carry the same label', async (t) => {
  const { orgId, apiKey } = await s.createOrg();
  const r = await s.request('POST', '/call', { key: apiKey, body: { agent: { ...localAgent, bogus: true }, transport: 'webrtc' } });
  t.is(r.status, 400);
  const list = await s.request('GET', '/calls?transport=webrtc&tag=rejected', { key: apiKey });
  t.is(list.body.total, 1);
  const row = await rowById(s.db, list.body.items[0].callId);
  t.like(row, { organization_id: orgId, transport: 'webrtc', call_source: 'webrtc', connection_status: 'schema_validation' });
});
