// Rendered audio of an agent's fixed texts (greetings, idle prompts), shared by every call on this media process.
// Keyed by (TTS provider, model, voice, tuning, text chunk): the same agent config renders the same audio, so the
// 50th caller of an agent hears its greeting without a synthesis. Bounded LRU in bytes (MEDIA_TTS_CACHE_MB; one
// cache per media service, i.e. per process).
//
// A render runs on its own (not on any call's abort signal): callers that ask while it is still running replay its
// audio as it arrives, so 50 callers joining in the same second cause one synthesis, not 50; a caller that hangs up
// only stops its own replay. A failed render is not kept (the next caller tries again).
// The session's TTS is wrapped (cachedTts): chunks of the fixed texts come from here, everything else (LLM
// replies) goes to the engine. prefetch() starts the greeting at join, in parallel with engine setup.
import type { TtsService, TtsSynthesizeOptions } from '../services/types.ts';
import { splitSentences } from '../pipeline/chunker.ts';

class Render {
  readonly chunks: Int16Array[] = [];
  bytes = 0;
  done = false;
  error: unknown = null;
  private waiters: Array<() => void> = [];

  push(pcm: Int16Array): void {
    this.chunks.push(pcm);
    this.bytes += pcm.byteLength;
    this.wake();
  }

  finish(err: unknown = null): void {
    this.done = true;
    this.error = err;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async *replay(signal: AbortSignal): AsyncIterable<Int16Array> {
    for (let i = 0; ; i++) {
      while (i >= this.chunks.length && !this.done) {
        if (signal.aborted) return;
        await new Promise<void>((r) => {
          this.waiters.push(r);
          signal.addEventListener('abort', () => r(), { once: true });
        });
      }
      if (signal.aborted) return;
      if (i < this.chunks.length) yield this.chunks[i]!;
      else if (this.error) throw this.error;
      else return;
    }
  }
}

export class RenderedAudioCache {
  private readonly entries = new Map<string, Render>(); // insertion order = least recently used first
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  static key(tts: Pick<TtsService, 'provider' | 'model' | 'voice'>, tuning: string, text: string): string {
    return JSON.stringify([tts.provider, tts.model, tts.voice, tuning, text]);
  }

  /** The render for this key: cached, in flight, or started now. */
  get(key: string, render: (signal: AbortSignal) => AsyncIterable<Int16Array>): Render {
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
      this.hits++;
      return found;
    }
    this.misses++;
    const r = new Render();
    this.entries.set(key, r);
    void (async () => {
      try {
        for await (const pcm of render(new AbortController().signal)) if (pcm.length) r.push(pcm);
        r.finish();
        this.bytes += r.bytes;
        this.evict();
      } catch (err) {
        r.finish(err);
        if (this.entries.get(key) === r) this.entries.delete(key);
      }
    })();
    return r;
  }

  private evict(): void {
    for (const [k, r] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (!r.done) continue;
      this.entries.delete(k);
      this.bytes -= r.bytes;
    }
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}

export interface CachedTts extends TtsService {
  /** Start rendering these texts now (their chunks, as the session will ask for them). */
  prefetch(texts: string[]): void;
}

/**
 * The call's TTS with the fixed texts served from the cache. `fixedTexts`: greetings and idle prompts;
 * `tuning`: the agent's TTS tuning (anything besides provider/model/voice that changes the audio).
 */
export function cachedTts(tts: TtsService, fixedTexts: string[], tuning: string, cache: RenderedAudioCache): CachedTts {
  const fixedChunks = new Set(fixedTexts.flatMap((t) => splitSentences(t)).map((c) => c.trim()));
  const render = (text: string) => cache.get(RenderedAudioCache.key(tts, tuning, text), (signal) => tts.synthesize(text, signal));
  // A shared render runs on the engine of the call that started it; if it fails before this call got any of its
  // audio (e.g. that call ended and closed its engine), this call synthesizes the text itself.
  async function* fromCache(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    let got = false;
    try {
      for await (const pcm of render(text).replay(signal)) {
        got = true;
        yield pcm;
      }
    } catch (err) {
      if (got || signal.aborted) throw err;
      yield* tts.synthesize(text, signal);
    }
  }
  // Everything but the synthesis of a fixed text goes straight to the call's engine: the connection opened as the
  // call connects (and its refusal), contexts per utterance, lookahead, word timings of uncached text.
  const wrapped: CachedTts = {
    provider: tts.provider,
    model: tts.model,
    voice: tts.voice,
    synthesize(text: string, signal: AbortSignal, opts?: TtsSynthesizeOptions): AsyncIterable<Int16Array> {
      if (cache.maxBytes > 0 && fixedChunks.has(text.trim())) return fromCache(text.trim(), signal);
      return tts.synthesize(text, signal, opts);
    },
    prefetch(texts: string[]) {
      if (cache.maxBytes <= 0) return;
      for (const t of texts) for (const c of splitSentences(t)) if (c.trim()) render(c.trim());
    },
  };
  if (tts.lookahead !== undefined) (wrapped as { lookahead?: number }).lookahead = tts.lookahead;
  if (tts.endUtterance) wrapped.endUtterance = (u: object) => tts.endUtterance!(u);
  if (tts.connect) wrapped.connect = () => tts.connect!();
  if (tts.close) wrapped.close = () => tts.close!();
  return wrapped;
}
