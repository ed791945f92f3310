// Local fake of Cartesia's Ink turn-detection WebSocket (wss://api.cartesia.ai/stt/turns/websocket), as an adapter
// sees it: `X-API-Key` (or `Authorization: Bearer`) and a `Cartesia-Version` header (401 / 400 + JSON otherwise);
// model / encoding / sample_rate in the query; an unknown model is accepted at the upgrade and answered with
// `{"type":"error","status_code":400,"error_code":"model_not_found"}` then close (as documented). `connected` first;
// then turn.start at onset, turn.update per recognised word (cumulative transcript), turn.eager_end after
// `eagerMs` of silence, turn.resume if speech comes back after it, turn.end after `endMs` of silence. Quirk kept:
// silence only counts while audio arrives, so when the caller's audio stops mid-turn turn.end never comes.
// `{"type":"close"}` transcribes what is buffered and closes.
import { callerAudio, Listener, scriptReader, startWsFake, type FakeConnection, type WsFake } from './_ws-fake.ts';

export async function startCartesiaSttFake(o: { apiKey?: string; script?: string[]; prefix?: string; eagerMs?: number; endMs?: number } = {}): Promise<WsFake & { apiKey: string }> {
  const apiKey = o.apiKey ?? 'cartesiakey';
  const next = scriptReader(o.script ?? []);
  const listeners = new Map<FakeConnection, Listener>();
  const fake = await startWsFake({
    path: '/stt/turns/websocket',
    ...(o.prefix ? { prefix: o.prefix } : {}),
    authenticate: (h) =>
      h['x-api-key'] === apiKey || h.authorization === `Bearer ${apiKey}` ? null : { status: 401, body: { type: 'error', status_code: 401, error_code: 'unauthorized', message: 'Invalid API key' } },
    validate: (q, h) => {
      if (!h['cartesia-version']) return { status: 400, body: { type: 'error', status_code: 400, error_code: 'missing_version', message: 'Cartesia-Version header is required' } };
      if (q.get('encoding') !== 'pcm_s16le' || !q.get('sample_rate')) return { status: 400, body: { type: 'error', status_code: 400, message: 'encoding and sample_rate are required' } };
      return null;
    },
    onConnection: (c) => {
      const request_id = `req-${Date.now()}`;
      if (!['ink-2', 'ink-whisper'].includes(c.query.get('model') ?? '')) {
        c.send({ type: 'error', title: 'Invalid model', message: 'The model is not valid, make sure it is a valid model ID.', error_code: 'model_not_found', status_code: 400, request_id });
        c.ws.close(1000);
        return;
      }
      c.send({ type: 'connected', request_id });
      let eager = false;
      const listener = new Listener(next, {
        onset: (resumed) => {
          if (!resumed) return c.send({ type: 'turn.start', request_id });
          if (eager) {
            eager = false;
            c.send({ type: 'turn.resume', request_id });
          }
        },
        word: (words) => c.send({ type: 'turn.update', transcript: words.join(' '), request_id }),
        silence: (ms, utterance) => {
          if (ms === (o.eagerMs ?? 200) && !eager) {
            eager = true;
            c.send({ type: 'turn.eager_end', transcript: utterance, request_id });
          }
          if (ms === (o.endMs ?? 400)) {
            eager = false;
            c.send({ type: 'turn.end', transcript: utterance, request_id });
            listener.endUtterance();
          }
        },
      });
      listeners.set(c, listener);
    },
    onMessage: (c, data, isBinary) => {
      if (isBinary) {
        const pcm = callerAudio(c, data);
        listeners.get(c)?.feed(pcm);
        return;
      }
      const msg = JSON.parse(data.toString('utf8')) as { type?: string };
      if (msg.type === 'close') c.ws.close(1000);
    },
  });
  return { ...fake, apiKey };
}
