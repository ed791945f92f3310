// Answer supervision over the WebSocket transport (no carrier, so no AMD: what the recogniser hears decides). An
// agent that leaves voicemail messages, bridged to a line that a mailbox answers: the mailbox's words make it a
// voicemail, the agent stops, its message goes out after the beep, the call ends `voicemail`. A plain web agent
// (no message, no keypad) is never judged: a long first sentence from a person in a browser ends nothing.
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall, TestCaller, until } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';
import { sql } from '../../../core/db/pool.ts';
import { z } from 'zod';

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  s = await startTestServer({ temporal: false, media: { engines: book.factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
});

/** 16 kHz beep frames (1 kHz), sent in real time like the caller's audio */
async function beep(caller: TestCaller, ms: number): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < ms / 20 && caller.isOpen; i++) {
    const pcm = Int16Array.from({ length: 320 }, (_, k) => Math.round(9000 * Math.sin((2 * Math.PI * 1000 * (i * 320 + k)) / 16000)));
    caller.ws.send(Buffer.from(pcm.buffer));
    const delay = start + (i + 1) * 20 - performance.now();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  }
}

const logsOf = async (callId: string) => (await s.db.oneFirst(sql.type(z.object({ logs: z.any() }))`SELECT logs FROM calls WHERE id = ${callId}`)) as Record<string, any>;

test('a mailbox on a WebSocket call: voicemail by its words, quiet over the greeting, the message after the beep, endedReason voicemail', async (t) => {
  const message = 'This is Acme. Please call us back.';
  const name = book.add({ stt: { utterances: ['sorry we missed you please leave a message after the beep'] }, llm: [{ text: 'Hello there!' }], tts: { msPerChar: 20 } });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name, voicemailDetection: true, voicemailMessage: message }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await until(() => caller.audioBytes > 0, 10_000, 'the opener');
  await caller.waitAgentQuiet();
  const atGreeting = caller.audioSeconds;
  await caller.speak(2000);
  await caller.silence(400);
  await beep(caller, 400);
  const atBeep = caller.audioSeconds;
  void caller.silence(4000); // the line goes on (a client streams its audio all along)
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'voicemail');
  t.true(atBeep - atGreeting < 0.3, `quiet over the greeting (${atBeep - atGreeting} s)`);
  const after = (caller.audioSeconds - atBeep) * 1000;
  t.true(after >= message.length * 20 - 200, `the message after the beep: ${after} ms`);
  t.is((row.transcript as Array<{ role: string; content?: string }>).filter((e) => e.role === 'assistant').at(-1)?.content, message);
  t.is(book.engines(name).engines.llm.requests.length, 0, 'the greeting was never answered');
  const logs = await until(async () => ((await logsOf(callId)).voicemail ? logsOf(callId) : null), 10_000, 'logs');
  t.like(logs.voicemail_detection, { result: 'voicemail', by: 'phrases' });
  t.like(logs.voicemail, { left: true, after: 'beep' });
});

test('a plain web agent is not supervised: a long first sentence is a turn, the call goes on', async (t) => {
  const name = book.add({ stt: { utterances: ['please leave a message after the beep and then some more words for good measure'] }, llm: [{ text: 'Sure.' }] });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name, voicemailDetection: true }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await until(() => caller.audioBytes > 0, 10_000, 'the opener');
  await caller.waitAgentQuiet();
  await caller.speak(5000);
  await caller.silence(600);
  await until(() => book.engines(name).engines.llm.requests.length > 0, 10_000, 'the turn answered');
  t.is((await getCallRow(s.db, callId)).status, 'active');
  t.falsy((await logsOf(callId)).voicemail_detection);
  caller.close();
  t.is((await endedRow(s.db, callId)).ended_reason, 'user_hangup');
});
