// Local fake of Sarvam's streaming STT (wss://api.sarvam.ai/speech-to-text/ws), as an adapter sees it: header
// `Api-Subscription-Key` (403 + JSON otherwise); the query must name the language as `language-code` (with a
// HYPHEN; `language_code` is the field name inside replies, and a request that uses it is refused with 422) and a
// known model; audio arrives as JSON `{"audio":{"data":<base64>,"sample_rate":16000,"encoding":"audio/wav"}}`.
// With vad_signals=true it sends `{"type":"events","data":{"signal_type":"START_SPEECH"}}` at onset and
// END_SPEECH after `endMs` of silence (`highVadEndMs` when high_vad_sensitivity=true), then ONE final transcript
// per utterance `{"type":"data","data":{"transcript","language_code",...}}` (no interims). `{"type":"flush"}`
// transcribes what was heard so far right away (that part is then not repeated). Quirk kept: the socket closes
// after `idleCloseMs` (60 s on the real service) without audio.
import { callerAudio, idleClose, Listener, scriptReader, startWsFake, type FakeConnection, type WsFake } from './_ws-fake.ts';

export async function startSarvamFake(
  o: { apiKey?: string; script?: string[]; prefix?: string; endMs?: number; highVadEndMs?: number; idleCloseMs?: number } = {},
): Promise<WsFake & { apiKey: string }> {
  const apiKey = o.apiKey ?? 'sarvamkey';
  const next = scriptReader(o.script ?? []);
  const state = new Map<FakeConnection, { listener: Listener; flushedWords: number; armIdle: () => void; flush: () => void }>();
  const fake = await startWsFake({
    path: '/speech-to-text/ws',
    ...(o.prefix ? { prefix: o.prefix } : {}),
    authenticate: (h) => (h['api-subscription-key'] === apiKey ? null : { status: 403, body: { error: { message: 'Invalid API subscription key', code: 'invalid_api_key_error' } } }),
    validate: (q) => {
      if (!q.get('language-code')) return { status: 422, body: { error: { message: "query parameter 'language-code' is required", code: 'invalid_request_error' } } };
      if (q.get('model') !== 'saaras:v3') return { status: 422, body: { error: { message: `unknown model ${q.get('model')}`, code: 'invalid_request_error' } } };
      return null;
    },
    onConnection: (c) => {
      const signals = c.query.get('vad_signals') === 'true';
      const endMs = c.query.get('high_vad_sensitivity') === 'true' ? (o.highVadEndMs ?? 300) : (o.endMs ?? 600);
      const lang = c.query.get('language-code') === 'unknown' ? 'hi-IN' : c.query.get('language-code');
      const s = { listener: null as unknown as Listener, flushedWords: 0, armIdle: idleClose(c, o.idleCloseMs, 'Connection idle timeout'), flush: () => {} };
      const transcript = (text: string) => c.send({ type: 'data', data: { request_id: `r${Date.now()}`, transcript: text, language_code: lang, metrics: { audio_duration: c.samples / 16000 } } });
      s.listener = new Listener(next, {
        onset: (resumed) => {
          if (signals && !resumed) c.send({ type: 'events', data: { signal_type: 'START_SPEECH', occured_at: c.samples / 16000 } });
        },
        word: () => {},
        silence: (ms, utterance) => {
          if (ms !== endMs) return;
          if (signals) c.send({ type: 'events', data: { signal_type: 'END_SPEECH', occured_at: c.samples / 16000 } });
          const rest = utterance.split(' ').slice(s.flushedWords).join(' ');
          if (rest) transcript(rest);
          s.flushedWords = 0;
          s.listener.endUtterance();
        },
      });
      s.flush = () => {
        const words = s.listener.active ? s.listener.words : [];
        const part = words.slice(s.flushedWords).join(' ');
        s.flushedWords = words.length;
        if (part) transcript(part);
      };
      state.set(c, s);
      s.armIdle();
    },
    onMessage: (c, data, isBinary) => {
      const s = state.get(c)!;
      if (isBinary) return;
      let msg: { type?: string; audio?: { data?: string; sample_rate?: number; encoding?: string } };
      try {
        msg = JSON.parse(data.toString('utf8')) as typeof msg;
      } catch {
        c.send({ type: 'error', data: { message: 'invalid JSON', code: 'invalid_request_error' } });
        return;
      }
      if (msg.audio?.data) {
        const pcm = callerAudio(c, Buffer.from(msg.audio.data, 'base64'));
        s.armIdle();
        s.listener.feed(pcm);
        return;
      }
      if (msg.type === 'flush') s.flush();
    },
  });
  return { ...fake, apiKey };
}
