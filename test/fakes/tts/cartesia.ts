// Local fake of Cartesia's TTS WebSocket (`/tts/websocket`, `X-API-Key` or `Authorization: Bearer`, plus
// `Cartesia-Version`). Per context: transcripts with `continue:true` are buffered and concatenated verbatim, a
// `flush:true` request generates the buffer (`chunk` messages with base64 PCM, `timestamps` with word end times in
// seconds from the context's start when `add_timestamps`) then `flush_done` with an increasing `flush_id`;
// `continue:false` generates what is left and answers `done`; `{cancel:true}` stops the context (two pieces
// already in flight still arrive, like the real service). An unknown model → `error` (model_not_found, 404).
import type { WebSocket } from 'ws';
import { FakeServer, pcmBytes, pieces, SAMPLES_PER_CHAR, sleepUntil, toneFor } from './common.ts';

interface Ctx {
  id: string;
  buffer: string;
  /** characters generated so far (time offset of the next audio) */
  chars: number;
  flushId: number;
  cancelled: boolean;
  grace: number;
  first: any;
}

export class FakeCartesia {
  readonly server: FakeServer;
  readonly contexts = new Map<string, Ctx>();
  readonly generated: Array<{ context: string; text: string }> = [];
  private chain = Promise.resolve();

  /** `firstByteMs`: time to first byte of a generation from its flush's arrival (bench; default 0) */
  constructor(private readonly o: { apiKey?: string; gapMs?: number; firstByteMs?: number } = {}) {
    const key = o.apiKey ?? 'ca-test-key';
    this.server = new FakeServer({
      authorized: (h) => (h['x-api-key'] === key || h.authorization === `Bearer ${key}`) && typeof h['cartesia-version'] === 'string',
      onMessage: (ws, msg) => {
        if (msg.cancel) {
          const ctx = this.contexts.get(msg.context_id);
          if (ctx) {
            ctx.cancelled = true;
            ctx.grace = 2;
          }
          return;
        }
        // requests are handled in order, each after the previous one's audio went out
        const readyAt = Date.now() + (o.firstByteMs ?? 0);
        this.chain = this.chain.then(() => this.onMessage(ws, msg, readyAt)).catch(() => {});
      },
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private async onMessage(ws: WebSocket, msg: any, readyAt: number): Promise<void> {
    const id: string = msg.context_id;
    if (msg.model_id !== 'sonic-3' && msg.model_id !== 'sonic-2') {
      ws.send(JSON.stringify({ type: 'error', done: true, status_code: 404, error_code: 'model_not_found', title: 'Invalid model', message: 'The model is not valid', context_id: id }));
      return;
    }
    let ctx = this.contexts.get(id);
    if (!ctx) {
      ctx = { id, buffer: '', chars: 0, flushId: 0, cancelled: false, grace: 0, first: msg };
      this.contexts.set(id, ctx);
    }
    if (ctx.cancelled) return;
    ctx.buffer += msg.transcript ?? '';
    if (msg.flush || msg.continue === false) {
      if (ctx.buffer) await sleepUntil(readyAt);
      await this.generate(ws, ctx, msg.add_timestamps === true);
      if (msg.flush && !ctx.cancelled) ws.send(JSON.stringify({ type: 'flush_done', done: false, flush_done: true, flush_id: ++ctx.flushId, status_code: 206, context_id: id }));
      if (msg.continue === false && !ctx.cancelled) {
        ws.send(JSON.stringify({ type: 'done', done: true, status_code: 200, context_id: id }));
        this.contexts.delete(id);
      }
    }
  }

  private async generate(ws: WebSocket, ctx: Ctx, timestamps: boolean): Promise<void> {
    const text = ctx.buffer;
    ctx.buffer = '';
    if (!text) return;
    this.generated.push({ context: ctx.id, text });
    const base = ctx.chars;
    if (timestamps) {
      const words: string[] = [];
      const start: number[] = [];
      const end: number[] = [];
      for (const m of text.matchAll(/\S+/g)) {
        words.push(m[0]);
        start.push(((base + m.index) * SAMPLES_PER_CHAR) / 24000);
        end.push(((base + m.index + m[0].length) * SAMPLES_PER_CHAR) / 24000);
      }
      ws.send(JSON.stringify({ type: 'timestamps', done: false, status_code: 206, context_id: ctx.id, word_timestamps: { words, start, end } }));
    }
    ctx.chars += text.length;
    for (const p of pieces(toneFor(text))) {
      if (ws.readyState !== ws.OPEN) return;
      if (ctx.cancelled && ctx.grace-- <= 0) return;
      ws.send(JSON.stringify({ type: 'chunk', data: pcmBytes(p).toString('base64'), done: false, status_code: 206, step_time: 1, context_id: ctx.id }));
      await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
    }
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
