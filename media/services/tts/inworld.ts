// Inworld TTS (docs/engines.md, TTS `inworld`). One `/tts/v1/voice:streamBidirectional` WebSocket per call
// (`Authorization: Basic <key>`), opened as the call connects, kept warm with `{send_text:{text:""}}` keepalives
// (Inworld closes a session after 10 minutes without traffic) and reopened when Inworld closes it. Every utterance
// is its own `contextId`: `{create:{voiceId, modelId, audioConfig:{audioEncoding:"LINEAR16", sampleRateHertz:24000,
// speakingRate}, temperature, timestampType:"WORD", autoMode:false}, contextId}`, then per chunk
// `{send_text:{text}, contextId}` + `{flush_context:{}, contextId}` whose `flushCompleted` ends the chunk's audio;
// the utterance's end sends `close_context` (→ `contextClosed`), barge-in sends `close_context` at once and drops
// what still arrives for that context. Replies are `{result:{contextId, audioChunk{audioContent,
// timestampInfo{wordAlignment{words, wordEndTimeSeconds}}}, flushCompleted, contextClosed, status{code,
// message}}}`; audio chunks may carry a WAV header (skipped); word times restart at every flush (chunk-relative).
// Tuning: speakingRate (0.5–1.5) → audioConfig.speakingRate; temperature (0.01–2; Inworld: (0, 2]) → temperature.
import type WebSocket from 'ws';
import { ContextTts, type VendorContext } from './context-tts.ts';
import { classifyVendorError, clamp, jsonMessage, stripWavHeader, vendorUrl } from './vendor.ts';

export interface InworldTuning {
  speakingRate?: number;
  temperature?: number;
}

export interface InworldTtsOptions {
  apiKey?: string;
  /** INWORLD_BASE_URL: http(s)://host[:port][/prefix] */
  baseUrl: string;
  model: string;
  voice: string;
  languages: string[];
  tuning?: InworldTuning;
  keepaliveMs?: number;
}

/** gRPC-style status codes Inworld reports that mean the request will never work */
const REFUSED_CODES = new Set([3, 5, 7, 8, 16]); // INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAUTHENTICATED

export class InworldTts extends ContextTts {
  readonly provider = 'inworld';
  readonly model: string;
  readonly voice: string;
  protected readonly vendorName = 'Inworld';

  constructor(private readonly o: InworldTtsOptions) {
    super();
    this.model = o.model;
    this.voice = o.voice;
    this.socket = this.makeSocket({
      vendor: this.vendorName,
      url: vendorUrl(o.baseUrl, '/tts/v1/voice:streamBidirectional', {}, true),
      headers: o.apiKey ? { Authorization: `Basic ${o.apiKey}` } : {},
      keepalive: () => {
        const open = [...this.contexts.values()].find((c) => !c.closed);
        return JSON.stringify(open ? { send_text: { text: '' }, contextId: open.id } : { send_text: { text: '' } });
      },
      keepaliveMs: o.keepaliveMs ?? 60_000,
    });
  }

  /** the create message's configuration, tuning clamped to Inworld's ranges */
  createConfig(): Record<string, unknown> {
    return {
      voiceId: this.voice,
      modelId: this.model,
      audioConfig: { audioEncoding: 'LINEAR16', sampleRateHertz: 24000, speakingRate: clamp(this.o.tuning?.speakingRate ?? 1, 0.5, 1.5) },
      temperature: clamp(this.o.tuning?.temperature ?? 1, 0.01, 2),
      timestampType: 'WORD',
      autoMode: false,
    };
  }

  protected sendText(ctx: VendorContext, text: string, first: boolean): void {
    if (first) this.socket.send(JSON.stringify({ create: this.createConfig(), contextId: ctx.id }));
    this.socket.send(JSON.stringify({ send_text: { text: text.endsWith(' ') ? text : `${text} ` }, contextId: ctx.id }));
    this.socket.send(JSON.stringify({ flush_context: {}, contextId: ctx.id }));
  }

  protected sendClose(ctx: VendorContext): void {
    this.socket.send(JSON.stringify({ close_context: {}, contextId: ctx.id }));
  }

  protected sendCancel(ctx: VendorContext): void {
    this.socket.send(JSON.stringify({ close_context: {}, contextId: ctx.id }));
  }

  protected onMessage(data: WebSocket.RawData): void {
    const msg = jsonMessage(data);
    if (!msg) return;
    const result = (msg.result ?? {}) as Record<string, unknown>;
    const id = result.contextId ?? result.context_id;
    const status = result.status as { code?: number; message?: string } | undefined;
    const topError = msg.error as { code?: number; message?: string } | string | undefined;
    if ((status?.code ?? 0) !== 0 || topError !== undefined) {
      const code = status?.code ?? (typeof topError === 'object' ? topError.code : undefined);
      const reason = status?.message ?? (typeof topError === 'object' ? topError.message : topError) ?? 'error';
      const ctx = this.ctx(id);
      // "context not found" after a cancel or a keepalive between contexts is harmless
      if (code === 5 && /context/i.test(reason) && !ctx) return;
      const err = code !== undefined && REFUSED_CODES.has(code) ? classifyVendorError(this.vendorName, `${reason} (code ${code})`, 403) : classifyVendorError(this.vendorName, reason);
      if (err.engineError.fatal) this.refuse(err);
      else if (ctx) this.failContext(ctx, err);
      return;
    }
    const ctx = this.ctx(id);
    if (!ctx) return; // closed by a barge-in, or unknown: stale, dropped
    const chunk = result.audioChunk as { audioContent?: string; timestampInfo?: { wordAlignment?: { words?: string[]; wordEndTimeSeconds?: number[] } } } | undefined;
    if (chunk?.audioContent) {
      const bytes = stripWavHeader(Buffer.from(chunk.audioContent, 'base64'));
      const w = chunk.timestampInfo?.wordAlignment;
      if (w?.words && w.wordEndTimeSeconds) this.wordsInContext(ctx, w.words, w.wordEndTimeSeconds, true);
      this.audio(ctx, bytes);
    }
    if (result.flushCompleted !== undefined) this.chunkDone(ctx);
    if (result.contextClosed !== undefined) this.contextDone(ctx);
  }
}
