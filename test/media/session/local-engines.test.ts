// End to end with the real local engines: Silero VAD with pocketsphinx STT, eSpeak NG TTS and the built-in demo
// LLM (the older `local` models); and with the neural ones — Whisper tiny.en with the Smart Turn end-of-turn model,
// the Piper voice and, when its opt-in model is installed, Qwen2.5 0.5B (else the demo responder). The caller's
// sentence is synthesized with eSpeak (16 kHz) and streamed in real time over the WebSocket; callers that pause in
// the middle of a sentence get one reply, after the whole sentence, and finals without a repeated run of words.
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { createLocalStt } from '../../../media/services/stt/local.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { createLocalLlm, DemoLlm } from '../../../media/services/llm/local.ts';
import { modelInstalled } from '../../../media/services/model-files.ts';
import { closeSmartTurn, createSmartTurn } from '../../../media/services/turn/smart-turn.ts';
import { repeatedRun } from '../../../media/services/stt/repeats.ts';
import { createVad } from '../../../media/vad/index.ts';
import { callerSpeech } from '../../helpers/speech.ts';
import type { EngineFactory } from '../../../media/deps.ts';
import { until } from '../../helpers/wait.ts';

let s: TestServer;
let org: { orgId: string; apiKey: string };

const neural = (await modelInstalled('whisper-tiny.en')) && (await modelInstalled('piper-en_US-joe-medium'));
const qwen = await modelInstalled('qwen2.5-coder-0.5b-instruct');
const smartTurn = await modelInstalled('smart-turn-v3.2');

const factory: EngineFactory = async ({ config }) => ({
  engines:
    config.stt.model === 'whisper-tiny.en'
      ? {
          // the agent's own choice: the paused-sentence calls count the demo's one-sentence replies
          llm: qwen && config.llm.model === 'qwen2.5-coder-0.5b-instruct' ? createLocalLlm({}, 'qwen2.5-coder-0.5b-instruct') : new DemoLlm('demo'),
          stt: createLocalStt('whisper-tiny.en', { greeting: config.greeting.firstMessages[0] }),
          tts: createLocalTts({ languages: config.languages }),
          turn: createSmartTurn(),
        }
      : {
          llm: new DemoLlm('demo'),
          stt: createLocalStt('pocketsphinx', { corpus: [config.systemPrompt, 'what time is it', 'good bye'] }),
          tts: createLocalTts({ languages: config.languages, model: 'espeak-ng' }),
        },
  vad: await createVad(),
});

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'media-local-engines-test' }, media: { engines: factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
  await closeSmartTurn();
});

test('a spoken question gets a spoken answer (Silero VAD + pocketsphinx + eSpeak + demo LLM)', async (t) => {
  const callId = await insertPendingCall(s.db, {
    orgId: org.orgId,
    config: agentConfig({
      name: 'local engines',
      llm: { provider: 'local', model: 'demo', temperature: 1, maxTokens: 100, prewarm: false },
      stt: { provider: 'local', interruptionMinWords: 0 },
      tts: { provider: 'local' },
      greeting: { firstMessages: ['Hello.'], interruptible: false },
      noiseGate: { enabled: true, model: 'noise-suppression', enhancementLevel: 0.5 },
    }),
  });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello.', 30_000);
  await caller.waitAgentQuiet(300, 30_000);
  const greetingBytes = caller.audioBytes;
  t.true(greetingBytes > 24000 * 2 * 0.2, 'greeting audio from eSpeak');

  const pcm = await callerSpeech('what time is it');
  await caller.silence(300);
  for (let i = 0; i < pcm.length && caller.isOpen; i += 320) {
    const frame = pcm.slice(i, i + 320);
    caller.ws.send(Buffer.from(frame.buffer));
    await new Promise((r) => setTimeout(r, 20));
  }
  await caller.silence(1500);
  const final = await caller.waitEvent((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true, 30_000, 'final transcript');
  t.regex(final.payload!.text, /time/);
  const reply = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /^It is \d\d:\d\d UTC\.$/.test(e.payload!.text), 30_000, 'reply');
  t.truthy(reply);
  await until(() => caller.audioBytes > greetingBytes + 24000, { what: 'reply audio', timeoutMs: 30_000 });
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  t.is(row.usage.stt.provider, 'local');
  t.is(row.usage.tts.provider, 'local');
  t.true(row.transcript.some((e: { role: string; content?: string }) => e.role === 'user' && /time/.test(e.content ?? '')));
});

