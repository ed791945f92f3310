// Local fake of Sarvam's streaming TTS WebSocket (`/text-to-speech/ws?model=bulbul:v3&send_completion_event=true`,
// header `Api-Subscription-Key`). The `config` message must come first (else an error); `text` appends to the
// buffer, `flush` generates it (`{type:"audio", data:{audio, content_type}}` pieces at the configured sample rate,
// then `{type:"event", data:{event_type:"final"}}` when the query asked for completion events); `ping` keeps the
// connection alive. There is no cancel: a generation runs to its end. Unknown speakers → `error` (400).
import type { WebSocket } from 'ws';
import { FakeServer, pcmBytes, pieces, toneFor } from './common.ts';

export const SARVAM_SPEAKERS = new Set(['shubh', 'aditya', 'ritu', 'priya', 'anushka', 'abhilash', 'manisha', 'vidya', 'arya', 'karun', 'hitesh']);

interface Conn {
  config: any;
  buffer: string;
  completion: boolean;
}

export class FakeSarvam {
  readonly server: FakeServer;
  readonly generated: string[] = [];
  private readonly conns = new Map<WebSocket, Conn>();
  private chain = Promise.resolve();

  constructor(private readonly o: { apiKey?: string; gapMs?: number } = {}) {
    const key = o.apiKey ?? 'sv-test-key';
    this.server = new FakeServer({
      authorized: (h) => h['api-subscription-key'] === key,
      unauthorizedStatus: 403,
      onConnection: (ws, _n, u) => this.conns.set(ws, { config: null, buffer: '', completion: u.query.get('send_completion_event') === 'true' }),
      onMessage: (ws, msg) => {
        this.chain = this.chain.then(() => this.onMessage(ws, msg)).catch(() => {});
      },
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private error(ws: WebSocket, message: string, code = 400): void {
    ws.send(JSON.stringify({ type: 'error', data: { message, code } }));
  }

  private async onMessage(ws: WebSocket, msg: any): Promise<void> {
    const c = this.conns.get(ws);
    if (!c || ws.readyState !== ws.OPEN) return;
    if (msg.type === 'ping') return;
    if (msg.type === 'config') {
      if (!SARVAM_SPEAKERS.has(msg.data?.speaker)) return this.error(ws, `Invalid speaker: ${msg.data?.speaker}`);
      c.config = msg.data;
      return;
    }
    if (!c.config) return this.error(ws, 'config message must be sent first');
    if (msg.type === 'text') {
      c.buffer += msg.data?.text ?? '';
      return;
    }
    if (msg.type === 'flush') {
      const text = c.buffer;
      c.buffer = '';
      if (!text) return;
      this.generated.push(text);
      const rate = c.config.speech_sample_rate ?? 22050;
      for (const p of pieces(toneFor(text, rate), 100, rate)) {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(JSON.stringify({ type: 'audio', data: { audio: pcmBytes(p).toString('base64'), content_type: 'audio/pcm', request_id: 'r1' } }));
        await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
      }
      if (c.completion) ws.send(JSON.stringify({ type: 'event', data: { event_type: 'final' } }));
    }
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
