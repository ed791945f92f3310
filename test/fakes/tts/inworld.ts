// Local fake of Inworld's bidirectional TTS WebSocket (`/tts/v1/voice:streamBidirectional`, `Authorization: Basic
// <key>`). Every reply is a `{result:{contextId, ..., status:{code:0}}}` envelope: `contextCreated` after `create`,
// `audioChunk{audioContent, timestampInfo{wordAlignment{words, wordStartTimeSeconds, wordEndTimeSeconds}}}` for
// a flushed buffer (the first chunk of each generation carries a 44-byte WAV header, and word times restart at 0
// with every generation, as on the real service), `flushCompleted` after it, `contextClosed` after `close_context`
// (which, as documented, first synthesizes what is left: after a barge-in the adapter must drop that audio). `{send_text:{text:""}}` is a keepalive. An unknown model or
// voice answers `status{code:5, message}`.
import type { WebSocket } from 'ws';
import { FakeServer, pcmBytes, pieces, SAMPLES_PER_CHAR, sleepUntil, toneFor } from './common.ts';

interface Ctx {
  id: string;
  config: any;
  buffer: string;
}

export const INWORLD_MODELS = new Set(['inworld-tts-1.5-max', 'inworld-tts-1.5-mini', 'inworld-tts-2']);

function wavHeader(dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(24000, 24);
  h.writeUInt32LE(48000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

export class FakeInworld {
  readonly server: FakeServer;
  readonly contexts = new Map<string, Ctx>();
  readonly generated: Array<{ context: string; text: string }> = [];
  keepalives = 0;
  private chain = Promise.resolve();

  /** `firstByteMs`: time to first byte of a generation from its flush's arrival (bench; default 0) */
  constructor(private readonly o: { apiKey?: string; gapMs?: number; firstByteMs?: number } = {}) {
    const key = o.apiKey ?? 'iw-test-key';
    this.server = new FakeServer({
      authorized: (h) => h.authorization === `Basic ${key}`,
      onMessage: (ws, msg) => {
        const readyAt = Date.now() + (o.firstByteMs ?? 0);
        this.chain = this.chain.then(() => this.onMessage(ws, msg, readyAt)).catch(() => {});
      },
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private send(ws: WebSocket, contextId: string | undefined, body: Record<string, unknown>, status = { code: 0, message: '' }): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ result: { contextId, ...body, status } }));
  }

  private async onMessage(ws: WebSocket, msg: any, readyAt: number): Promise<void> {
    const id: string | undefined = msg.contextId;
    if (msg.create) {
      const c = msg.create;
      if (!INWORLD_MODELS.has(c.modelId)) return this.send(ws, id, {}, { code: 5, message: `Model ${c.modelId} not found` });
      if (c.voiceId === 'NoSuchVoice') return this.send(ws, id, {}, { code: 5, message: `Voice ${c.voiceId} not found` });
      this.contexts.set(id!, { id: id!, config: c, buffer: '' });
      this.send(ws, id, { contextCreated: { voiceId: c.voiceId, modelId: c.modelId } });
      return;
    }
    if (msg.send_text) {
      if (msg.send_text.text === '') {
        this.keepalives++;
        return;
      }
      const ctx = id ? this.contexts.get(id) : undefined;
      if (!ctx) return this.send(ws, id, {}, { code: 5, message: `Context ${id} not found` });
      ctx.buffer += msg.send_text.text;
      return;
    }
    const ctx = id ? this.contexts.get(id) : undefined;
    if (!ctx) return;
    if (msg.flush_context) {
      if (ctx.buffer) await sleepUntil(readyAt);
      await this.generate(ws, ctx);
      this.send(ws, id, { flushCompleted: {} });
      return;
    }
    if (msg.close_context) {
      await this.generate(ws, ctx);
      this.contexts.delete(ctx.id);
      this.send(ws, id, { contextClosed: {} });
    }
  }

  private async generate(ws: WebSocket, ctx: Ctx): Promise<void> {
    const text = ctx.buffer;
    ctx.buffer = '';
    if (!text) return;
    this.generated.push({ context: ctx.id, text });
    const words: string[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    for (const m of text.matchAll(/\S+/g)) {
      words.push(m[0]);
      starts.push((m.index * SAMPLES_PER_CHAR) / 24000);
      ends.push(((m.index + m[0].length) * SAMPLES_PER_CHAR) / 24000);
    }
    const ps = pieces(toneFor(text));
    for (let i = 0; i < ps.length; i++) {
      if (ws.readyState !== ws.OPEN) return;
      const pcm = pcmBytes(ps[i]!);
      const audioContent = (i === 0 ? Buffer.concat([wavHeader(pcm.length), pcm]) : pcm).toString('base64');
      const timestampInfo = i === 0 ? { wordAlignment: { words, wordStartTimeSeconds: starts, wordEndTimeSeconds: ends } } : undefined;
      this.send(ws, ctx.id, { audioChunk: { audioContent, ...(timestampInfo ? { timestampInfo } : {}) } });
      await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
    }
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
