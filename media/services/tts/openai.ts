// OpenAI speech (docs/engines.md, TTS `openai`): `POST {OPENAI_BASE_URL}/audio/speech` (`Authorization: Bearer`) with
// `{model, input, voice, response_format:"pcm", speed}` (+ `instructions` naming the language for gpt-4o-mini-tts
// when the agent's primary language is not English; tts-1* take no instructions); the answer is a chunked body of
// raw 24 kHz s16le PCM, streamed as it arrives. One request per chunk: the request is the context (barge-in aborts
// it). The next chunk's request runs while the current one streams (lookahead 1: OpenAI takes parallel requests and
// has no context to carry, so one chunk ahead on a second pooled connection). Both connections are opened as the
// call connects (two `GET /models`, which also check the key) and kept in a keep-alive pool that idle-time
// `GET /models` keep warm. A request reset before any audio is retried once;
// 401/403/404 (key, model, voice) are fatal, 429/5xx transient. Tuning: speed (0.5–2.0; OpenAI 0.25–4.0) → speed.
import { Agent, fetch as undiciFetch } from 'undici';
import type { TtsService } from '../types.ts';
import { readPcmBody } from './elevenlabs.ts';
import { classifyVendorError, clamp, errorText, transient, type VendorError } from './vendor.ts';

export interface OpenAiTtsOptions {
  apiKey?: string;
  /** OPENAI_BASE_URL, e.g. https://api.openai.com/v1 (the speech path follows it) */
  baseUrl: string;
  model: string;
  voice: string;
  languages: string[];
  tuning?: { speed?: number };
  /** idle keep-warm period (default 50 s) */
  keepaliveMs?: number;
}

const VENDOR = 'OpenAI';
const LANGUAGE_NAMES: Record<string, string> = {
  hi: 'Hindi', ta: 'Tamil', mr: 'Marathi', es: 'Spanish', fr: 'French', ja: 'Japanese', de: 'German', zh: 'Mandarin Chinese', ar: 'Arabic',
  pt: 'Portuguese', ru: 'Russian', id: 'Indonesian', ur: 'Urdu', kn: 'Kannada', ne: 'Nepali', gu: 'Gujarati', te: 'Telugu', bn: 'Bengali',
  ml: 'Malayalam', pa: 'Punjabi', or: 'Odia',
};

export class OpenAiTts implements TtsService {
  readonly provider = 'openai';
  readonly model: string;
  readonly voice: string;
  /** the next chunk's request runs while the current one streams (one chunk ahead) */
  readonly lookahead = 1;
  // two connections per call: the chunk being played and the one synthesized ahead of it
  private readonly agent = new Agent({ keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000, connections: 2 });
  private readonly root: string;
  private keepTimer: NodeJS.Timeout | null = null;
  private lastUse = 0;
  private fatal: VendorError | null = null;
  private closed = false;

  constructor(private readonly o: OpenAiTtsOptions) {
    this.model = o.model;
    this.voice = o.voice;
    this.root = o.baseUrl.replace(/\/+$/, '');
  }

  private headers(): Record<string, string> {
    return this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {};
  }

  /** the request body for one chunk */
  body(text: string): Record<string, unknown> {
    const lang = this.o.languages[0] ?? 'en';
    const instructions = this.model.startsWith('tts-1') || lang === 'en' ? undefined : `Speak in ${LANGUAGE_NAMES[lang] ?? lang}.`;
    return {
      model: this.model,
      input: text,
      voice: this.voice,
      response_format: 'pcm',
      speed: clamp(this.o.tuning?.speed ?? 1, 0.25, 4),
      ...(instructions ? { instructions } : {}),
    };
  }

  async connect(): Promise<void> {
    await this.warmBoth();
    if (!this.keepTimer && !this.closed) {
      this.keepTimer = setInterval(() => {
        if (Date.now() - this.lastUse >= (this.o.keepaliveMs ?? 50_000) / 2) void this.warmBoth().catch(() => {});
      }, this.o.keepaliveMs ?? 50_000);
      this.keepTimer.unref();
    }
  }

  /** Two GET /models at once: open (or keep) both pooled connections, the second one being for the chunk
   *  synthesized ahead, so no chunk pays a handshake. */
  private async warmBoth(): Promise<void> {
    await Promise.all([this.warm(), this.warm()]);
  }

  /** GET /models on a pooled connection: opens (or keeps) it, and checks the key. */
  private async warm(): Promise<void> {
    if (this.fatal) throw this.fatal;
    let res: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      res = await undiciFetch(`${this.root}/models`, { headers: this.headers(), dispatcher: this.agent, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw transient(VENDOR, (err as Error).message);
    }
    const body = await res.text().catch(() => '');
    this.lastUse = Date.now();
    if (res.status === 401 || res.status === 403) {
      this.fatal = classifyVendorError(VENDOR, `HTTP ${res.status}: ${errorText(body)}`, res.status);
      throw this.fatal;
    }
  }

  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    if (signal.aborted || !text.trim()) return;
    if (this.fatal) throw this.fatal;
    for (let attempt = 0; ; attempt++) {
      let res: Awaited<ReturnType<typeof undiciFetch>>;
      try {
        res = await undiciFetch(`${this.root}/audio/speech`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...this.headers() },
          body: JSON.stringify(this.body(text)),
          signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
          dispatcher: this.agent,
        });
      } catch (err) {
        if (signal.aborted) return;
        if (attempt === 0) continue; // a pooled connection the server had closed: once more on a fresh one
        throw transient(VENDOR, (err as Error).message);
      }
      this.lastUse = Date.now();
      if (!res.ok) {
        const body = await res.text().catch(() => '');
        const err = classifyVendorError(VENDOR, `HTTP ${res.status}${body ? `: ${errorText(body)}` : ''}`, res.status);
        if (err.engineError.fatal) this.fatal = err;
        throw err;
      }
      let produced = 0;
      try {
        for await (const pcm of readPcmBody(res as unknown as Response, signal, VENDOR)) {
          produced += pcm.length;
          yield pcm;
        }
        return;
      } catch (err) {
        if (signal.aborted) return;
        // reset before any audio: once more; after some audio the chunk ends where it broke
        if (produced === 0 && attempt === 0) continue;
        if (produced > 0) return;
        throw err;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.keepTimer) clearInterval(this.keepTimer);
    await this.agent.close().catch(() => {});
  }
}
