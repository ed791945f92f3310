// Local fake of AssemblyAI Universal streaming v3 (wss://streaming.assemblyai.com/v3/ws), as an adapter sees it:
// the raw key in `Authorization` (401 + JSON otherwise); speech_model required and known, sample_rate required
// (400 otherwise); `Begin` first; binary audio only in messages of 50–1000 ms (else the session closes with 3007
// "Input duration violation", as the real service does); SpeechStarted at onset; a `Turn{end_of_turn:false}`
// partial per recognised word (lower-case, unpunctuated); after `endMs` of silence `Turn{end_of_turn:true,
// turn_is_formatted:false}` and, with format_turns=true, the formatted copy `Turn{end_of_turn:true,
// turn_is_formatted:true}` (the script's own text); turn_order increments per turn. `ForceEndpoint` ends the
// turn now; `Terminate` → `Termination{audio_duration_seconds, session_duration_seconds}` then close 1000.
import { callerAudio, Listener, scriptReader, startWsFake, unformatted, type FakeConnection, type WsFake } from './_ws-fake.ts';

const MODELS = ['u3-rt-pro', 'universal-streaming-english', 'universal-streaming-multilingual', 'universal-3-5-pro'];

export async function startAssemblyAiFake(o: { apiKey?: string; script?: string[]; prefix?: string; endMs?: number } = {}): Promise<WsFake & { apiKey: string }> {
  const apiKey = o.apiKey ?? 'assemblyaikey';
  const next = scriptReader(o.script ?? []);
  const listeners = new Map<FakeConnection, Listener>();
  const forceEnd = new Map<FakeConnection, () => void>();
  const fake = await startWsFake({
    path: '/v3/ws',
    ...(o.prefix ? { prefix: o.prefix } : {}),
    authenticate: (h, q) => (h.authorization === apiKey || q.get('token') === apiKey ? null : { status: 401, body: { error: 'Invalid API key' } }),
    validate: (q) => {
      if (!MODELS.includes(q.get('speech_model') ?? '')) return { status: 400, body: { error: `Invalid speech_model: ${q.get('speech_model')}` } };
      if (!q.get('sample_rate')) return { status: 400, body: { error: 'sample_rate is required' } };
      return null;
    },
    onConnection: (c) => {
      c.send({ type: 'Begin', id: `sess-${Date.now()}`, expires_at: Math.floor(Date.now() / 1000) + 3600 });
      const formatTurns = c.query.get('format_turns') === 'true';
      let order = 0;
      const endTurn = (utterance: string) => {
        const base = { type: 'Turn', turn_order: order, end_of_turn: true, end_of_turn_confidence: 0.9, words: [] };
        c.send({ ...base, turn_is_formatted: false, transcript: unformatted(utterance) });
        if (formatTurns) c.send({ ...base, turn_is_formatted: true, transcript: utterance });
        order++;
        listener.endUtterance();
      };
      const listener = new Listener(next, {
        onset: (resumed) => {
          if (!resumed) c.send({ type: 'SpeechStarted', timestamp: Math.round(c.samples / 16) });
        },
        word: (words) => c.send({ type: 'Turn', turn_order: order, end_of_turn: false, turn_is_formatted: false, end_of_turn_confidence: 0.1, transcript: unformatted(words.join(' ')), words: [] }),
        silence: (ms, utterance) => {
          if (ms === (o.endMs ?? 400)) endTurn(utterance);
        },
      });
      listeners.set(c, listener);
      forceEnd.set(c, () => {
        if (listener.active) endTurn(listener.utterance);
      });
    },
    onMessage: (c, data, isBinary) => {
      if (isBinary) {
        const ms = data.length / 32;
        if (ms < 50 || ms > 1000) {
          c.ws.close(3007, 'Input duration violation: audio must be between 50 ms and 1000 ms');
          return;
        }
        const pcm = callerAudio(c, data);
        listeners.get(c)?.feed(pcm);
        return;
      }
      const msg = JSON.parse(data.toString('utf8')) as { type?: string };
      if (msg.type === 'ForceEndpoint') forceEnd.get(c)?.();
      if (msg.type === 'Terminate') {
        c.send({ type: 'Termination', audio_duration_seconds: Math.round(c.samples / 16000), session_duration_seconds: Math.round(c.samples / 16000) });
        c.ws.close(1000);
      }
    },
  });
  return { ...fake, apiKey };
}
