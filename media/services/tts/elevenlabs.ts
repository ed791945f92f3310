// ElevenLabs TTS (docs/engines.md, TTS `elevenlabs`). One multi-stream-input WebSocket per call
// (`/v1/text-to-speech/{voice}/multi-stream-input`, header `xi-api-key`, query model_id, output_format=pcm_24000,
// auto_mode, apply_text_normalization, inactivity_timeout, sync_alignment, language_code on the v2.5 models), opened
// as the call connects and reopened when ElevenLabs closes it. Every utterance is its own `context_id`: the first
// chunk opens it with `{text:" ", voice_settings, context_id}`, each chunk is `{text, context_id, flush:true}`, the
// utterance's end and barge-in send `close_context` (barge-in also drops what still arrives). Requests are snake_case,
// replies camelCase (`audio`, `alignment{chars, charStartTimesMs, charsDurationsMs}`, `contextId`, `isFinal`); a
// chunk's audio is complete once the alignment covers its characters (or its context is final), and alignment gives
// the word end times for the interruption cut. `eleven_v3` is refused on both WebSocket endpoints, so it is served by
// `POST /v1/text-to-speech/{voice}/stream?output_format=pcm_24000` (raw PCM), one request per chunk. Tuning:
// stability, similarity_boost, style, use_speaker_boost, speed (0.7–1.2) → voice_settings; autoMode, applyTextNormalization
// → query; eleven_v3 and eleven_turbo_v4 read only stability (eleven_v3 accepts 0, 0.5 or 1: the nearest is sent).
import type WebSocket from 'ws';
import type { TtsService, TtsSynthesizeOptions } from '../types.ts';
import { UtteranceContexts } from './context-tts.ts';
import { AudioChannel, CharAligner, PcmDecoder, VendorSocket, classifyVendorError, clamp, errorText, jsonMessage, transient, vendorUrl, type VendorError } from './vendor.ts';

export interface ElevenLabsTuning {
  stability?: number;
  similarityBoost?: number;
  style?: number;
  useSpeakerBoost?: boolean;
  speed?: number;
  autoMode?: boolean;
  applyTextNormalization?: 'auto' | 'on' | 'off';
}

export interface ElevenLabsOptions {
  apiKey?: string;
  /** ELEVENLABS_BASE_URL: http(s)://host[:port][/prefix] */
  baseUrl: string;
  model: string;
  voice: string;
  languages: string[];
  tuning?: ElevenLabsTuning;
  keepaliveMs?: number;
  /** a chunk whose alignment never covers its text ends after this long without audio (safety net) */
  chunkIdleMs?: number;
}

const VENDOR = 'ElevenLabs';
const STABILITY_ONLY = new Set(['eleven_v3', 'eleven_turbo_v4']);
export const HTTP_ONLY_MODELS = new Set(['eleven_v3']);
const LANGUAGE_MODELS = new Set(['eleven_flash_v2_5', 'eleven_turbo_v2_5']);

interface Chunk {
  channel: AudioChannel;
  decoder: PcmDecoder;
  aligner: CharAligner;
  /** non-space characters of the chunk's text, and all characters as sent (with its trailing space) */
  target: number;
  length: number;
  covered: number;
  coveredAll: number;
  onWords: TtsSynthesizeOptions['onWords'];
  idle: NodeJS.Timeout | null;
}
interface Context {
  id: string;
  chunks: Chunk[];
  closed: boolean;
  detach: () => void;
}

const nonSpace = (s: string) => s.replace(/\s+/g, '').length;

export class ElevenLabsTts implements TtsService {
  readonly provider = 'elevenlabs';
  readonly model: string;
  readonly voice: string;
  private readonly socket: VendorSocket | null;
  /** WebSocket: a reply's chunks go into its context at once (8 ahead); HTTP (eleven_v3): one request ahead */
  readonly lookahead: number;
  private readonly book = new UtteranceContexts<Context>();
  private readonly contexts = this.book.byId;

  constructor(private readonly o: ElevenLabsOptions) {
    this.model = o.model;
    this.voice = o.voice;
    this.socket = HTTP_ONLY_MODELS.has(o.model)
      ? null
      : new VendorSocket({
          vendor: VENDOR,
          url: vendorUrl(
            o.baseUrl,
            `/v1/text-to-speech/${encodeURIComponent(o.voice)}/multi-stream-input`,
            {
              model_id: o.model,
              output_format: 'pcm_24000',
              auto_mode: o.tuning?.autoMode ?? true,
              apply_text_normalization: o.tuning?.applyTextNormalization ?? 'auto',
              inactivity_timeout: 180,
              sync_alignment: true,
              // only the v2.5 models accept a language to enforce (others refuse the parameter)
              language_code: LANGUAGE_MODELS.has(o.model) ? o.languages[0] : undefined,
            },
            true,
          ),
          headers: o.apiKey ? { 'xi-api-key': o.apiKey } : {},
          onMessage: (d) => this.onMessage(d),
          onDrop: (err) => this.failAll(err),
          // an open context waiting for text (a tool running) is kept alive with an empty text; else a ping
          keepalive: () => {
            const open = [...this.contexts.values()].find((c) => !c.closed);
            return open ? JSON.stringify({ text: '', context_id: open.id }) : null;
          },
          ...(o.keepaliveMs ? { keepaliveMs: o.keepaliveMs } : {}),
        });
    this.lookahead = this.socket ? 8 : 1;
  }

