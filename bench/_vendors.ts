// Pieces the vendor-engine call benchmarks share (bench/pipeline MODE=vendors, bench/webrtc SPEAK=1): the vendor
// fakes in their own processes (Deepgram Flux / Soniox STT, OpenAI LLM, ElevenLabs TTS, each speaking its real
// protocol over loopback), the service config that points the real adapters at them, the agent those calls run, and
// the caller's sentence (eSpeak). Run as a module of its own (`node --import tsx bench/_vendors.ts fakes-stt|fakes-reply`) it
// is a fakes process.
import { fileURLToPath } from 'node:url';
import { forkRole } from './_callers.ts';
import { stallWatch, type Stall } from './_stats.ts';

/** The STT fakes' end-of-turn silence window (Flux EndOfTurn / Soniox <end>). */
export const STT_END_MS = 400;
/** The part of end of speech → first reply audio the fakes make fixed: the STT end-of-turn window, less the 20 ms
 * frame that completes it (judged on arrival, 20 ms before its audio ends); the LLM and TTS fakes answer at once.
 * A turn's server-added latency is the client's figure minus this. */
export const FIXED_TURN_MS = STT_END_MS - 20;

export interface VendorFakeUrls {
  deepgram: string;
  soniox: string;
  openai: string;
  elevenlabs: string;
}

/**
 * The vendor fakes in two child processes (so the server's CPU and RSS are its own): the STT fakes, which take
 * every caller's audio (50 messages per second per call), and the reply fakes (LLM, TTS). Each vendor is a service
 * of its own in reality; in one process, under load the TTS fake's audio would wait behind the STT fake's input and
 * starve the server's pacer between a reply's sentences. `kill` ends both.
 */
export function startVendorFakes(): { urls: Promise<VendorFakeUrls>; kill(): void; load(): Promise<{ stt: FakesLoad; reply: FakesLoad }> } {
  const stt = forkRole<Pick<VendorFakeUrls, 'deepgram' | 'soniox'>>(import.meta.url, 'fakes-stt');
  const reply = forkRole<Pick<VendorFakeUrls, 'openai' | 'elevenlabs'>>(import.meta.url, 'fakes-reply');
  const urls = Promise.all([stt.result, reply.result]).then(([a, b]) => ({ ...a, ...b }));
  // awaited later (after other set-up); a fakes process that died is reported there, not as an unhandled rejection
  urls.catch(() => {});
  const ask = (child: typeof stt.child) => new Promise<FakesLoad>((ok) => {
    child.once('message', (m) => ok(m as FakesLoad));
    child.send('load?');
  });
  return {
    urls,
    load: async () => ({ stt: await ask(stt.child), reply: await ask(reply.child) }),
    kill: () => {
      stt.kill();
      reply.kill();
    },
  };
}

/** A fakes process's event-loop delay (ms) and CPU (ms) since the previous question: how long the vendors' side took. */
export interface FakesLoad { p99: number; max: number; cpuMs: number; stalls: Stall[] }

/** A fakes process: its URLs back over IPC, then serve until the parent goes; answers 'load?' with a FakesLoad. */
async function runFakes(which: 'stt' | 'reply'): Promise<void> {
  process.on('disconnect', () => process.exit(0));
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const stalls = stallWatch();
  let cpu = process.cpuUsage();
  process.on('message', (m) => {
    if (m !== 'load?') return;
    const used = process.cpuUsage(cpu);
    process.send!({ p99: loop.percentile(99) / 1e6, max: loop.max / 1e6, cpuMs: (used.user + used.system) / 1000, stalls: stalls.take() } satisfies FakesLoad);
    loop.reset();
    cpu = process.cpuUsage();
  });
  if (which === 'stt') {
    const { startDeepgramFake } = await import('../test/fakes/stt/deepgram.ts');
    const { startSonioxFake } = await import('../test/fakes/stt/soniox.ts');
    const script = Array.from({ length: 200_000 }, () => 'tell me something');
    const deepgram = await startDeepgramFake({ apiKey: 'bench', script, endMs: STT_END_MS });
    const soniox = await startSonioxFake({ apiKey: 'bench', script, endpointMs: STT_END_MS });
    process.send!({ deepgram: deepgram.url, soniox: soniox.url });
    return;
  }
  const { startFakeOpenAi } = await import('../test/fakes/openai-sse.ts');
  const { FakeElevenLabs } = await import('../test/fakes/tts/elevenlabs.ts');
  const openai = await startFakeOpenAi({ apiKey: 'bench', defaultReply: { text: ['Sure. ', 'Here is a short answer that takes about three seconds to say out loud.'], usage: { prompt_tokens: 50, completion_tokens: 20 } } });
  const eleven = await new FakeElevenLabs({ apiKey: 'bench' }).listen();
  process.send!({ openai: openai.url, elevenlabs: eleven.server.baseUrl });
}