(neural ? test : test.skip)('a full call on the neural local engines: greeting, a caller question, a relevant reply, a goodbye that ends the call (Whisper + Piper + Qwen or the demo responder)', async (t) => {
  const callId = await insertPendingCall(s.db, {
    orgId: org.orgId,
    config: agentConfig({
      name: 'neural local engines',
      systemPrompt: 'You are the receptionist of Bright Smile Dental on a phone call. Answer in one short sentence. Opening hours: Monday to Friday, 9 am to 5 pm.',
      llm: { provider: 'local', model: qwen ? 'qwen2.5-coder-0.5b-instruct' : 'demo', temperature: 0, maxTokens: 60, prewarm: true },
      stt: { provider: 'local', model: 'whisper-tiny.en', interruptionMinWords: 0 },
      tts: { provider: 'local', model: 'piper' },
      greeting: { firstMessages: ['Thanks for calling Bright Smile Dental.'], interruptible: false },
    }),
  });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /Bright Smile/.test(e.payload?.text ?? ''), 60_000);
  // more than a second of the Piper voice, then its end (on a busy machine the pieces of one sentence can arrive
  // with short gaps between them, while the model evaluates the prompt beside it)
  await until(() => caller.audioBytes > 24000 * 2 * 1, { what: 'greeting audio from the Piper voice', timeoutMs: 60_000 });
  await caller.waitAgentQuiet(1000, 60_000);
  const greetingBytes = caller.audioBytes;

  const question = qwen ? 'what are your opening hours' : 'what time is it';
  const pcm = await callerSpeech(question);
  await caller.silence(300);
  for (let i = 0; i < pcm.length && caller.isOpen; i += 320) {
    caller.ws.send(Buffer.from(pcm.slice(i, i + 320).buffer));
    await new Promise((r) => setTimeout(r, 20));
  }
  await caller.silence(1500);
  const final = await caller.waitEvent((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true, 60_000, 'final transcript');
  t.log(final.payload!.text);
  t.regex(final.payload!.text.toLowerCase(), qwen ? /opening hours/ : /what time is it/);
  const reply = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && (qwen ? /monday|friday|9|nine/i : /^It is \d\d:\d\d UTC\.$/).test(e.payload!.text), 120_000, 'reply');
  t.log(reply.payload!.text);
  await until(() => caller.audioBytes > greetingBytes + 24000, { what: 'reply audio', timeoutMs: 120_000 });
  await caller.waitAgentQuiet(500, 120_000);
  // the caller takes leave: the agent says its farewell and hangs up (no "Are you still there?")
  const bye = await callerSpeech('thank you, goodbye');
  for (let i = 0; i < bye.length && caller.isOpen; i += 320) {
    caller.ws.send(Buffer.from(bye.slice(i, i + 320).buffer));
    await new Promise((r) => setTimeout(r, 20));
  }
  // the microphone keeps streaming (silence) until the agent hangs up
  for (const end = Date.now() + 60_000; caller.isOpen && Date.now() < end; ) await caller.silence(200);
  t.false(caller.isOpen, 'the agent hung up');
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'agent_hangup');
  t.true(row.transcript.some((e: { role: string; content?: string }) => e.role === 'user' && /hours|time/.test(e.content ?? '')));
  t.true(row.transcript.some((e: { role: string; name?: string }) => e.role === 'tool' && e.name === 'end_call'), 'ended through the end-call tool');
});

