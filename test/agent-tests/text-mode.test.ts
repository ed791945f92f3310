// The WebSocket protocol's text mode (`?mode=text`) from a plain client: the same session without speech — the
// greeting and replies as rtf-bot-text with rtf-bot-turn-end after each utterance, no audio frames, the end_call tool
// hangs up (close 1000), the call row has the agent's transcript; bad messages get an error event and change
// nothing; an unknown mode is refused with 1008.
import test from 'ava';
import WebSocket from 'ws';
import type { EngineFactory } from '../../media/deps.ts';
import { agentConfig, endedRow, insertPendingCall } from '../helpers/calls.ts';
import { until } from '../helpers/wait.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { fakeEngines } from '../fakes/engines.ts';
import type { TtsSynthesizeOptions } from '../../media/services/types.ts';

let s: TestServer;
let org: { orgId: string; apiKey: string };
let sttOpened = 0;
let ttsCalls = 0;

const factory: EngineFactory = async () => {
  const e = fakeEngines({
    llm: [
      { text: 'We open at nine on weekdays.' },
      { toolCalls: [{ name: 'end_call', arguments: '{}' }] },
    ],
  });
  const open = e.engines.stt.open.bind(e.engines.stt);
  e.engines.stt.open = async (o) => { sttOpened++; return open(o); };
  const synth = e.engines.tts.synthesize.bind(e.engines.tts);
  e.engines.tts.synthesize = (text: string, signal: AbortSignal, o?: TtsSynthesizeOptions) => { ttsCalls++; return synth(text, signal, o); };
  return e;
};

test.before(async () => {
  s = await startTestServer({ temporal: false, media: { engines: factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
});

function connect(callId: string, mode: string) {
  const ws = new WebSocket(`${s.origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${callId}?mode=${mode}`, { headers: { 'X-API-Key': org.apiKey } });
  const events: Array<{ type: string; payload?: { text: string }; message?: string }> = [];
  let binary = 0;
  ws.on('message', (d, isBinary) => {
    if (isBinary) binary++;
    else events.push(JSON.parse(String(d)));
  });
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: String(reason) })));
  return { ws, events, closed, binary: () => binary };
}

test.serial('text turns in, text out, turn ends marked, end_call hangs up; no audio, no speech engines', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'text desk' }) });
  const c = connect(callId, 'text');
  await until(() => c.events.some((e) => e.type === 'rtf-bot-turn-end'), { what: 'the greeting', timeoutMs: 10_000 });
  t.deepEqual(c.events.map((e) => e.type), ['rtf-bot-text', 'rtf-bot-turn-end']);
  t.is(c.events[0]!.payload!.text, 'Hello, how can I help?');

  c.ws.send('not json');
  c.ws.send(JSON.stringify({ type: 'user-text', text: 'x'.repeat(4001) }));
  c.ws.send(Buffer.alloc(640)); // audio is ignored in text mode
  await until(() => c.events.filter((e) => e.type === 'error').length === 2, { what: 'two error events', timeoutMs: 5000 });
  t.regex(c.events.find((e) => e.type === 'error')!.message!, /text mode expects/);

  c.ws.send(JSON.stringify({ type: 'user-text', text: 'When do you open?' }));
  await until(() => c.events.filter((e) => e.type === 'rtf-bot-turn-end').length === 2, { what: 'the answer', timeoutMs: 10_000 });
  t.is(c.events.filter((e) => e.type === 'rtf-bot-text').map((e) => e.payload!.text).join(' '), 'Hello, how can I help? We open at nine on weekdays.');
  t.true(c.events.some((e) => e.type === 'rtf-user-transcription' && e.payload!.text === 'When do you open?'));

  c.ws.send(JSON.stringify({ type: 'user-text', text: 'Thanks, bye.' }));
  const closed = await c.closed;
  t.is(closed.code, 1000);
  t.true(c.events.some((e) => e.type === 'rtf-bot-text' && e.payload!.text === 'Goodbye!'), 'the end_call farewell as text');
  t.is(c.binary(), 0, 'no audio frames');
  t.is(ttsCalls, 0, "the agent's TTS never synthesized");
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'agent_hangup');
  t.deepEqual((row.transcript as any[]).filter((e) => e.role !== 'tool').map((e) => [e.role, e.content]), [
    ['assistant', 'Hello, how can I help?'], ['user', 'When do you open?'], ['assistant', 'We open at nine on weekdays.'], ['user', 'Thanks, bye.'], ['assistant', 'Goodbye!'],
  ]);
  t.deepEqual((row.transcript as any[]).filter((e) => e.role === 'tool').map((e) => [e.name, e.status]), [['end_call', 'success']]);
  t.is(sttOpened, 0, "the agent's STT never opened");
  t.falsy(row.usage?.stt, 'no speech recognition billed');
});

test.serial('an unknown mode is refused with 1008 and the call stays pending', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'mode' }) });
  const c = connect(callId, 'video');
  const closed = await c.closed;
  t.deepEqual(closed, { code: 1008, reason: 'Unsupported mode' });
  const row = await s.request('GET', `/calls/${callId}`, { key: org.apiKey });
  t.is(row.body.status, 'pending');
});