/** Service config (loadConfig input) that points the real adapters at the fakes. */
export function vendorConfig(urls: VendorFakeUrls): Record<string, string> {
  return {
    DEEPGRAM_BASE_URL: urls.deepgram,
    DEEPGRAM_API_KEY: 'bench',
    SONIOX_BASE_URL: urls.soniox,
    SONIOX_API_KEY: 'bench',
    OPENAI_BASE_URL: urls.openai,
    OPENAI_API_KEY: 'bench',
    ELEVENLABS_BASE_URL: urls.elevenlabs,
    ELEVENLABS_API_KEY: 'bench',
  };
}

/** STT=soniox picks Soniox; Deepgram Flux otherwise. */
export const benchStt = (): 'deepgram' | 'soniox' => (process.env.STT === 'soniox' ? 'soniox' : 'deepgram');

/** The agent of a vendor-engine call: it greets first, then answers each sentence (openai + elevenlabs + `stt`). */
export function vendorAgent(agentConfig: (over: Record<string, unknown>) => Record<string, unknown>, name: string, stt: 'deepgram' | 'soniox', over: Record<string, unknown> = {}) {
  return agentConfig({
    name,
    greeting: { firstMessages: ['Hi, how can I help?'], interruptible: true, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 },
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: false },
    stt: { provider: stt, model: null, interruptionMinWords: 0 },
    tts: { provider: 'elevenlabs', model: null, voice: null },
    noiseGate: { enabled: false, model: 'voice-focus', enhancementLevel: 0.8 },
    userIdleTimeoutS: 25,
    ...over,
  });
}

/** The end of the last loud 20 ms granule (RMS > 800), granules counted from the start as the STT fakes count them:
 * a sentence cut there ends on a frame boundary with a loud frame, so the fakes' silence starts exactly at its end. */
function lastLoudSample(pcm: Int16Array): number {
  for (let end = Math.floor(pcm.length / 320) * 320; end >= 320; end -= 320) {
    let s = 0;
    for (let i = end - 320; i < end; i++) s += pcm[i]! * pcm[i]!;
    if (Math.sqrt(s / 320) > 800) return end;
  }
  return pcm.length;
}

/** The caller's sentence (eSpeak, 16 kHz s16), cut after its last loud 20 ms frame: its end is the end of speech. */
export async function callerSentence(): Promise<Int16Array> {
  const { createLocalTts } = await import('../media/services/tts/local.ts');
  const { resample } = await import('../core/audio/resample.ts');
  // eSpeak NG, named: the same audio every run. The `local` default is the Piper voice where it is installed, and
  // Piper samples noise in every synthesis, so each run's sentence would have its own length and quiet tail, and the
  // STT fakes' end of turn (silence judged in 20 ms granules) would move between runs
  const tts = createLocalTts({ languages: ['en'], model: 'espeak-ng', binary: 'espeak-ng', wordsPerMinute: 160 });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize('tell me something about your opening hours', new AbortController().signal)) parts.push(p);
  const all = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (all.set(p, o), o + p.length), 0);
  const speech16 = resample(all, 24000, 16000);
  return speech16.slice(0, lastLoudSample(speech16));
}

/** The sentence as a job message can carry it (base64 of s16le), and back. */
export const sentenceToBase64 = (s: Int16Array) => Buffer.from(s.buffer, s.byteOffset, s.byteLength).toString('base64');
export const sentenceFromBase64 = (b: string) => new Int16Array(new Uint8Array(Buffer.from(b, 'base64')).buffer);

const role = process.argv[2];
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && (role === 'fakes-stt' || role === 'fakes-reply')) await runFakes(role === 'fakes-stt' ? 'stt' : 'reply');
