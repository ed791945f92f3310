// The shape shared by TTS vendors whose WebSocket multiplexes contexts (Cartesia, Inworld): one socket per call,
// one vendor context per utterance, one flush per chunk whose completion marker (Cartesia `flush_done`, Inworld
// `flushCompleted`) ends that chunk's audio. Barge-in (the utterance's signal aborting) cancels the context on
// the vendor and drops whatever still arrives for it. A chunk that got no audio because the socket dropped is sent
// again once on the reopened socket; a refusal fails everything and sticks. Subclasses speak the messages.
// A reply's chunks are sent into its context as soon as the TTS stage releases them (lookahead), each with its own
// audio channel: the vendor generates a context's chunks in order, so audio is routed to the oldest unfinished one.
import type WebSocket from 'ws';
import type { TtsService, TtsSynthesizeOptions, TtsWordTiming } from '../types.ts';
import { AudioChannel, PcmDecoder, VendorSocket, transient, type VendorError, type VendorSocketOptions } from './vendor.ts';

export interface PendingChunk {
  channel: AudioChannel;
  decoder: PcmDecoder;
  onWords: TtsSynthesizeOptions['onWords'];
  /** where this chunk's audio starts within its context (samples); set when it becomes the chunk being generated
   *  (chunks are sent ahead, before the audio of the ones before them has come) */
  startInContext: number | null;
}

export interface VendorContext {
  id: string;
  chunks: PendingChunk[];
  /** no more text (closed by the utterance's end or cancelled) */
  closed: boolean;
  /** samples of audio received for the whole context */
  produced: number;
  detach(): void;
}

/**
 * The vendor contexts of one socket: one per utterance (or per one-off text), ids unique per adapter instance, each
 * cancelled when the signal it was opened with aborts. Shared by ContextTts and the ElevenLabs adapter.
 */
export class UtteranceContexts<C extends { id: string; closed: boolean; detach(): void }> {
  readonly byId = new Map<string, C>();
  private readonly byUtterance = new WeakMap<object, C>();
  private seq = 0;
  private readonly prefix = Math.random().toString(36).slice(2, 8);

  /** The utterance's open context; undefined for one-off text, a closed context or one a reopened socket dropped. */
  live(utterance: object | undefined): C | undefined {
    const ctx = utterance === undefined ? undefined : this.byUtterance.get(utterance);
    return ctx && !ctx.closed && this.byId.has(ctx.id) ? ctx : undefined;
  }

  /** A new context, registered under the utterance if there is one; the signal's abort runs `cancel(id)`. */
  create(signal: AbortSignal, utterance: object | undefined, cancel: (id: string) => void, make: (id: string, detach: () => void) => C): C {
    const id = `${this.prefix}-${++this.seq}`;
    const onAbort = () => cancel(id);
    signal.addEventListener('abort', onAbort, { once: true });
    const ctx = make(id, () => signal.removeEventListener('abort', onAbort));
    this.byId.set(id, ctx);
    if (utterance !== undefined) this.byUtterance.set(utterance, ctx);
    return ctx;
  }

  /** The utterance's context, open or not (endUtterance closes it). */
  of(utterance: object): C | undefined {
    return this.byUtterance.get(utterance);
  }
}

export abstract class ContextTts implements TtsService {
  abstract readonly provider: string;
  abstract readonly model: string;
  abstract readonly voice: string;
  /** the chunks of a reply go into its context as soon as they are released (the vendor generates ahead) */
  readonly lookahead = 8;
  private readonly book = new UtteranceContexts<VendorContext>();
  protected readonly contexts = this.book.byId;
  protected socket!: VendorSocket;

  protected abstract readonly vendorName: string;
  /** Send one chunk's text on a context (`first`: the context is new) and ask for its audio now (flush). */
  protected abstract sendText(ctx: VendorContext, text: string, first: boolean): void;
  /** No more text on this context (its remaining audio still comes). */
  protected abstract sendClose(ctx: VendorContext): void;
  /** Barge-in: stop the context now. */
  protected abstract sendCancel(ctx: VendorContext): void;
  protected abstract onMessage(data: WebSocket.RawData, isBinary: boolean): void;

  protected makeSocket(o: Omit<VendorSocketOptions, 'onMessage' | 'onDrop'>): VendorSocket {
    return new VendorSocket({ ...o, onMessage: (d, b) => this.onMessage(d, b), onDrop: (err) => this.failAll(err) });
  }

  async connect(): Promise<void> {
    await this.socket.open();
  }

  async *synthesize(text: string, signal: AbortSignal, opts: TtsSynthesizeOptions = {}): AsyncIterable<Int16Array> {
    if (signal.aborted || !text.trim()) return;
    for (let attempt = 0; ; attempt++) {
      await this.socket.open();
      if (signal.aborted) return;
      const chunk = this.start(text, signal, opts);
      try {
        yield* chunk.channel.read(signal);
        return;
      } catch (err) {
        const e = (err as VendorError).engineError;
        if (attempt > 0 || !e || e.fatal || chunk.channel.produced > 0 || signal.aborted) throw err;
      }
    }
  }

