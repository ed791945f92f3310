// Local fake of Deepgram Flux (wss://api.deepgram.com/v2/listen), as an adapter sees it: `Authorization: Token
// <key>` (401 + JSON otherwise), the query checked at the upgrade (model flux-general-en / flux-general-multi,
// encoding=linear16, sample_rate; anything else 400), `Connected` first, then `TurnInfo` messages driven by the
// audio: StartOfTurn at speech onset, Update per recognised word, EagerEndOfTurn after `eagerMs` of silence (only
// when eager_eot_threshold is set), TurnResumed when speech comes back after an EagerEndOfTurn (never otherwise),
// EndOfTurn after `endMs` of silence (capped by eot_timeout_ms) with the same transcript as the eager one;
// turn_index increments after each EndOfTurn. `{"type":"CloseStream"}` → close 1000.
import { callerAudio, Listener, scriptReader, startWsFake, type FakeConnection, type WsFake } from './_ws-fake.ts';

export interface DeepgramFake extends WsFake {
  apiKey: string;
}

export async function startDeepgramFake(o: { apiKey?: string; script?: string[]; prefix?: string; eagerMs?: number; endMs?: number } = {}): Promise<DeepgramFake> {
  const apiKey = o.apiKey ?? 'deepgramkey';
  const next = scriptReader(o.script ?? []);
  const listeners = new Map<FakeConnection, Listener>();
  const fake = await startWsFake({
    path: '/v2/listen',
    ...(o.prefix ? { prefix: o.prefix } : {}),
    authenticate: (h) => (h.authorization === `Token ${apiKey}` ? null : { status: 401, body: { err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.' } }),
    validate: (q) => {
      if (!['flux-general-en', 'flux-general-multi'].includes(q.get('model') ?? '')) return { status: 400, body: { err_code: 'Bad Request', err_msg: `Unknown model ${q.get('model')}` } };
      if (q.get('encoding') !== 'linear16' || !q.get('sample_rate')) return { status: 400, body: { err_code: 'Bad Request', err_msg: 'encoding and sample_rate are required' } };
      return null;
    },
    onConnection: (c: FakeConnection) => {
      c.send({ type: 'Connected', request_id: `req-${Date.now()}`, sequence_id: 0 });
      const eagerOn = c.query.has('eager_eot_threshold');
      const endMs = Math.min(o.endMs ?? 400, Number(c.query.get('eot_timeout_ms') ?? 5000));
      const eagerMs = o.eagerMs ?? 200;
      let turn = 0;
      let eagerSent = false;
      let seq = 1;
      const info = (event: string, transcript: string) =>
        c.send({ type: 'TurnInfo', event, turn_index: turn, audio_window_start: 0, audio_window_end: c.samples / 16000, transcript, words: transcript ? transcript.split(' ').map((w) => ({ word: w, confidence: 0.95 })) : [], end_of_turn_confidence: event === 'EndOfTurn' ? 0.9 : 0.2, sequence_id: seq++ });
      const listener = new Listener(next, {
        onset: (resumed) => {
          if (!resumed) return info('StartOfTurn', '');
          if (eagerSent) {
            eagerSent = false;
            info('TurnResumed', listener.words.join(' '));
          }
        },
        word: (words) => info('Update', words.join(' ')),
        silence: (ms, utterance) => {
          if (eagerOn && ms === eagerMs && !eagerSent) {
            eagerSent = true;
            info('EagerEndOfTurn', utterance);
          }
          if (ms === endMs) {
            info('EndOfTurn', utterance);
            eagerSent = false;
            turn++;
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
      if (msg.type === 'CloseStream') c.ws.close(1000);
    },
  });
  return { ...fake, apiKey };
}
