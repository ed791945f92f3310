// Vendor faults in a live call (docs/operations.md "What happens when something fails"): a WebSocket call whose
// TTS is the real Cartesia adapter (CARTESIA_BASE_URL → the local Cartesia fake). After the greeting the vendor hangs (the
// socket stays open, nothing comes back); the caller speaks; the adapter's stall bound (TTS_STALL_MS, 10 s after the
// last message sent) drops the hung socket and the reply is spoken on a new one. The call goes on and ends normally.
// The caller's silence (end of their speech → first agent audio frame of the reply) is printed, never asserted.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { createEngines } from '../../media/services/index.ts';
import { FakeLlm, FakeStt, FakeVad } from '../fakes/engines.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import { startDeepgramFake, type DeepgramFake } from '../fakes/stt/deepgram.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { until } from '../helpers/wait.ts';

const factory: EngineFactory = async ({ config, appConfig }) => {
  const engines = createEngines(appConfig, config as never, {
    llm: { fake: () => new FakeLlm([{ text: 'Sure, go ahead.' }, { text: 'Anything else?' }]) },
    stt: { fake: () => new FakeStt({ utterances: ['are you there', 'thanks'] }) },
  });
  return { engines, vad: new FakeVad() };
};

let s: TestServer;
let ca: FakeCartesia;
let dg: DeepgramFake;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  ca = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  dg = await startDeepgramFake({ apiKey: 'dg-key', script: Array.from({ length: 20 }, () => 'are you there') });
  s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: 'faults-vendor-stall-call', CARTESIA_BASE_URL: ca.server.baseUrl, CARTESIA_API_KEY: 'ca-key', DEEPGRAM_BASE_URL: dg.url, DEEPGRAM_API_KEY: 'dg-key' },
    media: { engines: factory },
  });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await ca?.close();
  await dg?.close();
});

const cartesia = { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } };
const deepgram = { provider: 'deepgram', model: 'flux-general-en', interruptionMinWords: 0 };
const patientGreeting = { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 30 };

/** The caller says something every 3 s ("hello? are you there?") until agent audio beyond `heard` frames arrives;
 *  returns the time from the end of their first words to that audio (what they heard as silence). */
async function callerWaitsForReply(caller: TestCaller, heard: number, maxMs = 40_000): Promise<number> {
  let firstEnd = 0;
  const start = performance.now();
  while (caller.frameTimes.length === heard && caller.isOpen && performance.now() - start < maxMs) {
    await caller.speak(600);
    firstEnd ||= performance.now();
    for (let i = 0; i < 12 && caller.frameTimes.length === heard && caller.isOpen; i++) await caller.silence(200);
  }
  return caller.frameTimes.length > heard ? caller.frameTimes[heard]! - firstEnd : -1;
}

test.serial('STT vendor hangs mid-call: reopened after the stall bound, the caller is answered, the call goes on', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-stt-stall', stt: deepgram, tts: cartesia, greeting: patientGreeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const conns = dg.connections.length;
  dg.stallAll();
  const silenceMs = await callerWaitsForReply(caller, caller.frameTimes.length);
  t.true(silenceMs >= 0, 'the caller was answered');
  t.is(dg.connections.length, conns + 1, 'on a reopened recogniser connection');
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  await caller.waitAgentQuiet(500);
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  t.log(`caller silence with a hung STT (first words → first reply audio, repeating every 3 s): ${Math.round(silenceMs)} ms`);
});

test.serial('STT vendor down at connect (503 on every upgrade): the call ends pipeline_error naming the vendor after bounded retries', async (t) => {
  dg.refuseUpgrades({ status: 503, body: { err_msg: 'Service Unavailable' } });
  t.teardown(() => dg.refuseUpgrades(null));
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-stt-503', stt: deepgram, tts: cartesia, greeting: patientGreeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  const t0 = performance.now();
  await caller.waitOpen();
  void caller.silence(10_000);
  const closed = await caller.closed;
  const endMs = performance.now() - t0;
  t.is(closed.code, 1011);
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'error');
  t.is(row.ended_reason, 'pipeline_error');
  t.regex(JSON.stringify(row.logs), /deepgram STT refused: .*HTTP 503/);
  t.log(`STT 503 at connect: call ended ${Math.round(endMs)} ms after the caller connected; greeting frames heard: ${caller.frameTimes.length}`);
});

test.serial('TTS vendor down at connect (503 for 3 s): the greeting is lost with a transient error event, the call goes on and answers once the vendor is back', async (t) => {
  ca.server.refusing = { status: 503, body: JSON.stringify({ error: 'Service Unavailable' }) };
  t.teardown(() => (ca.server.refusing = null));
  // a greeting of its own, so that no cached greeting audio hides the outage
  const greeting = { ...patientGreeting, firstMessages: ['Welcome to the outage line, how may I help you today?'] };
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-tts-503', tts: cartesia, greeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'error', 20_000, 'the transient error event');
  await caller.silence(3000);
  ca.server.refusing = null;
  const heardDuringOutage = caller.frameTimes.length;
  const silenceMs = await callerWaitsForReply(caller, heardDuringOutage, 20_000);
  t.true(silenceMs >= 0, 'the caller is answered once the vendor is back');
  t.true(caller.isOpen, 'the call was not ended by the outage');
  const err = caller.events.find((e) => e.type === 'error') as { message?: string } | undefined;
  t.regex(err?.message ?? '', /Cartesia TTS unavailable: HTTP 503/);
  await caller.waitAgentQuiet(500);
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  t.log(`TTS 503 for 3 s at connect: agent frames during the outage ${heardDuringOutage}; once back, caller's words → reply audio ${Math.round(silenceMs)} ms`);
});

test.serial('TTS vendor hangs mid-call: the reply is spoken after the stall bound on a new connection, the call goes on', async (t) => {
  const greeting = { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 30 };
  const tts = { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } };
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-tts-stall', tts, greeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const greetingFrames = caller.frameTimes.length;
  t.true(greetingFrames > 0, 'the greeting was heard');

  const conns = ca.server.connections;
  ca.server.stallAll();
  await caller.speak(600);
  const spokeAt = performance.now();
  // the caller waits on the line (silence frames, real time) until the reply's audio arrives
  while (caller.frameTimes.length === greetingFrames && caller.isOpen && performance.now() - spokeAt < 30_000) await caller.silence(200);
  t.true(caller.frameTimes.length > greetingFrames, 'the reply was heard');
  const silenceMs = caller.frameTimes[greetingFrames]! - spokeAt;
  await caller.waitAgentQuiet(500);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  t.is(ca.server.connections, conns + 1, 'the reply came on a new connection');

  // the call goes on: the next turn is answered at once
  const before = caller.frameTimes.length;
  await caller.speak(600);
  const spoke2 = performance.now();
  await caller.silence(400);
  await until(() => caller.frameTimes.length > before || null, { what: 'the next reply', timeoutMs: 20_000 });
  const nextMs = caller.frameTimes[before]! - spoke2;
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  t.log(`caller silence after speaking into the hung TTS: ${Math.round(silenceMs)} ms; next turn: ${Math.round(nextMs)} ms`);
});
