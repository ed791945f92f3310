// End to end with the real local engines: Silero VAD with pocketsphinx STT, eSpeak NG TTS and the built-in demo
// LLM (the older `local` models); and with the neural ones — Whisper tiny.en, the Piper voice and, when its opt-in
// model is installed, Qwen2.5 0.5B (else the demo responder). The caller's sentence is synthesized with eSpeak
// (16 kHz) and streamed in real time over the WebSocket.
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, until } from '../../helpers/calls.ts';
import { createLocalStt } from '../../../media/services/stt/local.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { createLocalLlm, DemoLlm } from '../../../media/services/llm/local.ts';
import { modelInstalled } from '../../../media/services/model-files.ts';
import { createVad } from '../../../media/vad/index.ts';
import { resample } from '../../../core/audio/resample.ts';
import type { EngineFactory } from '../../../media/deps.ts';

let s: TestServer;
let org: { orgId: string; apiKey: string };

const neural = (await modelInstalled('whisper-tiny.en')) && (await modelInstalled('piper-en_US-joe-medium'));
const qwen = await modelInstalled('qwen2.5-coder-0.5b-instruct');

const factory: EngineFactory = async ({ config }) => ({
  engines:
    config.stt.model === 'whisper-tiny.en'
      ? {
          llm: qwen ? createLocalLlm({}, 'qwen2.5-coder-0.5b-instruct') : new DemoLlm('demo'),
          stt: createLocalStt('whisper-tiny.en', { greeting: config.greeting.firstMessages[0] }),
          tts: createLocalTts({ languages: config.languages }),
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
});

async function speech(text: string): Promise<Int16Array> {
  const tts = createLocalTts({ languages: ['en'], wordsPerMinute: 150, binary: 'espeak-ng' });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  const all = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (all.set(p, o), o + p.length), 0);
  return resample(all, 24000, 16000);
}

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

  const pcm = await speech('what time is it');
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
  await until(() => caller.audioBytes > greetingBytes + 24000, 30_000, 'reply audio');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  t.is(row.usage.stt.provider, 'local');
  t.is(row.usage.tts.provider, 'local');
  t.true(row.transcript.some((e: { role: string; content?: string }) => e.role === 'user' && /time/.test(e.content ?? '')));
});

(neural ? test : test.skip)('a full call on the neural local engines: greeting, a caller question, a relevant reply (Whisper + Piper + Qwen or the demo responder)', async (t) => {
  const callId = await insertPendingCall(s.db, {
    orgId: org.orgId,
    config: agentConfig({
      name: 'neural local engines',
      systemPrompt: 'You are the receptionist of Bright Smile Dental on a phone call. Answer in one short sentence. Opening hours: Monday to Friday, 9 am to 5 pm.',
      llm: { provider: 'local', model: qwen ? 'qwen2.5-coder-0.5b-instruct' : 'demo', temperature: 0, maxTokens: 60, prewarm: false },
      stt: { provider: 'local', model: 'whisper-tiny.en', interruptionMinWords: 0 },
      tts: { provider: 'local', model: 'piper' },
      greeting: { firstMessages: ['Thanks for calling Bright Smile Dental.'], interruptible: false },
    }),
  });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /Bright Smile/.test(e.payload?.text ?? ''), 60_000);
  await caller.waitAgentQuiet(300, 60_000);
  const greetingBytes = caller.audioBytes;
  t.true(greetingBytes > 24000 * 2 * 1, 'greeting audio from the Piper voice');

  const question = qwen ? 'what are your opening hours' : 'what time is it';
  const pcm = await speech(question);
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
  await until(() => caller.audioBytes > greetingBytes + 24000, 120_000, 'reply audio');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  t.true(row.transcript.some((e: { role: string; content?: string }) => e.role === 'user' && /hours|time/.test(e.content ?? '')));
});
