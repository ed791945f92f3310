// LLM vendor faults in a live call (docs/operations.md "What happens when something fails"): WebSocket calls on the
// real Deepgram (Flux) STT, OpenAI LLM and Cartesia TTS adapters, each pointed at its local fake through
// `<ID>_BASE_URL`. (1) The LLM answers 503, then 500, to every chat-completions request for a while, then recovers;
// (2) the LLM stream is cut (socket destroyed) after a few deltas. What the caller gets is asserted (events, words
// heard, the next turn answered, how the row ends); the caller's silence (end of their words → first agent audio
// frame) is printed, never asserted.
import test from 'ava';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, type ServerEvent } from '../helpers/calls.ts';
import { createEngines } from '../../media/services/index.ts';
import { FakeVad } from '../fakes/engines.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import { startDeepgramFake, type DeepgramFake } from '../fakes/stt/deepgram.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-sse.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { until } from '../helpers/wait.ts';

// every engine from the call's config (the vendor adapters); only the VAD is the tone-detecting fake
const factory: EngineFactory = async ({ config, appConfig }) => ({ engines: createEngines(appConfig, config as never), vad: new FakeVad() });

let s: TestServer;
let ca: FakeCartesia;
let dg: DeepgramFake;
let oa: FakeOpenAi;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  ca = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  dg = await startDeepgramFake({ apiKey: 'dg-key', script: Array.from({ length: 20 }, () => 'are you there') });
  oa = await startFakeOpenAi({ apiKey: 'sk-llm-fault' });
  s = await startTestServer({
    env: {
      TEMPORAL_TASK_QUEUE: 'faults-vendor-llm-call',
      CARTESIA_BASE_URL: ca.server.baseUrl,
      CARTESIA_API_KEY: 'ca-key',
      DEEPGRAM_BASE_URL: dg.url,
      DEEPGRAM_API_KEY: 'dg-key',
      OPENAI_BASE_URL: oa.url,
      OPENAI_API_KEY: 'sk-llm-fault',
    },
    media: { engines: factory },
  });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await Promise.allSettled([ca?.close(), dg?.close(), oa?.close()]);
});

const vendors = {
  stt: { provider: 'deepgram', model: 'flux-general-en', interruptionMinWords: 0 },
  llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: false },
  tts: { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } },
  greeting: { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 30 },
};

const errors = (caller: TestCaller): ServerEvent[] => caller.events.filter((e) => e.type === 'error');

/** The caller speaks 600 ms, then stays on the line (silence, real time) until `done()` or `maxMs`; returns the end of
 *  their words. */
async function callerTurn(caller: TestCaller, done: () => boolean, maxMs = 20_000): Promise<number> {
  await caller.speak(600);
  const end = performance.now();
  while (!done() && caller.isOpen && performance.now() - end < maxMs) await caller.silence(200);
  return end;
}

test.serial('LLM 503 then 500 on every request, then recovers: each turn in the outage is sent three times (two retries), then gets one error event and silence; the call goes on and the next turn is answered', async (t) => {
  oa.outage = { status: 503, errorMessage: 'Service Unavailable' };
  t.teardown(() => (oa.outage = null));
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-llm-5xx', ...vendors }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const greetingFrames = caller.frameTimes.length;
  t.true(greetingFrames > 0, 'the greeting (no LLM) was heard');
  const req0 = oa.requests.length;

  // turn 1: 503
  const turn1 = await callerTurn(caller, () => errors(caller).length >= 1);
  t.is(errors(caller).length, 1, 'one error event for the refused turn');
  t.regex(errors(caller)[0]!.message ?? '', /openai LLM error 503: Service Unavailable/);
  // turn 2: 500
  oa.outage = { status: 500, errorMessage: 'The server had an error while processing your request.' };
  await callerTurn(caller, () => errors(caller).length >= 2);
  t.is(errors(caller).length, 2, 'one error event per refused turn');
  t.regex(errors(caller)[1]!.message ?? '', /openai LLM error 500: The server had an error/);
  await caller.silence(1000);
  const outageRequests = oa.requests.length - req0;
  t.is(outageRequests, 6, 'three requests per turn: the first and two retries (media/services/llm/retry.ts)');
  t.is(caller.frameTimes.length, greetingFrames, 'nothing was spoken during the outage (silence, no apology)');
  t.true(caller.isOpen, 'the call was not ended by the outage');

  // the vendor is back: the next turn is answered
  oa.outage = null;
  oa.reply({ text: ['Sure, ', 'go ahead.'] });
  const heard = caller.frameTimes.length;
  const spokeAt = await callerTurn(caller, () => caller.frameTimes.length > heard);
  t.true(caller.frameTimes.length > heard, 'the caller is answered once the LLM is back');
  const silenceMs = caller.frameTimes[heard]! - spokeAt;
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  await caller.waitAgentQuiet(500);
  t.is(errors(caller).length, 2, 'no further error event');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  const tr = row.transcript as Array<{ role: string; content: string }>;
  t.deepEqual(
    tr.filter((e) => e.role === 'assistant').map((e) => e.content),
    ['Hello, how can I help?', 'Sure, go ahead.'],
    'the refused turns left no assistant entry',
  );
  t.log(`LLM 503: caller's words → error event ${Math.round(errors(caller)[0]!.at - turn1)} ms`);
  t.log(`LLM 5xx: ${outageRequests} chat-completions requests for 2 caller turns during the outage (each sent 3 times: 2 retries); once back, caller's words → reply audio ${Math.round(silenceMs)} ms`);
});