  private start(text: string, signal: AbortSignal, opts: TtsSynthesizeOptions): PendingChunk {
    const own = opts.utterance === undefined;
    let ctx = this.book.live(opts.utterance); // none after a reopened socket: a new context
    const first = !ctx;
    ctx ??= this.book.create(signal, opts.utterance, (id) => this.cancel(id), (id, detach) => ({ id, chunks: [], closed: false, produced: 0, detach }));
    const chunk: PendingChunk = { channel: new AudioChannel(), decoder: new PcmDecoder(), onWords: opts.onWords, startInContext: null };
    ctx.chunks.push(chunk);
    if (!this.socket.isOpen) chunk.channel.fail(transient(this.vendorName, 'connection lost'));
    else this.sendText(ctx, text, first);
    if (own) this.close_(ctx);
    return chunk;
  }

  endUtterance(utterance: object): void {
    const ctx = this.book.of(utterance);
    if (ctx) this.close_(ctx);
  }

  private close_(ctx: VendorContext): void {
    if (ctx.closed) return;
    ctx.closed = true;
    ctx.detach();
    if (this.socket.isOpen) this.sendClose(ctx);
  }

  private cancel(id: string): void {
    const ctx = this.contexts.get(id);
    if (!ctx) return;
    this.contexts.delete(id);
    ctx.detach();
    for (const c of ctx.chunks) c.channel.end();
    ctx.closed = true;
    if (this.socket.isOpen) this.sendCancel(ctx);
  }

  // ── for subclasses' message handlers ──────────────────────────────────────────────────────────────────
  /** The live context with this id (undefined: cancelled or unknown → the message is stale and dropped). */
  protected ctx(id: unknown): VendorContext | undefined {
    return typeof id === 'string' ? this.contexts.get(id) : undefined;
  }

  private pending(ctx: VendorContext): PendingChunk | undefined {
    const chunk = ctx.chunks.find((c) => !c.channel.done);
    if (chunk && chunk.startInContext === null) chunk.startInContext = ctx.produced;
    return chunk;
  }

  protected audio(ctx: VendorContext, bytes: Buffer): void {
    const chunk = this.pending(ctx);
    if (!chunk) return;
    const pcm = chunk.decoder.push(bytes);
    ctx.produced += pcm.length;
    chunk.channel.push(pcm);
  }

  /**
   * Word timings with end times in seconds from the start of the context's audio (Cartesia), or from the start of
   * the current chunk's generation (`fromChunk`: Inworld resets them at every flush).
   */
  protected wordsInContext(ctx: VendorContext, words: string[], endsS: number[], fromChunk = false): void {
    const chunk = this.pending(ctx);
    if (!chunk?.onWords) return;
    const out: TtsWordTiming[] = [];
    for (let i = 0; i < words.length; i++) {
      const end = Math.round((endsS[i] ?? 0) * 24000) - (fromChunk ? 0 : (chunk.startInContext ?? 0));
      out.push({ word: words[i] ?? '', endSample: Math.max(0, end) });
    }
    if (out.length) chunk.onWords(out);
  }

  /** The oldest pending chunk's audio is complete (flush marker). */
  protected chunkDone(ctx: VendorContext): void {
    this.pending(ctx)?.channel.end();
    if (ctx.closed && !this.pending(ctx)) this.forget(ctx);
  }

  /** The vendor finished the context. */
  protected contextDone(ctx: VendorContext): void {
    for (const c of ctx.chunks) c.channel.end();
    ctx.detach();
    this.contexts.delete(ctx.id);
  }

  private forget(ctx: VendorContext): void {
    // its final marker may still come; nothing waits for it
    setTimeout(() => {
      if (this.contexts.get(ctx.id) === ctx && !this.pending(ctx)) this.contexts.delete(ctx.id);
    }, 5000).unref();
  }

  protected failContext(ctx: VendorContext, err: VendorError): void {
    for (const c of ctx.chunks) c.channel.fail(err);
    ctx.detach();
    this.contexts.delete(ctx.id);
  }

  /** A refusal: nothing more will work. */
  protected refuse(err: VendorError): void {
    this.socket.refuse(err);
    this.failAll(err);
  }

  protected failAll(err: VendorError): void {
    for (const ctx of this.contexts.values()) {
      ctx.detach();
      for (const c of ctx.chunks) {
        // audio already heard stays; a chunk that got none fails (and is retried once by synthesize)
        if (c.channel.produced > 0 && !err.engineError.fatal) c.channel.end();
        else c.channel.fail(err);
      }
    }
    this.contexts.clear();
  }

  async close(): Promise<void> {
    for (const ctx of this.contexts.values()) for (const c of ctx.chunks) c.channel.end();
    this.contexts.clear();
    await this.socket.close();
  }
}
