// The four sound sections over a real call: nothing is sent in silence when they are off; a background bed flows
// continuously; the task sound plays while a tool runs; filler words cover a slow first token; acknowledgements
// play while the caller talks at length. Filler/ack words are spoken by the call's TTS (counted in usage).
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'media-sounds-test' }, media: { engines: book.factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
});

async function open(config: Record<string, unknown>) {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  return { callId, caller };
}
const framesBetween = (c: TestCaller, a: number, b: number) => c.frameTimes.filter((t) => t > a && t < b).length;

test('sections off: no audio at all while nobody speaks; background on: a continuous bed', async (t) => {
  const quiet = await open(agentConfig({ name: book.add({}), greeting: { firstMessages: ['Hi.'] } }));
  const bed = await open(agentConfig({ name: book.add({}), greeting: { firstMessages: ['Hi.'] }, backgroundSound: { enabled: true, sound: 'office', volume: 0.1 } }));
  await quiet.caller.waitEvent((e) => e.type === 'rtf-bot-text');
  await bed.caller.waitEvent((e) => e.type === 'rtf-bot-text');
  await quiet.caller.waitAgentQuiet(200);
  const from = performance.now();
  await quiet.caller.silence(1500);
  const to = performance.now();
  t.is(framesBetween(quiet.caller, from, to), 0, 'nothing sent in silence');
  t.true(framesBetween(bed.caller, from + 200, to) >= 40, 'background frames keep flowing');
  quiet.caller.close();
  bed.caller.close();
  await endedRow(s.db, quiet.callId);
  await endedRow(s.db, bed.callId);
});

test('task sound plays while a tool runs (after startAfterMs)', async (t) => {
  const name = book.add({ stt: { utterances: ['do the thing'] }, llm: [{ toolCalls: [{ name: 'work' }] }, { text: 'Done.' }] });
  const { callId, caller } = await open(
    agentConfig({
      name,
      greeting: { firstMessages: ['Hi.'] },
      taskSound: { enabled: true, sound: 'typing', volume: 0.5, startAfterMs: 200 },
      tools: [{ type: 'testTool', name: 'work', description: 'work', config: { delaySeconds: 2, outcome: 'success' } }],
    }),
  );
  await caller.waitAgentQuiet(200);
  await caller.speak(400);
  const spokeAt = performance.now();
  await caller.silence(300);
  const done = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Done.');
  t.true(framesBetween(caller, spokeAt + 700, done.at - 100) >= 30, 'typing frames while the tool ran');
  caller.close();
  await endedRow(s.db, callId);
});

test('filler word over a slow first token; acknowledgement while the caller talks at length', async (t) => {
  const name = book.add({
    stt: { utterances: ['this is a long story about my account and the problem I have'], wordMs: 150 },
    llm: [{ text: 'I see.', firstTokenMs: 1200 }],
  });
  const { callId, caller } = await open(
    agentConfig({
      name,
      greeting: { firstMessages: ['Hi.'] },
      fillerWords: { enabled: true, words: 'so', wordOrder: 'round-robin', thresholdMs: 150, probability: 1 },
      acknowledgeSounds: { enabled: true, words: 'mhm', wordOrder: 'round-robin', volume: 1, thresholdS: 1, probability: 1 },
    }),
  );
  await caller.waitAgentQuiet(200);
  const talkFrom = performance.now();
  await caller.speak(2200);
  const talkTo = performance.now();
  await caller.silence(300);
  t.true(framesBetween(caller, talkFrom, talkTo) > 0, 'an acknowledgement played while the caller talked');
  const stoppedAt = performance.now();
  const reply = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'I see.');
  t.true(framesBetween(caller, stoppedAt, reply.at) > 0, 'a filler word played before the slow reply');
  const tts = book.engines(name).engines.tts.texts;
  t.true(tts.includes('so') && tts.includes('mhm'));
  await caller.waitAgentQuiet(300);
  caller.close();
  const row = await endedRow(s.db, callId);
  // the sounds are not part of the conversation
  t.deepEqual(row.transcript.filter((e: { role: string }) => e.role === 'assistant').map((e: { content: string }) => e.content), ['Hi.', 'I see.']);
  t.true(row.usage.tts.characters >= 'Hi.I see.somhm'.length);
});
