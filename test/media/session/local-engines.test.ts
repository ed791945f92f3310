// End to end with the real local engines: Silero VAD, pocketsphinx STT, eSpeak NG TTS and the built-in demo LLM.
// The caller's sentence is synthesized with eSpeak (16 kHz) and streamed in real time over the WebSocket.
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, until } from '../../helpers/calls.ts';
import { createLocalStt } from '../../../media/services/stt/local.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { DemoLlm } from '../../../media/services/llm/local.ts';
import { createVad } from '../../../media/vad/index.ts';
import { resample } from '../../../media/audio/index.ts';
import type { EngineFactory } from '../../../media/deps.ts';

let s: TestServer;
let org: { orgId: string; apiKey: string };

const factory: EngineFactory = async ({ config }) => ({
  engines: {
    llm: new DemoLlm('demo'),
    stt: createLocalStt('pocketsphinx', { corpus: [config.systemPrompt, 'what time is it', 'good bye'] }),
    tts: createLocalTts({ languages: config.languages }),
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
