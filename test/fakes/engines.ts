// Scripted fake engines with exact timings, implementing media/services/types.ts (and the VAD contract).
// They stand in for vendor engines where a test must control timing exactly; "speech" is any audio louder than
// a threshold (the test caller sends a tone for speech and zeros for silence).
import type { ChatMessage, Engines, LlmChunk, LlmRequest, LlmService, SttOptions, SttService, SttStream, TtsService } from '../../media/services/types.ts';
import type { Vad } from '../../media/pipeline/input-stages.ts';

const LOUD = 800;

function rms(pcm: Int16Array): number {
  let s = 0;
  for (const v of pcm) s += v * v;
  return pcm.length ? Math.sqrt(s / pcm.length) : 0;
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const onAbort = () => {
      clearTimeout(t);
      reject(abortError());
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
function abortError(): Error {
  const e = new Error('aborted');
  e.name = 'AbortError';
  return e;
}

/** Energy VAD: onset after `startMs` of loud audio, offset after `stopMs` of quiet. */
export class FakeVad implements Vad {
  private loudMs = 0;
  private quietMs = 0;
  private speaking = false;
  constructor(private readonly opts: { startMs?: number; stopMs?: number } = {}) {}
  async process(frame: Int16Array) {
    const ms = (frame.length / 16000) * 1000;
    const loud = rms(frame) > LOUD;
    if (loud) {
      this.loudMs += ms;
      this.quietMs = 0;
    } else {
      this.quietMs += ms;
      if (!this.speaking) this.loudMs = 0;
    }
    if (!this.speaking && this.loudMs >= (this.opts.startMs ?? 60)) {
      this.speaking = true;
      return { speechStart: true, probability: 0.9 };
    }
    if (this.speaking && this.quietMs >= (this.opts.stopMs ?? 300)) {
      this.speaking = false;
      this.loudMs = 0;
      return { speechEnd: true, probability: 0.05 };
    }
    return { probability: loud ? 0.9 : 0.05 };
  }
}

export interface FakeSttScript {
  /** what the caller "says", utterance by utterance (one per final) */
  utterances: string[];
  /** ms of loud audio per interim word */
  wordMs?: number;
  /** delay between finalize() and the final event */
  finalDelayMs?: number;
  /** the "caller" is music: loud audio, no words */
  deaf?: boolean;
  /** vendor-style turn detection: finalize() gives eager_turn_end at once, then turn_end after finalDelayMs */
  eager?: boolean;
  /** utterance indexes after which the caller goes on: eager_turn_end then turn_resumed (no turn_end) */
  resumeAfter?: number[];
}

export class FakeStt implements SttService {
  readonly provider = 'fake';
  readonly model = 'fake-stt';
  readonly hasTurnDetection: boolean;
  finals: string[] = [];
  private idx = 0;
  private carried = '';
  constructor(private readonly script: FakeSttScript) {
    this.hasTurnDetection = script.eager === true;
  }
  async open(opts: SttOptions): Promise<SttStream> {
    let loudMs = 0;
    let emitted = 0;
    let closed = false;
    const wordMs = this.script.wordMs ?? 150;
    const current = () => (this.script.utterances[this.idx] ?? 'hello').split(/\s+/);
    return {
      write: (pcm) => {
        if (closed || this.script.deaf) return;
        if (rms(pcm) <= LOUD) return;
        loudMs += (pcm.length / 16000) * 1000;
        const words = current();
        const n = Math.min(words.length, Math.floor(loudMs / wordMs) + 1);
        if (n > emitted) {
          emitted = n;
          opts.onEvent({ type: 'interim', text: words.slice(0, n).join(' ') });
        }
      },
      finalize: () => {
        if (loudMs === 0) return;
        const text = current().join(' ');
        loudMs = 0;
        emitted = 0;
        if (this.script.eager) {
          const idx = this.idx++;
          const whole = [this.carried, text].filter(Boolean).join(' ');
          opts.onEvent({ type: 'eager_turn_end', text: whole });
          if (this.script.resumeAfter?.includes(idx)) {
            this.carried = whole;
            setTimeout(() => !closed && opts.onEvent({ type: 'turn_resumed' }), (this.script.finalDelayMs ?? 20) / 2);
            return;
          }
          this.carried = '';
          setTimeout(() => {
            if (closed) return;
            this.finals.push(whole);
            opts.onEvent({ type: 'turn_end', text: whole });
          }, this.script.finalDelayMs ?? 20);
          return;
        }
        this.idx++;
        setTimeout(() => {
          if (closed) return;
          this.finals.push(text);
          opts.onEvent({ type: 'final', text });
        }, this.script.finalDelayMs ?? 20);
      },
      close: async () => {
        closed = true;
      },
    };
  }
}

export interface LlmStep {
  text?: string;
  toolCalls?: Array<{ name: string; arguments?: string }>;
  firstTokenMs?: number;
  tokenMs?: number;
  /** 'crash': a plain bug (unhandled) · 'fatal' / 'transient': an engine error */
  fail?: 'crash' | 'fatal' | 'transient';
}

export class FakeLlm implements LlmService {
  readonly provider = 'fake';
  readonly model = 'fake-llm';
  readonly requests: Array<{ messages: ChatMessage[]; tools: string[]; temperature: number; maxTokens: number; signal: AbortSignal }> = [];
  prewarmed = 0;
  private n = 0;
  constructor(private readonly steps: Array<LlmStep | ((req: LlmRequest) => LlmStep)>, private readonly fallback: LlmStep = { text: 'Okay.' }) {}
  async prewarm(): Promise<void> {
    this.prewarmed++;
  }
  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    this.requests.push({ messages: structuredClone(req.messages), tools: req.tools.map((t) => t.name), temperature: req.temperature, maxTokens: req.maxTokens, signal: req.signal });
    const raw = this.steps[this.n++] ?? this.fallback;
    const step = typeof raw === 'function' ? raw(req) : raw;
    await wait(step.firstTokenMs ?? 30, req.signal);
    if (step.fail === 'crash') throw new TypeError('fake llm crashed');
    if (step.fail) {
      const e = new Error(`fake llm ${step.fail} error`) as Error & { engineError: unknown };
      e.engineError = { message: `fake llm ${step.fail} error`, retryable: step.fail === 'transient', fatal: step.fail === 'fatal' };
      throw e;
    }
    let completion = 0;
    if (step.text) {
      const words = step.text.split(/(?<=\s)/);
      for (let i = 0; i < words.length; i++) {
        if (i > 0) await wait(step.tokenMs ?? 5, req.signal);
        completion++;
        yield { type: 'text', delta: words[i]! };
      }
    }
    for (const [i, c] of (step.toolCalls ?? []).entries()) {
      completion++;
      yield { type: 'tool_call', call: { id: `call_${this.n}_${i}`, name: c.name, arguments: c.arguments ?? '{}' } };
    }
    const prompt = Math.ceil(req.messages.reduce((a, m) => a + ('content' in m ? m.content.length : 0), 0) / 4);
    yield { type: 'usage', usage: { promptTokens: prompt, completionTokens: completion } };
    yield { type: 'done', finishReason: step.toolCalls?.length ? 'tool_calls' : 'stop' };
  }
}

/** TTS: a 24 kHz tone, `msPerChar` of audio per character, first bytes after `firstByteMs`, produced faster than real time. */
export class FakeTts implements TtsService {
  readonly provider = 'fake';
  readonly model = 'fake-tts';
  readonly voice = 'tone';
  readonly texts: string[] = [];
  constructor(private readonly opts: { firstByteMs?: number; msPerChar?: number; amplitude?: number } = {}) {}
  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    this.texts.push(text);
    await wait(this.opts.firstByteMs ?? 20, signal);
    const total = Math.max(4800, Math.round(((this.opts.msPerChar ?? 40) * text.length * 24000) / 1000));
    const amp = this.opts.amplitude ?? 6000;
    const tone = toneTable(amp);
    for (let off = 0; off < total; off += 2400) {
      if (signal.aborted) return;
      const n = Math.min(2400, total - off);
      yield tone.slice(0, n);
      // yield to the event loop between chunks (a streaming engine), without a timer per chunk
      await new Promise<void>((r) => setImmediate(r));
    }
  }
}

const tones = new Map<number, Int16Array>();
/** 100 ms of a 440 Hz tone (an integer number of periods), computed once per amplitude */
function toneTable(amp: number): Int16Array {
  let t = tones.get(amp);
  if (!t) {
    t = new Int16Array(2400);
    for (let i = 0; i < t.length; i++) t[i] = Math.round(amp * Math.sin((2 * Math.PI * 440 * i) / 24000));
    tones.set(amp, t);
  }
  return t;
}

export interface FakeScenario {
  stt?: FakeSttScript;
  llm?: Array<LlmStep | ((req: LlmRequest) => LlmStep)>;
  tts?: { firstByteMs?: number; msPerChar?: number };
  vad?: { startMs?: number; stopMs?: number };
}

export function fakeEngines(s: FakeScenario): { engines: Engines & { llm: FakeLlm; stt: FakeStt; tts: FakeTts }; vad: FakeVad } {
  return {
    engines: { llm: new FakeLlm(s.llm ?? []), stt: new FakeStt(s.stt ?? { utterances: [] }), tts: new FakeTts(s.tts) },
    vad: new FakeVad(s.vad),
  };
}
