// Vendor faults in a live call (README "Nothing lost, nothing stuck", fault table): a WebSocket call whose TTS is the
// real Cartesia adapter (CARTESIA_BASE_URL → the local Cartesia fake). After the greeting the vendor hangs (the
// socket stays open, nothing comes back); the caller speaks; the adapter's stall bound (TTS_STALL_MS, 10 s after the
// last message sent) drops the hung socket and the reply is spoken on a new one. The call goes on and ends normally.
// The caller's silence (end of their speech → first agent audio frame of the reply) is printed for the README,
// never asserted.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, until } from '../helpers/calls.ts';
import { createEngines } from '../../media/services/index.ts';
import { FakeLlm, FakeStt, FakeVad } from '../fakes/engines.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import type { EngineFactory } from '../../media/deps.ts';

const factory: EngineFactory = async ({ config, appConfig }) => {
  const engines = createEngines(appConfig, config as never, {
    llm: { fake: () => new FakeLlm([{ text: 'Sure, go ahead.' }, { text: 'Anything else?' }]) },
    stt: { fake: () => new FakeStt({ utterances: ['are you there', 'thanks'] }) },
  });
  return { engines, vad: new FakeVad() };
};

let s: TestServer;
let ca: FakeCartesia;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  ca = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: 'faults-vendor-stall-call', CARTESIA_BASE_URL: ca.server.baseUrl, CARTESIA_API_KEY: 'ca-key' },
    media: { engines: factory },
  });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await ca?.close();
});

test('TTS vendor hangs mid-call: the reply is spoken after the stall bound on a new connection, the call goes on', async (t) => {
  const greeting = { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 30 };
  const tts = { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } };
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-tts-stall', tts, greeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const greetingFrames = caller.frameTimes.length;
  t.true(greetingFrames > 0, 'the greeting was heard');

  ca.server.stallAll();
  await caller.speak(600);
  const spokeAt = performance.now();
  // the caller waits on the line (silence frames, real time) until the reply's audio arrives
  while (caller.frameTimes.length === greetingFrames && caller.isOpen && performance.now() - spokeAt < 30_000) await caller.silence(200);
  t.true(caller.frameTimes.length > greetingFrames, 'the reply was heard');
  const silenceMs = caller.frameTimes[greetingFrames]! - spokeAt;
  await caller.waitAgentQuiet(500);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  t.is(ca.server.connections, 2, 'the reply came on a new connection');

  // the call goes on: the next turn is answered at once
  const before = caller.frameTimes.length;
  await caller.speak(600);
  const spoke2 = performance.now();
  await caller.silence(400);
  await until(() => caller.frameTimes.length > before || null, 20_000, 'the next reply');
  const nextMs = caller.frameTimes[before]! - spoke2;
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  t.log(`caller silence after speaking into the hung TTS: ${Math.round(silenceMs)} ms; next turn: ${Math.round(nextMs)} ms`);
});
