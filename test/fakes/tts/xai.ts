// Local fake of xAI's streaming TTS WebSocket (`/v1/tts?voice=&language=&codec=pcm&sample_rate=&speed=
// &optimize_streaming_latency=&text_normalization=`, `Authorization: Bearer`). One generation at a time:
// `text.delta` appends, `text.done` generates (`audio.delta{delta}` pieces, then `audio.done`), `text.clear`
// drops the buffer and stops the generation in flight (two pieces already sent still arrive) and ends it with
// `audio.done`. Refuses voices other than ara, eve, leo, rex, sal and codecs other than pcm/mp3/... at upgrade.
import type { WebSocket } from 'ws';
import { FakeServer, pcmBytes, pieces, sleepUntil, toneFor } from './common.ts';

export class FakeXai {
  readonly server: FakeServer;
  readonly generated: string[] = [];
  private buffer = '';
  private current: { cleared: boolean; grace: number } | null = null;
  private chain = Promise.resolve();

  /** `firstByteMs`: time to first byte of a generation from its `text.done` (bench; default 0) */
  constructor(private readonly o: { apiKey?: string; gapMs?: number; firstByteMs?: number } = {}) {
    const key = o.apiKey ?? 'xai-test-key';
    this.server = new FakeServer({
      authorized: (h) => h.authorization === `Bearer ${key}`,
      refuseUpgrade: (u) =>
        ['ara', 'eve', 'leo', 'rex', 'sal'].includes(u.query.get('voice') ?? 'eve') ? null : { status: 400, body: JSON.stringify({ error: `unknown voice ${u.query.get('voice')}` }) },
      onMessage: (ws, msg) => {
        if (msg.type === 'text.clear') {
          this.buffer = '';
          if (this.current) {
            this.current.cleared = true;
            this.current.grace = 2;
          }
          return;
        }
        if (msg.type === 'text.delta') {
          this.buffer += msg.delta ?? '';
          return;
        }
        if (msg.type === 'text.done') {
          const text = this.buffer;
          this.buffer = '';
          const readyAt = Date.now() + (o.firstByteMs ?? 0);
          this.chain = this.chain.then(() => sleepUntil(readyAt)).then(() => this.generate(ws, text)).catch(() => {});
        }
      },
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private async generate(ws: WebSocket, text: string): Promise<void> {
    const gen = { cleared: false, grace: 0 };
    this.current = gen;
    this.generated.push(text);
    for (const p of pieces(toneFor(text))) {
      if (ws.readyState !== ws.OPEN) return;
      if (gen.cleared && gen.grace-- <= 0) break;
      ws.send(JSON.stringify({ type: 'audio.delta', delta: pcmBytes(p).toString('base64') }));
      await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
    }
    this.current = null;
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'audio.done' }));
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
