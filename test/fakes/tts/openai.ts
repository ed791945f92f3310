// Local fake of OpenAI's speech endpoint: `POST {base}/audio/speech` (`Authorization: Bearer`) answers a chunked
// body of raw 24 kHz s16le PCM (`response_format:"pcm"`), piece by piece; `GET {base}/models` answers the model
// list. Unknown models → 404, a wrong key → 401 with OpenAI's error body. `dropNext` destroys the next speech
// request's connection before any byte (a reset pooled connection), `cutNext` after the first piece.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakeServer, pcmBytes, pieces, sleepUntil, toneFor } from './common.ts';

export const OPENAI_TTS_MODELS = new Set(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']);

export class FakeOpenAiSpeech {
  readonly server: FakeServer;
  readonly generated: string[] = [];
  dropNext = false;
  cutNext = false;
  /** speech requests whose client went away before the end (barge-in) */
  aborted = 0;

  /** `firstByteMs`: time to first byte of each speech request (bench; default 0) */
  constructor(private readonly o: { apiKey?: string; prefix?: string; gapMs?: number; firstByteMs?: number } = {}) {
    const key = o.apiKey ?? 'oa-test-key';
    this.server = new FakeServer({
      authorized: () => true,
      onMessage: () => {},
      onHttp: (req, res, body) => this.onHttp(req, res, body, key),
    });
  }

  async listen(): Promise<this> {
    await this.server.listen();
    return this;
  }

  private async onHttp(req: IncomingMessage, res: ServerResponse, body: string, key: string): Promise<void> {
    const prefix = this.o.prefix ?? '/v1';
    const json = (status: number, b: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(b));
    if (req.headers.authorization !== `Bearer ${key}`) return void json(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    if (req.method === 'GET' && req.url === `${prefix}/models`) return void json(200, { object: 'list', data: [...OPENAI_TTS_MODELS].map((id) => ({ id, object: 'model' })) });
    if (req.method !== 'POST' || req.url !== `${prefix}/audio/speech`) return void json(404, { error: { message: 'not found' } });
    const b = JSON.parse(body) as { model: string; input: string; response_format?: string };
    if (!OPENAI_TTS_MODELS.has(b.model)) return void json(404, { error: { message: `The model '${b.model}' does not exist`, code: 'model_not_found' } });
    if (this.dropNext) {
      this.dropNext = false;
      req.socket.destroy();
      return;
    }
    this.generated.push(b.input);
    await sleepUntil(Date.now() + (this.o.firstByteMs ?? 0));
    res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
    let n = 0;
    for (const p of pieces(toneFor(b.input))) {
      if (res.destroyed) {
        this.aborted++;
        return;
      }
      if (this.cutNext && n === 1) {
        this.cutNext = false;
        req.socket.destroy();
        return;
      }
      res.write(pcmBytes(p));
      n++;
      await new Promise((r) => setTimeout(r, this.o.gapMs ?? 2));
    }
    res.end();
  }

  close(): Promise<void> {
    return this.server.close();
  }
}
