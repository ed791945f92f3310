// A WebSocket call whose TTS is a real vendor adapter (built by media/services from the agent's config, pointed at
// the vendor's local fake through <ID>_BASE_URL): greeting spoken through the vendor, barge-in cuts the greeting in
// the LLM context at a word boundary, usage and cost carry the vendor's provider/model/characters; a refused key ends
// the call pipeline_error with the vendor and reason on the row, never the key.
import test, { type ExecutionContext } from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { createEngines } from '../../../media/services/index.ts';
import { FakeLlm, FakeStt, FakeVad } from '../../fakes/engines.ts';
import { FakeElevenLabs } from '../../fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../../fakes/tts/cartesia.ts';
import type { EngineFactory } from '../../../media/deps.ts';
import { computeCost } from '../../../core/pricing.ts';
import { until } from '../../helpers/wait.ts';

const llms = new Map<string, FakeLlm>();
const factory: EngineFactory = async ({ config, appConfig }) => {
  const llm = new FakeLlm([{ text: 'Sure, go ahead.' }]);
  llms.set(config.name, llm);
  const engines = createEngines(appConfig, config as never, {
    llm: { fake: () => llm },
    stt: { fake: () => new FakeStt({ utterances: ['stop please'] }) },
  });
  return { engines, vad: new FakeVad() };
};

let s: TestServer;
let el: FakeElevenLabs;
let ca: FakeCartesia;
let org: { orgId: string; apiKey: string };

test.before(async () => {
  el = await new FakeElevenLabs({ apiKey: 'el-live-key', gapMs: 1 }).listen();
  ca = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  s = await startTestServer({
    env: {
      TEMPORAL_TASK_QUEUE: 'media-vendor-tts-test',
      ELEVENLABS_BASE_URL: el.server.baseUrl,
      ELEVENLABS_API_KEY: 'el-live-key',
      CARTESIA_BASE_URL: ca.server.baseUrl,
      CARTESIA_API_KEY: 'sk-cartesia-wrong-secret',
    },
    media: { engines: factory },
  });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await el?.close();
  await ca?.close();
});

const ttsBlock = { provider: 'elevenlabs', model: 'eleven_flash_v2_5', voice: 'voice-1', elevenlabs: { stability: 0.4, similarityBoost: 0.8, style: 0, useSpeakerBoost: true, speed: 1.1, autoMode: true, applyTextNormalization: 'auto' } };

test('elevenlabs call: greeting through the vendor, barge-in cuts it at a word in the LLM context, usage and cost', async (t) => {
  const greeting = 'Supercalifragilisticexpialidocious is a very long word, and this greeting keeps going for quite a while so you can interrupt.';
  const name = 'vendor-tts-elevenlabs';
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name, tts: ttsBlock, greeting: { firstMessages: [greeting], interruptible: true, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 } }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await until(() => caller.audioSeconds > 1.2, { what: 'greeting audio', timeoutMs: 10_000 });
  await caller.speak(300);
  await caller.silence(400);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  // the vendor saw the agent's voice settings and a context per utterance
  const up = el.server.upgrades.at(-1)!;
  t.is(up.path, '/v1/text-to-speech/voice-1/multi-stream-input');
  t.is(up.query.get('model_id'), 'eleven_flash_v2_5');
  const init = el.server.messages().find((m) => m.voice_settings);
  t.deepEqual(init.voice_settings, { stability: 0.4, similarity_boost: 0.8, style: 0, use_speaker_boost: true, speed: 1.1 });
  const contexts = new Set(el.server.messages().filter((m) => m.flush).map((m) => m.context_id));
  t.true(contexts.size >= 2, 'greeting and reply in their own contexts');
  t.true(el.server.messages().some((m) => m.close_context && m.context_id === [...contexts][0]), 'the interrupted greeting context was closed');

  const first = row.transcript[0];
  t.true(first.interrupted);
  t.true(first.content.length > 0 && first.content.length < greeting.length, first.content);
  t.true(greeting.startsWith(first.content) && /[^\s]$/.test(first.content), 'a prefix of whole words');
  const heard = llms.get(name)!.requests[0]!.messages.find((m) => m.role === 'assistant');
  t.is(heard && 'content' in heard ? heard.content : null, first.content, 'the LLM saw exactly what was heard');

  t.is(row.usage.tts.provider, 'elevenlabs');
  t.is(row.usage.tts.model, 'eleven_flash_v2_5');
  t.true(row.usage.tts.characters >= 'Sure, go ahead.'.length);
  t.true(computeCost(row.usage).tts > 0);
});

/** The call closed 1011 and ended pipeline_error naming Cartesia's refusal; the key is in neither the row's logs nor
 * the caller's events. Returns the ended row. */
async function refusedEnd(t: ExecutionContext, caller: TestCaller, callId: string) {
  const closed = await caller.closed;
  t.is(closed.code, 1011);
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'error');
  t.is(row.ended_reason, 'pipeline_error');
  const logs = JSON.stringify(row.logs);
  t.regex(logs, /Cartesia TTS refused: HTTP 401/);
  t.false(logs.includes('sk-cartesia-wrong-secret'));
  t.false(caller.events.some((e) => JSON.stringify(e).includes('sk-cartesia-wrong-secret')));
  return row;
}

test('a refused TTS key ends the call pipeline_error naming the vendor and the reason, never the key', async (t) => {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: 'vendor-tts-refused', tts: { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } } }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await refusedEnd(t, caller, callId);
});

test('a TTS key refused at connect ends a caller-speaks-first call at once, before the caller is ever answered', async (t) => {
  const name = 'vendor-tts-refused-user-first';
  const greeting = { firstMessages: ['Hello, how can I help?'], interruptible: false, speakFirst: 'user', agentDelayS: 0, userTimeoutS: 5 };
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name, llm: { provider: 'fake', model: 'fake-llm', temperature: 0.5, maxTokens: 100, prewarm: false }, tts: { provider: 'cartesia', model: 'sonic-3', voice: 'v', cartesia: { speed: 1, volume: 1.5 } }, greeting }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  // (no LLM prewarm: the output side starts with the call, so a prewarm request would be counted below)
  // the caller talks first, after a moment of silence that leaves the refusal at connect time to arrive on a loaded
  // machine (the stream stops as soon as the call is closed)
  await caller.silence(1500);
  await caller.speak(600);
  await caller.silence(800);
  const row = await refusedEnd(t, caller, callId);
  t.is(llms.get(name)?.requests.length ?? 0, 0, 'the call ended at connect: the agent was never asked to answer the caller');
  t.false(row.transcript.some((e: { role: string }) => e.role === 'user'), 'no caller turn was taken');
});