  /** voice_settings as ElevenLabs reads them for this model */
  voiceSettings(): Record<string, number | boolean> {
    const t = this.o.tuning ?? {};
    const stability = clamp(t.stability ?? 0.5, 0, 1);
    if (STABILITY_ONLY.has(this.model)) {
      // eleven_v3: 0 (creative), 0.5 (natural), 1 (robust)
      return { stability: this.model === 'eleven_v3' ? Math.round(stability * 2) / 2 : stability };
    }
    return {
      stability,
      similarity_boost: clamp(t.similarityBoost ?? 0.75, 0, 1),
      style: clamp(t.style ?? 0, 0, 1),
      use_speaker_boost: t.useSpeakerBoost ?? true,
      speed: clamp(t.speed ?? 1, 0.7, 1.2),
    };
  }

  async connect(): Promise<void> {
    if (this.socket) await this.socket.open();
  }

  synthesize(text: string, signal: AbortSignal, opts: TtsSynthesizeOptions = {}): AsyncIterable<Int16Array> {
    if (!this.socket) return this.synthesizeHttp(text, signal);
    return this.synthesizeWs(this.socket, text, signal, opts);
  }

  private async *synthesizeWs(socket: VendorSocket, text: string, signal: AbortSignal, opts: TtsSynthesizeOptions): AsyncIterable<Int16Array> {
    if (signal.aborted || !text.trim()) return;
    // a chunk that got no audio because the connection dropped is sent once more on the reopened connection
    for (let attempt = 0; ; attempt++) {
      await socket.open();
      if (signal.aborted) return;
      const chunk = this.send(socket, text, signal, opts);
      try {
        yield* chunk.channel.read(signal);
        return;
      } catch (err) {
        const e = (err as VendorError).engineError;
        if (attempt > 0 || !e || e.fatal || chunk.channel.produced > 0 || signal.aborted) throw err;
      } finally {
        if (chunk.idle) clearTimeout(chunk.idle);
      }
    }
  }

  private send(socket: VendorSocket, text: string, signal: AbortSignal, opts: TtsSynthesizeOptions): Chunk {
    const own = opts.utterance === undefined;
    let ctx = this.book.live(opts.utterance); // none after the socket was reopened meanwhile
    const chunk: Chunk = { channel: new AudioChannel(), decoder: new PcmDecoder(), aligner: new CharAligner(), target: nonSpace(text), length: text.endsWith(' ') ? text.length : text.length + 1, covered: 0, coveredAll: 0, onWords: opts.onWords, idle: null };
    if (!ctx) {
      ctx = this.book.create(signal, opts.utterance, (id) => this.cancel(id), (id, detach) => ({ id, chunks: [], closed: false, detach }));
      socket.send(JSON.stringify({ text: ' ', voice_settings: this.voiceSettings(), context_id: ctx.id }));
    }
    ctx.chunks.push(chunk);
    const sent = socket.send(JSON.stringify({ text: text.endsWith(' ') ? text : `${text} `, context_id: ctx.id, flush: true }));
    if (!sent) chunk.channel.fail(transient(VENDOR, 'connection lost'));
    if (own) this.endContext(ctx);
    return chunk;
  }

  endUtterance(utterance: object): void {
    const ctx = this.book.of(utterance);
    if (ctx) this.endContext(ctx);
  }

  private endContext(ctx: Context): void {
    if (ctx.closed) return;
    ctx.closed = true;
    ctx.detach();
    this.socket?.send(JSON.stringify({ context_id: ctx.id, close_context: true }));
    if (!ctx.chunks.some((c) => !c.channel.done)) this.contexts.delete(ctx.id);
  }

  /** Barge-in: close the context now; anything still arriving for it is dropped. */
  private cancel(id: string): void {
    const ctx = this.contexts.get(id);
    if (!ctx) return;
    this.contexts.delete(id);
    ctx.detach();
    for (const c of ctx.chunks) c.channel.end();
    if (!ctx.closed) {
      ctx.closed = true;
      this.socket?.send(JSON.stringify({ context_id: id, close_context: true }));
    }
  }

