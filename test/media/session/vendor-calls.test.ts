// End to end with the real vendor adapters, each pointed at its local fake through `<ID>_BASE_URL`: a WebSocket call
// on deepgram (Flux) + openai + elevenlabs, and one on the spec defaults (soniox + elevenlabs). The engines are
// built the production way (createEngines from the call's config, Silero VAD); the caller speaks a sentence
// synthesized with eSpeak while the agent's (interruptible) greeting plays, so the greeting is cut (barge-in), the
// vendor's end of turn ends the caller's turn, and the LLM's reply is spoken. The post-call worker prices the call:
// the row has the transcript, usage with provider and model per engine, and the cost.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import { computeCost } from '../../../core/pricing.ts';
import { callerSpeech } from '../../helpers/speech.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fakes/openai-sse.ts';
import { FakeElevenLabs } from '../../fakes/tts/elevenlabs.ts';
import { startDeepgramFake, type DeepgramFake } from '../../fakes/stt/deepgram.ts';
import { startSonioxFake, type SonioxFake } from '../../fakes/stt/soniox.ts';
import { until } from '../../helpers/wait.ts';
import { startTestWorker, type RunningWorker } from '../../helpers/worker.ts';

const QUEUE = 'media-vendor-calls-test';
const QUESTION = 'what are your opening hours';
const GREETING =
  'Hello and welcome to the Acme support line. I can help you with orders, deliveries, opening hours, returns, refunds and anything else you need today, so please tell me what brings you here.';

let s: TestServer;
let openai: FakeOpenAi;
let eleven: FakeElevenLabs;
let deepgram: DeepgramFake;
let soniox: SonioxFake;
let worker: RunningWorker;
let org: { orgId: string; apiKey: string };
let question: Int16Array;

test.before(async () => {
  openai = await startFakeOpenAi({ apiKey: 'sk-vendor-e2e' });
  eleven = await new FakeElevenLabs({ apiKey: 'el-vendor-e2e' }).listen();
  deepgram = await startDeepgramFake({ apiKey: 'dg-vendor-e2e', script: [QUESTION, QUESTION, QUESTION] });
  soniox = await startSonioxFake({ apiKey: 'sx-vendor-e2e', script: [QUESTION, QUESTION] });
  s = await startTestServer({
    env: {
      TEMPORAL_TASK_QUEUE: QUEUE,
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'sk-vendor-e2e',
      ELEVENLABS_BASE_URL: eleven.server.baseUrl,
      ELEVENLABS_API_KEY: 'el-vendor-e2e',
      DEEPGRAM_BASE_URL: deepgram.url,
      DEEPGRAM_API_KEY: 'dg-vendor-e2e',
      SONIOX_BASE_URL: soniox.url,
      SONIOX_API_KEY: 'sx-vendor-e2e',
    },
  });
  worker = await startTestWorker(s, QUEUE);
  org = await s.createOrg({ balanceUsd: 20 });
  question = await callerSpeech(QUESTION); // eSpeak at 16 kHz: Silero hears it as speech
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await Promise.allSettled([openai?.close(), eleven?.close(), deepgram?.close(), soniox?.close()]);
});

async function sendSpeech(caller: TestCaller, pcm: Int16Array): Promise<void> {
  const start = performance.now();
  for (let i = 0, k = 0; i < pcm.length && caller.isOpen; i += 320, k++) {
    caller.ws.send(Buffer.from(pcm.slice(i, i + 320).buffer));
    const delay = start + (k + 1) * 20 - performance.now();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  }
}

