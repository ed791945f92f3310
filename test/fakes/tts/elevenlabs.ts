// Local fake of ElevenLabs TTS: the multi-stream-input WebSocket (`/v1/text-to-speech/{voice}/multi-stream-input`,
// header `xi-api-key`) and the HTTP streaming endpoint (`POST /v1/text-to-speech/{voice}/stream`). Quirks kept:
// requests snake_case, replies camelCase (`audio`, `alignment{chars, charStartTimesMs, charsDurationsMs}`,
// `normalizedAlignment`, `contextId`, `isFinal`); `eleven_v3` refused (403) on both WebSocket endpoints; a context
// opens with `{text:" ", voice_settings}`, `flush:true` generates, `close_context` ends it — the audio of text
// already sent still arrives before `isFinal` (also after a barge-in: the adapter must drop it); `{text:""}` is a
// keepalive.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebSocket } from 'ws';
import { FakeServer, pcmBytes, pieces, toneFor } from './common.ts';

interface Ctx {
  id: string;
  voiceSettings: unknown;
  closing: boolean;
}
interface Job {
  ctx: Ctx;
  text: string;
  pieces: Int16Array[];
  sent: number;
  /** when its first audio may go out (arrival + firstByteMs) */
  readyAt: number;
}

export interface FakeElevenLabsOptions {
  apiKey?: string;
  /** in-band refusal after the first text of a context (e.g. quota) */
  refuseWith?: string;
  /** ms between audio pieces */
  gapMs?: number;
  /** time to first byte of each text's audio, from its arrival (bench: a vendor's generation latency; default 0) */
  firstByteMs?: number;
}

export class FakeElevenLabs {
  readonly server: FakeServer;
  readonly contexts = new Map<string, Ctx>();
  /** texts generated, in order, with their context */
  readonly generated: Array<{ context: string; text: string }> = [];
  private readonly queues = new Map<WebSocket, Job[]>();
  private readonly pumping = new Set<WebSocket>();

  constructor(private readonly o: FakeElevenLabsOptions = {}) {
    const key = o.apiKey ?? 'el-test-key';
    this.server = new FakeServer({
      authorized: (h) => h['xi-api-key'] === key,
      refuseUpgrade: (u) => (u.query.get('model_id') === 'eleven_v3' ? { status: 403, body: JSON.stringify({ detail: { status: 'model_not_supported', message: 'eleven_v3 is not available over WebSockets' } }) } : null),
      onMessage: (ws, msg) => this.onMessage(ws, msg),
      onHttp: (req, res, body) => this.onHttp(req, res, body, key),
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private onMessage(ws: WebSocket, msg: any): void {
    if (msg.close_socket) {
      ws.close(1000);
      return;
    }
    const id: string = msg.context_id ?? 'default';
    if (msg.close_context) {
      const ctx = this.contexts.get(id);
      if (!ctx) return;
      ctx.closing = true;
      this.pump(ws);
      return;
    }
    if (typeof msg.text !== 'string') return;
    let ctx = this.contexts.get(id);
    if (!ctx) {
      ctx = { id, voiceSettings: msg.voice_settings ?? null, closing: false };
      this.contexts.set(id, ctx);
    }
    if (msg.text === '' || msg.text === ' ') return; // keepalive / context initialisation
    if (this.o.refuseWith) {
      ws.send(JSON.stringify({ message: this.o.refuseWith, error: 'quota_exceeded', code: 1008 }));
      ws.close(1008, this.o.refuseWith);
      return;
    }
    this.generated.push({ context: id, text: msg.text });
    const q = this.queues.get(ws) ?? [];
    this.queues.set(ws, q);
    q.push({ ctx, text: msg.text, pieces: pieces(toneFor(msg.text)), sent: 0, readyAt: Date.now() + (this.o.firstByteMs ?? 0) });
    this.pump(ws);
  }

  private pump(ws: WebSocket): void {
    if (this.pumping.has(ws)) return;
    this.pumping.add(ws);
    const step = () => {
      const q = this.queues.get(ws) ?? [];
      // contexts closed with nothing left: final
      for (const ctx of this.contexts.values()) {
        if (ctx.closing && !q.some((j) => j.ctx === ctx)) {
          this.contexts.delete(ctx.id);
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ isFinal: true, contextId: ctx.id }));
        }
      }
      const job = q[0];
      if (!job || ws.readyState !== ws.OPEN) {
        this.pumping.delete(ws);
        return;
      }
      if (job.sent === 0 && Date.now() < job.readyAt) {
        setTimeout(step, job.readyAt - Date.now());
        return;
      }
      const pcm = job.pieces[job.sent]!;
      const charsPer = Math.round(pcm.length / 480);
      const start = job.pieces.slice(0, job.sent).reduce((a, p) => a + p.length / 480, 0);
      const chars = [...job.text.slice(start, start + charsPer)];
      const alignment = { chars, charStartTimesMs: chars.map((_, i) => i * 20), charsDurationsMs: chars.map(() => 20) };
      ws.send(JSON.stringify({ audio: pcmBytes(pcm).toString('base64'), alignment, normalizedAlignment: alignment, contextId: job.ctx.id }));
      job.sent++;
      if (job.sent >= job.pieces.length) q.shift();
      setTimeout(step, this.o.gapMs ?? 2);
    };
    step();
  }

  private async onHttp(req: IncomingMessage, res: ServerResponse, body: string, key: string): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method !== 'POST' || !/^\/v1\/text-to-speech\/[^/]+\/stream$/.test(url.pathname)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: { message: 'not found' } }));
      return;
    }
    if (req.headers['xi-api-key'] !== key) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } }));
      return;
    }
    const b = JSON.parse(body) as { text: string };
    this.generated.push({ context: 'http', text: b.text });
    res.writeHead(200, { 'content-type': 'audio/pcm' });
    for (const p of pieces(toneFor(b.text))) {
      if (res.destroyed) return;
      res.write(pcmBytes(p));
      await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
    }
    res.end();
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