  private onMessage(data: WebSocket.RawData): void {
    const msg = jsonMessage(data);
    if (!msg) return;
    const id = typeof msg.contextId === 'string' ? msg.contextId : typeof msg.context_id === 'string' ? msg.context_id : null;
    if (msg.error !== undefined || (msg.message !== undefined && msg.audio === undefined && msg.isFinal === undefined)) {
      const reason = String(msg.message ?? msg.error);
      const err = classifyVendorError(VENDOR, reason);
      if (err.engineError.fatal) {
        this.socket?.refuse(err);
        this.failAll(err);
      } else if (id && this.contexts.has(id)) {
        for (const c of this.contexts.get(id)!.chunks) c.channel.fail(err);
        this.contexts.delete(id);
      }
      return;
    }
    if (!id) return;
    const ctx = this.contexts.get(id);
    if (!ctx) return; // a cancelled (or unknown) context: stale, dropped
    const chunk = ctx.chunks.find((c) => !c.channel.done);
    if (typeof msg.audio === 'string' && msg.audio && chunk) {
      const offset = chunk.channel.produced;
      const pcm = chunk.decoder.pushBase64(msg.audio);
      const al = (msg.alignment ?? msg.normalizedAlignment) as { chars?: string[]; charStartTimesMs?: number[]; charsDurationsMs?: number[]; charDurationsMs?: number[] } | null | undefined;
      if (al?.chars) {
        const words = chunk.aligner.push(al.chars, al.charStartTimesMs ?? [], al.charsDurationsMs ?? al.charDurationsMs ?? [], offset);
        if (words.length) chunk.onWords?.(words);
        chunk.covered += nonSpace(al.chars.join(''));
        chunk.coveredAll += al.chars.join('').length;
      }
      chunk.channel.push(pcm);
      // complete once the alignment covered every character sent; when only the trailing space is missing
      // (the vendor may not align it), shortly after the last word
      if (chunk.covered >= chunk.target && chunk.coveredAll >= chunk.length) this.completeChunk(ctx, chunk);
      else this.armIdle(ctx, chunk, chunk.covered >= chunk.target ? 300 : (this.o.chunkIdleMs ?? 1500));
    }
    if (msg.isFinal === true) {
      for (const c of ctx.chunks) this.completeChunk(ctx, c);
      ctx.detach();
      this.contexts.delete(id);
    }
  }

  private completeChunk(ctx: Context, chunk: Chunk): void {
    if (chunk.channel.done) return;
    if (chunk.idle) clearTimeout(chunk.idle);
    const words = chunk.aligner.flush();
    if (words.length) chunk.onWords?.(words);
    chunk.channel.end();
    if (ctx.closed && !ctx.chunks.some((c) => !c.channel.done)) {
      // closed context: its isFinal may still come, nothing waits for it
      setTimeout(() => this.contexts.delete(ctx.id), 5000).unref();
    }
  }

  private armIdle(ctx: Context, chunk: Chunk, ms: number): void {
    if (chunk.idle) clearTimeout(chunk.idle);
    chunk.idle = setTimeout(() => this.completeChunk(ctx, chunk), ms);
    chunk.idle.unref();
  }

  private failAll(err: VendorError): void {
    for (const ctx of this.contexts.values()) {
      ctx.detach();
      for (const c of ctx.chunks) {
        // audio already heard stays; a chunk that got nothing is retried by nobody: report it (transient → logged)
        if (c.channel.produced > 0 && !err.engineError.fatal) c.channel.end();
        else c.channel.fail(err);
      }
    }
    this.contexts.clear();
  }

  private async *synthesizeHttp(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    if (signal.aborted || !text.trim()) return;
    const url = vendorUrl(this.o.baseUrl, `/v1/text-to-speech/${encodeURIComponent(this.voice)}/stream`, { output_format: 'pcm_24000' });
    const t = this.o.tuning ?? {};
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'audio/pcm', ...(this.o.apiKey ? { 'xi-api-key': this.o.apiKey } : {}) },
        body: JSON.stringify({
          text,
          model_id: this.model,
          voice_settings: this.voiceSettings(),
          apply_text_normalization: t.applyTextNormalization ?? 'auto',
          ...(this.o.languages[0] && LANGUAGE_MODELS.has(this.model) ? { language_code: this.o.languages[0] } : {}),
        }),
        signal,
      });
    } catch (err) {
      if (signal.aborted) return;
      throw transient(VENDOR, (err as Error).message);
    }
    if (!res.ok) {
      const body = await res.text().catch(() => '');
      throw classifyVendorError(VENDOR, `HTTP ${res.status}${body ? `: ${errorText(body)}` : ''}`, res.status);
    }
    yield* readPcmBody(res, signal, VENDOR);
  }

  async close(): Promise<void> {
    for (const ctx of this.contexts.values()) for (const c of ctx.chunks) c.channel.end();
    this.contexts.clear();
    this.socket?.send(JSON.stringify({ close_socket: true }));
    await this.socket?.close();
  }
}

/** A chunked HTTP body of raw 24 kHz s16le PCM, yielded as it arrives (odd bytes carried over). */
export async function* readPcmBody(res: Response, signal: AbortSignal, vendor: string): AsyncIterable<Int16Array> {
  if (!res.body) return;
  const decoder = new PcmDecoder();
  const reader = res.body.getReader();
  const onAbort = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      let r: Awaited<ReturnType<typeof reader.read>>;
      try {
        r = await reader.read();
      } catch (err) {
        if (signal.aborted) return;
        throw transient(vendor, `stream broke: ${(err as Error).message}`);
      }
      if (r.done || signal.aborted) return;
      const pcm = decoder.push(Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength));
      if (pcm.length) yield pcm;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    reader.releaseLock?.();
  }
}
