// Turn-taking on full calls over the WebSocket, with scripted STT/LLM/TTS (test/fakes/engines.ts) and the real
// Smart Turn adapter: a turn model whose file is missing or altered leaves the call on VAD silence alone (it still
// answers, no turn_model stage); with the model installed the stage is measured; caller sound without words holds
// the agent and it plays on from the unheard part, once, in one transcript entry; words make it an interruption.
import test from 'ava';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, until } from '../../helpers/calls.ts';
import { fakeEngines, type FakeScenario } from '../../fakes/engines.ts';
import { tempDir } from '../../helpers/tmp.ts';
import type { EngineFactory } from '../../../media/deps.ts';
import { closeSmartTurn, createSmartTurn } from '../../../media/services/turn/smart-turn.ts';
import { MODELS, modelInstalled } from '../../../media/services/model-files.ts';
import { registry } from '../../../core/metrics.ts';

const emptyDir = tempDir('turn-missing-');
const corruptDir = tempDir('turn-corrupt-');
const file = MODELS['smart-turn-v3.2'].files[0]!;
mkdirSync(path.dirname(path.join(corruptDir, file.path)), { recursive: true });
writeFileSync(path.join(corruptDir, file.path), Buffer.alloc(1024, 7));
const installed = await modelInstalled('smart-turn-v3.2');

type Scenario = FakeScenario & { turn?: 'missing' | 'corrupt' | 'installed' };
const scenarios = new Map<string, Scenario>();
let n = 0;
const add = (s: Scenario) => {
  const name = `turn-${++n}`;
  scenarios.set(name, s);
  return name;
};
const factory: EngineFactory = async ({ config }) => {
  const sc = scenarios.get(config.name)!;
  const e = fakeEngines(sc);
  const dir = sc.turn === 'missing' ? emptyDir : sc.turn === 'corrupt' ? corruptDir : undefined;
  return sc.turn ? { ...e, engines: { ...e.engines, turn: createSmartTurn({ workers: 1, ...(dir ? { modelsDir: dir } : {}) }) } } : e;
};

let s: TestServer;
let org: { orgId: string; apiKey: string };
test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'media-turn-taking-test' }, media: { engines: factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await closeSmartTurn();
});

async function call(config: Record<string, unknown>) {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  return { callId, caller };
}

async function oneTurn(t: import('ava').ExecutionContext, turn: Scenario['turn']) {
  const name = add({ turn, stt: { utterances: ['what time is it'] }, llm: [{ text: 'It is noon.' }] });
  const { callId, caller } = await call(agentConfig({ name }));
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?');
  await caller.waitAgentQuiet();
  await caller.speak(600);
  await caller.silence(900);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'It is noon.', 20_000, 'the reply');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  const turns = (row.logs.latency as Array<{ turn_model_ms: number | null; stt_ms: number | null; providers: Record<string, string> }>);
  t.is(turns.length, 1, JSON.stringify(turns));
  t.deepEqual(row.transcript.filter((e: { role: string }) => e.role === 'user').map((e: { content: string }) => e.content), ['what time is it']);
  return turns[0]!;
}

for (const why of ['missing', 'corrupt'] as const) {
  test(`a turn model whose file is ${why} leaves the call on VAD silence: it answers, with no turn_model stage`, async (t) => {
    const l = await oneTurn(t, why);
    t.is(l.turn_model_ms, null);
    t.false('turn_model' in l.providers);
    t.is(typeof l.stt_ms, 'number');
  });
}

(installed ? test : test.skip)('with the Smart Turn model installed, the turn it ends has its turn_model stage', async (t) => {
  const l = await oneTurn(t, 'installed');
  t.is(typeof l.turn_model_ms, 'number');
  t.is(l.providers.turn_model, 'smart-turn-v3.2');
  const m = await registry.getSingleMetricAsString('voice_turn_stage_seconds');
  t.regex(m, /voice_turn_stage_seconds_count\{stage="turn_model",provider="smart-turn-v3.2"\} [1-9]/);
});

const LONG = 'This is a very long opening statement that keeps going and going so that the caller has time to cough in the middle of it.';

async function falseInterruptions(): Promise<number> {
  const m = (await registry.getSingleMetricAsString('voice_false_interruptions_total')).match(/voice_false_interruptions_total (\d+)/);
  return m ? Number(m[1]) : 0;
}

test('caller sound without words stops the agent, which then plays on from the unheard part: one entry, the whole text once', async (t) => {
  // the "cough" is loud audio the recogniser finds no word in
  const name = add({ stt: { utterances: [], deaf: true }, llm: [], tts: { msPerChar: 30 } });
  const before = await falseInterruptions();
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [LONG], interruptible: true }, stt: { provider: 'fake', interruptionMinWords: 0 } }));
  await until(() => caller.audioSeconds > 0.8, 10_000, 'greeting audio');
  await caller.speak(250);
  const stopped = caller.audioSeconds;
  // the line stays open (silence flows) while the agent waits for a word that does not come
  const line = caller.silence(3000);
  await until(() => caller.audioSeconds > stopped + 0.8, 10_000, 'the agent playing on');
  await line;
  await caller.waitAgentQuiet(400, 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);
  const assistant = row.transcript.filter((e: { role: string }) => e.role === 'assistant');
  t.is(assistant.length, 1, JSON.stringify(row.transcript));
  t.is(assistant[0].content, LONG);
  t.falsy(assistant[0].interrupted);
  t.is(await falseInterruptions(), before + 1);
  // it did stop: the agent's audio has a hole of about RESUME_AFTER_MS (far longer than any pacing jitter)
  const gaps = caller.frameTimes.slice(1).map((at, i) => at - caller.frameTimes[i]!);
  t.true(Math.max(...gaps) > 1000, `largest gap in the agent's audio ${Math.max(...gaps)} ms`);
  // the whole greeting was heard once: its audio, not more (nothing replayed from the start) and not less
  const full = LONG.length * 0.03;
  t.true(caller.audioSeconds > full * 0.9 && caller.audioSeconds < full + 0.6, `agent audio ${caller.audioSeconds} s for ${full} s of speech`);
});

test('words over the held agent make it an interruption: cut where the caller stopped hearing it, the caller answered', async (t) => {
  const name = add({ stt: { utterances: ['hold on'] }, llm: [{ text: 'Sure.' }], tts: { msPerChar: 30 } });
  const before = await falseInterruptions();
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [LONG], interruptible: true }, stt: { provider: 'fake', interruptionMinWords: 0 } }));
  await until(() => caller.audioSeconds > 0.8, 10_000, 'greeting audio');
  await caller.speak(400);
  await caller.silence(500);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure.', 20_000, 'the reply');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  const first = row.transcript[0];
  t.true(first.interrupted);
  t.true(first.content.length > 0 && LONG.startsWith(first.content) && first.content.length < LONG.length, first.content);
  t.is(await falseInterruptions(), before);
});
