// Cartesia Sonic TTS (docs/engines.md, TTS `cartesia`). One `/tts/websocket` connection per call (headers `X-API-Key`
// and `Cartesia-Version`), opened as the call connects, kept warm with WebSocket pings and reopened when Cartesia
// closes it. Every utterance is its own `context_id`: each chunk is a generation request `{model_id, transcript,
// voice:{mode:"id", id}, language, context_id, output_format:{container:"raw", encoding:"pcm_s16le",
// sample_rate:24000}, continue:true, add_timestamps:true, generation_config:{speed, volume}}` followed by a flush
// (`transcript:""`, `flush:true`) whose `flush_done` ends that chunk's audio; the utterance's end sends
// `continue:false` (→ `done`), barge-in sends `{context_id, cancel:true}` and drops what still arrives for it.
// Replies: `chunk{data}`, `timestamps{word_timestamps{words, start, end}}` (seconds from the context's start: word
// end times for the interruption cut), `flush_done`, `done`, `error{status_code, error_code, message}`.
// Tuning: speed (0.6–1.5) and volume (0.5–2.0) → generation_config.
import type WebSocket from 'ws';
import { ContextTts, type VendorContext } from './context-tts.ts';
import { classifyVendorError, clamp, jsonMessage, vendorUrl } from './vendor.ts';
import { CARTESIA_VERSION } from '../stt/cartesia.ts';

export interface CartesiaTuning {
  speed?: number;
  volume?: number;
}

export interface CartesiaTtsOptions {
  apiKey?: string;
  /** CARTESIA_BASE_URL: http(s)://host[:port][/prefix] */
  baseUrl: string;
  model: string;
  voice: string;
  languages: string[];
  tuning?: CartesiaTuning;
  keepaliveMs?: number;
}

export class CartesiaTts extends ContextTts {
  readonly provider = 'cartesia';
  readonly model: string;
  readonly voice: string;
  protected readonly vendorName = 'Cartesia';

  constructor(private readonly o: CartesiaTtsOptions) {
    super();
    this.model = o.model;
    this.voice = o.voice;
    this.socket = this.makeSocket({
      vendor: this.vendorName,
      url: vendorUrl(o.baseUrl, '/tts/websocket', {}, true),
      headers: { ...(o.apiKey ? { 'X-API-Key': o.apiKey } : {}), 'Cartesia-Version': CARTESIA_VERSION },
      ...(o.keepaliveMs ? { keepaliveMs: o.keepaliveMs } : {}),
    });
  }

  /** generation_config from the tuning block, clamped to Cartesia's ranges */
  generationConfig(): { speed: number; volume: number } {
    return { speed: clamp(this.o.tuning?.speed ?? 1, 0.6, 1.5), volume: clamp(this.o.tuning?.volume ?? 1.5, 0.5, 2) };
  }

  /** the fields every request of a context repeats unchanged */
  private request(ctx: VendorContext): Record<string, unknown> {
    return {
      model_id: this.model,
      voice: { mode: 'id', id: this.voice },
      language: this.o.languages[0] ?? 'en',
      context_id: ctx.id,
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 24000 },
      add_timestamps: true,
      generation_config: this.generationConfig(),
    };
  }

  protected sendText(ctx: VendorContext, text: string): void {
    // transcripts of one context are concatenated verbatim: keep a space between chunks
    this.socket.send(JSON.stringify({ ...this.request(ctx), transcript: text.endsWith(' ') ? text : `${text} `, continue: true }));
    this.socket.send(JSON.stringify({ ...this.request(ctx), transcript: '', continue: true, flush: true }));
  }

  protected sendClose(ctx: VendorContext): void {
    this.socket.send(JSON.stringify({ ...this.request(ctx), transcript: '', continue: false }));
  }

  protected sendCancel(ctx: VendorContext): void {
    this.socket.send(JSON.stringify({ context_id: ctx.id, cancel: true }));
  }

  protected onMessage(data: WebSocket.RawData): void {
    const msg = jsonMessage(data);
    if (!msg) return;
    if (msg.type === 'error') {
      const reason = String(msg.message ?? msg.error ?? msg.title ?? 'error') + (msg.error_code ? ` (${String(msg.error_code)})` : '');
      const status = typeof msg.status_code === 'number' ? msg.status_code : undefined;
      const err = classifyVendorError(this.vendorName, reason, status);
      const ctx = this.ctx(msg.context_id);
      if (err.engineError.fatal) this.refuse(err);
      else if (ctx) this.failContext(ctx, err);
      return;
    }
    const ctx = this.ctx(msg.context_id);
    if (!ctx) return; // cancelled or unknown context: stale, dropped
    switch (msg.type) {
      case 'chunk':
        if (typeof msg.data === 'string' && msg.data) this.audio(ctx, Buffer.from(msg.data, 'base64'));
        return;
      case 'timestamps': {
        const w = msg.word_timestamps as { words?: string[]; end?: number[] } | undefined;
        if (w?.words && w.end) this.wordsInContext(ctx, w.words, w.end);
        return;
      }
      case 'flush_done':
        this.chunkDone(ctx);
        return;
      case 'done':
        this.contextDone(ctx);
        return;
    }
  }
}
