// xAI TTS (docs/engines.md, TTS `xai`). One `/v1/tts` WebSocket per call (`Authorization: Bearer`), its configuration
// in the query: voice (ara, eve, leo, rex, sal only), language (the agent's one language, else `auto`), codec=pcm,
// sample_rate=24000, speed (0.7–1.5), optimize_streaming_latency (0–2), text_normalization. Opened as the call
// connects, kept warm with WebSocket pings and reopened when xAI closes it. No model selector and no context ids:
// chunks go one at a time as `{type:"text.delta", delta}` + `{type:"text.done"}`, their audio comes as
// `audio.delta{delta}` until `audio.done`; barge-in sends `{type:"text.clear"}` and drops audio up to the cleared
// generation's `audio.done` (a new reply that comes first gets a fresh socket instead). `error` messages are
// refusals when they say so (key, quota, voice).
import type WebSocket from 'ws';
import { SequentialTts } from './sequential-tts.ts';
import { classifyVendorError, clamp, jsonMessage, refusal, vendorUrl, type VendorError } from './vendor.ts';

export const XAI_VOICES = ['ara', 'eve', 'leo', 'rex', 'sal'];
const XAI_LANGUAGE: Record<string, string> = { pt: 'pt-BR', ar: 'ar-SA', es: 'es-MX' };

export interface XaiTuning {
  speed?: number;
  optimizeStreamingLatency?: number;
  textNormalization?: boolean;
}

export interface XaiTtsOptions {
  apiKey?: string;
  /** XAI_BASE_URL: http(s)://host[:port][/prefix] */
  baseUrl: string;
  voice: string;
  languages: string[];
  tuning?: XaiTuning;
  keepaliveMs?: number;
}

/** The agent's languages → xAI's `language` (one language: its code or regional default; several: auto). */
export function xaiLanguage(languages: string[]): string {
  if (languages.length !== 1) return 'auto';
  const l = languages[0]!;
  return XAI_LANGUAGE[l] ?? l;
}

export class XaiTts extends SequentialTts {
  readonly provider = 'xai';
  readonly model = 'xai-tts';
  readonly voice: string;
  protected readonly vendorName = 'xAI';
  private readonly invalid: VendorError | null;

  constructor(private readonly o: XaiTtsOptions) {
    super();
    this.voice = o.voice.toLowerCase();
    this.invalid = XAI_VOICES.includes(this.voice) ? null : refusal(this.vendorName, `unknown voice '${o.voice}' (ara, eve, leo, rex, sal)`);
    this.socket = this.makeSocket({
      vendor: this.vendorName,
      url: vendorUrl(o.baseUrl, '/v1/tts', this.query(), true),
      headers: o.apiKey ? { Authorization: `Bearer ${o.apiKey}` } : {},
      ...(o.keepaliveMs ? { keepaliveMs: o.keepaliveMs } : {}),
    });
  }

  /** the connection's query: voice, language, format and the tuning block clamped to xAI's ranges */
  query(): Record<string, string | number | boolean> {
    const t = this.o.tuning ?? {};
    return {
      voice: this.voice,
      language: xaiLanguage(this.o.languages),
      codec: 'pcm',
      sample_rate: 24000,
      speed: clamp(t.speed ?? 1, 0.7, 1.5),
      optimize_streaming_latency: Math.round(clamp(t.optimizeStreamingLatency ?? 0, 0, 2)),
      text_normalization: t.textNormalization ?? false,
    };
  }

  override async connect(): Promise<void> {
    if (this.invalid) throw this.invalid;
    await super.connect();
  }

  override synthesize(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    if (this.invalid) {
      const err = this.invalid;
      return (async function* () {
        yield* [];
        throw err;
      })();
    }
    return super.synthesize(text, signal);
  }

  protected sendRequest(text: string): void {
    this.socket.send(JSON.stringify({ type: 'text.delta', delta: text.endsWith(' ') ? text : `${text} ` }));
    this.socket.send(JSON.stringify({ type: 'text.done' }));
  }

  protected sendCancel(): void {
    this.socket.send(JSON.stringify({ type: 'text.clear' }));
  }

  protected onMessage(data: WebSocket.RawData): void {
    const msg = jsonMessage(data);
    if (!msg) return;
    switch (msg.type) {
      case 'audio.delta':
        if (typeof msg.delta === 'string') this.audio(Buffer.from(msg.delta, 'base64'));
        return;
      case 'audio.done':
        this.done();
        return;
      case 'error': {
        const e = msg.error as { message?: string; code?: string | number } | string | undefined;
        const reason = String(msg.message ?? (typeof e === 'object' ? (e.message ?? e.code) : e) ?? 'error');
        const status = typeof msg.code === 'number' ? msg.code : typeof msg.status === 'number' ? msg.status : undefined;
        this.error(classifyVendorError(this.vendorName, reason, status));
        return;
      }
    }
  }
}
