// Local fake of the Soniox real-time WebSocket (wss://stt-rt.soniox.com/transcribe-websocket), as an adapter sees
// it: `Authorization: Bearer <key>` on the upgrade (401 + JSON otherwise); the first text frame is the session
// config (unknown model → `{error_code:400,error_message}` and close); binary PCM; `{"type":"keepalive"}`;
// `{"type":"finalize"}` → the words heard so far come back final followed by a final `<fin>` token; an empty
// binary frame ends the stream (`{finished:true}` then close). Responses are `{tokens:[...], final_audio_proc_ms,
// total_audio_proc_ms}`: final tokens are sent once, the last two words of an utterance stay non-final (repeated)
// until they settle; after `endpointMs` of silence the rest is final and a final `<end>` token marks the endpoint.
// Quirk kept: with neither audio nor keepalive for `idleCloseMs` Soniox closes the socket (code 1000).
import { callerAudio, idleClose, Listener, scriptReader, startWsFake, type FakeConnection, type WsFake } from './_ws-fake.ts';

export interface SonioxFake extends WsFake {
  apiKey: string;
}

export async function startSonioxFake(o: { apiKey?: string; script?: string[]; prefix?: string; endpointMs?: number; idleCloseMs?: number } = {}): Promise<SonioxFake> {
  const apiKey = o.apiKey ?? 'sonioxkey';
  const endpointMs = o.endpointMs ?? 300;
  const next = scriptReader(o.script ?? []);
  const state = new Map<FakeConnection, { listener: Listener; finalCount: number; configured: boolean; procMs: number; armIdle: () => void }>();
  const tok = (w: string, i: number, isFinal: boolean) => ({ text: i === 0 ? w : ` ${w}`, is_final: isFinal, start_ms: i * 100, end_ms: i * 100 + 90, confidence: 0.97, language: 'en' });
  const fake = await startWsFake({
    path: '/transcribe-websocket',
    ...(o.prefix ? { prefix: o.prefix } : {}),
    authenticate: (h) => (h.authorization === `Bearer ${apiKey}` ? null : { status: 401, body: { error_code: 401, error_message: 'Invalid API key.' } }),
    onConnection: (c) => {
      const s = {
        finalCount: 0,
        configured: false,
        procMs: 0,
        armIdle: idleClose(c, o.idleCloseMs, 'No audio received'),
        listener: null as unknown as Listener,
      };
      s.listener = new Listener(next, {
        onset: () => {},
        word: (words) => {
          // all but the last two words are final (sent once); the last two are non-final
          const settled = Math.max(0, words.length - 2);
          const tokens = [];
          for (let i = s.finalCount; i < settled; i++) tokens.push(tok(words[i]!, i, true));
          s.finalCount = Math.max(s.finalCount, settled);
          for (let i = Math.max(settled, s.finalCount); i < words.length; i++) tokens.push(tok(words[i]!, i, false));
          c.send({ tokens, final_audio_proc_ms: s.procMs, total_audio_proc_ms: s.procMs });
        },
        silence: (ms, utterance) => {
          if (ms !== endpointMs) return;
          const words = utterance.split(' ');
          const tokens = [];
          for (let i = s.finalCount; i < words.length; i++) tokens.push(tok(words[i]!, i, true));
          tokens.push({ text: '<end>', is_final: true });
          c.send({ tokens, final_audio_proc_ms: s.procMs, total_audio_proc_ms: s.procMs });
          s.finalCount = 0;
          s.listener.endUtterance();
        },
      });
      state.set(c, s);
      s.armIdle();
    },
    onMessage: (c, data, isBinary) => {
      const s = state.get(c)!;
      if (!s.configured) {
        let cfg: Record<string, unknown> = {};
        try {
          cfg = isBinary ? {} : (JSON.parse(data.toString('utf8')) as Record<string, unknown>);
        } catch {
          /* not JSON */
        }
        if (!['stt-rt-v4', 'stt-rt-v5'].includes(String(cfg.model))) {
          c.send({ error_code: 400, error_message: `Invalid model: ${String(cfg.model)}` });
          c.ws.close(1000);
          return;
        }
        s.configured = true;
        return;
      }
      if (isBinary) {
        if (data.length === 0) {
          c.send({ tokens: [], final_audio_proc_ms: s.procMs, total_audio_proc_ms: s.procMs, finished: true });
          c.ws.close(1000);
          return;
        }
        const pcm = callerAudio(c, data);
        s.procMs += pcm.length / 16;
        s.armIdle();
        s.listener.feed(pcm);
        return;
      }
      const msg = JSON.parse(data.toString('utf8')) as { type?: string };
      if (msg.type === 'keepalive') s.armIdle();
      if (msg.type === 'finalize') {
        const words = s.listener.active ? s.listener.words : [];
        const tokens = [];
        for (let i = s.finalCount; i < words.length; i++) tokens.push(tok(words[i]!, i, true));
        s.finalCount = Math.max(s.finalCount, words.length);
        tokens.push({ text: '<fin>', is_final: true });
        c.send({ tokens, final_audio_proc_ms: s.procMs, total_audio_proc_ms: s.procMs });
      }
    },
  });
  return { ...fake, apiKey };
}