async function runCall(t: import('ava').ExecutionContext, stt: Record<string, unknown>, tts: Record<string, unknown>) {
  openai.reply({ text: ['We are open ', 'from nine to five. ', 'Anything else?'], usage: { prompt_tokens: 120, completion_tokens: 12 } });
  const config = agentConfig({
    name: `vendor e2e ${String(stt.provider)}`,
    greeting: { firstMessages: [GREETING], interruptible: true, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 },
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: false },
    stt,
    tts,
  });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  // the greeting plays; the caller talks over it after half a second of it
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === GREETING.split('. ')[0] + '.', 20_000, 'greeting text');
  await until(() => caller.audioSeconds > 0.5, { what: 'greeting audio', timeoutMs: 20_000 });
  await caller.silence(100);
  await sendSpeech(caller, question);
  await caller.silence(1500);
  const reply = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /nine to five/.test(e.payload!.text), 20_000, 'reply');
  t.truthy(reply);
  await caller.waitAgentQuiet(300, 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');

  // transcript: the greeting cut where the caller barged in, the caller's turn, the reply
  const tr = row.transcript as Array<{ role: string; content: string; interrupted?: boolean }>;
  const greeting = tr.find((e) => e.role === 'assistant')!;
  t.true(greeting.interrupted, 'greeting interrupted by the caller');
  t.true(greeting.content.length < GREETING.length && GREETING.startsWith(greeting.content.slice(0, 10)), greeting.content);
  t.deepEqual(
    tr.filter((e) => e.role === 'user').map((e) => e.content),
    [QUESTION],
  );
  t.regex(tr.at(-1)!.content, /We are open from nine to five\./);
  t.is(tr.at(-1)!.role, 'assistant');
  // the caller's interim and final transcriptions reached the client
  t.true(caller.events.some((e) => e.type === 'rtf-user-transcription' && e.payload?.final === false));
  t.true(caller.events.some((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true && e.payload.text === QUESTION));

  // usage per engine with provider and model, and the post-call cost
  const usage = row.usage as { stt: { provider: string; model: string; seconds: number }; tts: { provider: string; model: string; characters: number }; llm: { provider: string; model: string } };
  t.true(usage.stt.seconds > 1, `stt seconds ${usage.stt.seconds}`);
  t.is(usage.tts.provider, 'elevenlabs');
  t.is(usage.tts.model, 'eleven_flash_v2_5');
  t.true(usage.tts.characters > 0);
  t.deepEqual([usage.llm.provider, usage.llm.model], ['openai', 'gpt-4o-mini']);
  const cost = await until(async () => {
    const r = await s.db.one(sql.type(z.object({ cost: z.number().nullable() }))`SELECT cost FROM calls WHERE id = ${callId}`);
    return r.cost;
  }, { what: 'cost', timeoutMs: 30_000 });
  t.is(cost, computeCost(row.usage, { fallbackSttSeconds: row.duration_seconds }).total);
  t.true(computeCost(row.usage).stt > 0 && computeCost(row.usage).tts > 0 && computeCost(row.usage).llm > 0);
  return { row, usage, callId };
}

test.serial('deepgram Flux + openai + elevenlabs: greeting, barge-in, the caller turn, the reply; usage and cost', async (t) => {
  const before = openai.requests.length;
  const { usage } = await runCall(t, { provider: 'deepgram', model: null, interruptionMinWords: 0, deepgram: { eotThreshold: 0.7, eotTimeoutMs: 2000, keyterms: 'Acme' } }, { provider: 'elevenlabs', model: null, voice: null });
  t.deepEqual([usage.stt.provider, usage.stt.model], ['deepgram', 'flux-general-en']);
  const c = deepgram.connections.at(-1)!;
  t.is(c.path, '/v2/listen');
  t.is(c.headers.authorization, 'Token dg-vendor-e2e');
  t.deepEqual(c.query.getAll('keyterm'), ['Acme']);
  t.true(c.sent.some((m) => m.event === 'EndOfTurn' && m.transcript === QUESTION));
  // Flux's EagerEndOfTurn started the (speculative) LLM request with the caller's words, before EndOfTurn
  t.true(c.sent.some((m) => m.event === 'EagerEndOfTurn' && m.transcript === QUESTION));
  const asked = openai.requests.slice(before).map((r) => (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1));
  t.true(asked.length >= 1);
  t.true(asked.every((m) => m?.role === 'user' && m.content === QUESTION));
  t.is(openai.requests[before]!.headers.authorization, 'Bearer sk-vendor-e2e');
  t.deepEqual(c.messages.at(-1), { kind: 'json', data: { type: 'CloseStream' } });
  // one Flux connection for the whole call
  t.is(deepgram.connections.length, 1);
});

test.serial('spec defaults, soniox + elevenlabs: greeting, barge-in, the caller turn, the reply; usage and cost', async (t) => {
  const { usage } = await runCall(t, { provider: 'soniox', model: null, interruptionMinWords: 0 }, { provider: 'elevenlabs', model: null, voice: null });
  t.deepEqual([usage.stt.provider, usage.stt.model], ['soniox', 'stt-rt-v5']);
  const c = soniox.connections.at(-1)!;
  t.is(c.path, '/transcribe-websocket');
  t.is(c.headers.authorization, 'Bearer sx-vendor-e2e');
  const first = c.messages[0] as { kind: string; data: Record<string, unknown> };
  t.is(first.data.model, 'stt-rt-v5');
  t.deepEqual(first.data.language_hints, ['en']);
  t.true(c.sent.some((m) => Array.isArray(m.tokens) && (m.tokens as Array<{ text: string }>).some((x) => x.text === '<end>')));
  t.is(soniox.connections.length, 1);
});

test.serial('a vendor refusal (unknown model) ends the call pipeline_error with the vendor and reason logged, never the key', async (t) => {
  const config = agentConfig({
    name: 'vendor refusal',
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: false },
    stt: { provider: 'deepgram', model: 'nova-3', interruptionMinWords: 0 },
    tts: { provider: 'elevenlabs', model: null, voice: null },
  });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  const err = await caller.waitEvent((e) => e.type === 'error', 20_000, 'error event');
  t.is(err.message, 'deepgram STT refused: HTTP 400: Unknown model nova-3');
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'error');
  t.is(row.ended_reason, 'pipeline_error');
  t.is(row.logs.pipeline_error, 'deepgram STT refused: HTTP 400: Unknown model nova-3');
  t.false(JSON.stringify(row).includes('dg-vendor-e2e'));
});

test.serial('the STT vendor drops the connection mid-call: the adapter reconnects and the caller is still answered', async (t) => {
  openai.reply({ text: ['We are open from nine to five.'], usage: { prompt_tokens: 50, completion_tokens: 8 } });
  const before = deepgram.connections.length;
  const config = agentConfig({
    name: 'vendor reconnect',
    greeting: { firstMessages: ['Hi.'], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 },
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: false },
    stt: { provider: 'deepgram', model: null, interruptionMinWords: 0 },
    tts: { provider: 'elevenlabs', model: null, voice: null },
  });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitAgentQuiet(300, 20_000);
  await until(() => deepgram.connections.length === before + 1, { what: 'flux connection', timeoutMs: 5000 });
  deepgram.dropAll(1011, 'internal server error');
  await sendSpeech(caller, question);
  await caller.silence(1500);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /nine to five/.test(e.payload!.text), 20_000, 'reply');
  await caller.waitAgentQuiet(300, 20_000);
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  t.is(deepgram.connections.length, before + 2, 'one reconnect');
  t.false(caller.events.some((e) => e.type === 'error'));
  t.deepEqual(
    (row.transcript as Array<{ role: string; content: string }>).filter((e) => e.role === 'user').map((e) => e.content),
    [QUESTION],
  );
});