/** Stream 16 kHz audio over the socket in real time (20 ms frames). */
async function send(caller: TestCaller, pcm: Int16Array): Promise<void> {
  for (let i = 0; i < pcm.length && caller.isOpen; i += 320) {
    caller.ws.send(Buffer.from(pcm.slice(i, i + 320).buffer));
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A neural local call whose caller says `first`, pauses `pauseMs`, says `rest`; what the call heard and said. */
async function pausedSentence(first: string, rest: string, pauseMs: number) {
  const callId = await insertPendingCall(s.db, {
    orgId: org.orgId,
    config: agentConfig({
      name: 'paused caller',
      llm: { provider: 'local', model: 'demo', temperature: 0, maxTokens: 100, prewarm: false },
      stt: { provider: 'local', model: 'whisper-tiny.en', interruptionMinWords: 0 },
      tts: { provider: 'local', model: 'piper' },
      greeting: { firstMessages: ['Hello, how can I help?'], interruptible: false },
      noiseGate: { enabled: true, model: 'voice-focus', enhancementLevel: 0.8 },
    }),
  });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?', 60_000);
  await caller.waitAgentQuiet(300, 60_000);
  const [a, b] = await Promise.all([callerSpeech(first), callerSpeech(rest)]);
  await caller.silence(300);
  await send(caller, a);
  await caller.silence(pauseMs);
  await send(caller, b);
  const spokeAt = performance.now();
  // the line stays open past the turn model's longest pause
  await caller.silence(3500);
  const reply = await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text !== 'Hello, how can I help?', 120_000, 'reply');
  await caller.waitAgentQuiet(500, 120_000);
  await caller.silence(500);
  caller.close();
  const row = await endedRow(s.db, callId);
  const finals = caller.events.filter((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true).map((e) => e.payload!.text);
  const replies = caller.botTexts().filter((x) => x !== 'Hello, how can I help?');
  return { row, finals, replies, reply, spokeAt, events: caller.events };
}

(neural && smartTurn ? test.serial : test.skip)('a caller who pauses 1.5 s in the middle of a sentence gets one reply, after the whole sentence', async (t) => {
  const r = await pausedSentence('Can you tell me, um,', 'what time you open tomorrow?', 1500);
  t.log(r.finals, r.replies);
  if (process.env.DEBUG_EVENTS) t.log(r.events.map((e) => `${Math.round(e.at - r.spokeAt)} ${e.type} ${JSON.stringify(e.payload ?? e)}`).join('\n'));
  t.is(r.finals.length, 1, `one final for the turn: ${JSON.stringify(r.finals)}`);
  t.regex(r.finals[0]!.toLowerCase(), /tell me/);
  t.regex(r.finals[0]!.toLowerCase(), /tomorrow/);
  t.true(r.reply.at > r.spokeAt, 'the reply came after the end of the sentence');
  t.is(r.replies.length, 1, JSON.stringify(r.replies));
  const users = r.row.transcript.filter((e: { role: string }) => e.role === 'user');
  t.is(users.length, 1, JSON.stringify(r.row.transcript));
  const lat = r.row.logs.latency as Array<{ turn_model_ms: number | null; providers: Record<string, string> }>;
  t.is(typeof lat[0]?.turn_model_ms, 'number', JSON.stringify(lat));
  t.is(lat[0]!.providers.turn_model, 'smart-turn-v3.2');
});

(neural ? test.serial : test.skip)('sentences with a pause inside, after the greeting "Hello, how can I help?": finals without a repeated run of three words', async (t) => {
  for (const [first, rest] of [
    ['Can you tell me, um,', 'what time you open tomorrow?'],
    ['My phone number is five five five,', 'one two three, four five six seven.'],
  ] as const) {
    const r = await pausedSentence(first, rest, 1500);
    t.log(r.finals);
    t.true(r.finals.length >= 1);
    for (const f of r.finals) t.false(repeatedRun(f, 3), `repeated words in the final "${f}"`);
    if (smartTurn) t.is(r.finals.length, 1, `one final per turn: ${JSON.stringify(r.finals)}`);
  }
});