test.serial('LLM 503 on one request: the retry 300 ms later answers the turn, no error event', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-llm-blip', ...vendors }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const req0 = oa.requests.length;
  oa.reply({ status: 503, errorMessage: 'Service Unavailable' });
  oa.reply({ text: ['Here ', 'I am.'] });
  const heard = caller.frameTimes.length;
  const spokeAt = await callerTurn(caller, () => caller.frameTimes.length > heard);
  t.true(caller.frameTimes.length > heard, 'the turn was answered');
  const silenceMs = caller.frameTimes[heard]! - spokeAt;
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Here I am.');
  await caller.waitAgentQuiet(500);
  t.is(errors(caller).length, 0, 'no error event');
  t.is(oa.requests.length - req0, 2, 'the refused request and its retry');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  t.log(`LLM 503 once: caller's words → reply audio ${Math.round(silenceMs)} ms (one retry after 300 ms)`);
});

test.serial('LLM stream cut mid-reply: the words already streamed are spoken, one error event, the call goes on and the next turn is answered', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'fault-llm-drop', ...vendors }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(500);
  const greetingFrames = caller.frameTimes.length;

  // records: role chunk, 'Sure, ', 'let me check that. ', then the socket is destroyed
  oa.reply({ text: ['Sure, ', 'let me check that. ', 'Your order ', 'ships tomorrow.'], dropAfter: 3 });
  const spokeAt = await callerTurn(caller, () => errors(caller).length >= 1 && caller.frameTimes.length > greetingFrames);
  t.is(errors(caller).length, 1, 'one error event');
  t.regex(errors(caller)[0]!.message ?? '', /openai LLM stream broke/);
  t.true(caller.frameTimes.length > greetingFrames, 'the part already streamed was spoken');
  const silenceMs = caller.frameTimes[greetingFrames]! - spokeAt;
  await caller.waitAgentQuiet(500);
  const texts = caller.botTexts();
  t.true(texts.some((x) => /let me check that/.test(x)), 'the streamed words reached the caller');
  t.false(texts.some((x) => /ships tomorrow/.test(x)), 'nothing past the cut');
  t.true(caller.isOpen);

  // the next turn is answered
  oa.reply({ text: ['Anything ', 'else?'] });
  const heard = caller.frameTimes.length;
  const spoke2 = await callerTurn(caller, () => caller.frameTimes.length > heard);
  await until(() => caller.frameTimes.length > heard || null, { what: 'the next reply', timeoutMs: 20_000 });
  const nextMs = caller.frameTimes[heard]! - spoke2;
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Anything else?');
  await caller.waitAgentQuiet(500);
  t.is(errors(caller).length, 1, 'no further error event');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  const tr = row.transcript as Array<{ role: string; content: string }>;
  t.log(`error event: ${errors(caller)[0]!.message ?? ''}`);
  t.log(`assistant transcript: ${JSON.stringify(tr.filter((e) => e.role === 'assistant').map((e) => e.content))}`);
  t.log(`LLM stream cut after 2 deltas: caller's words → first audio of the partial reply ${Math.round(silenceMs)} ms; next turn ${Math.round(nextMs)} ms`);
});
