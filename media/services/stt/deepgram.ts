// Deepgram Flux STT (docs/engines.md, STT `deepgram`): wss://api.deepgram.com/v2/listen with `Authorization: Token
// <key>`. Everything is in the query: model (flux-general-en, or flux-general-multi with repeated language_hint),
// encoding=linear16, sample_rate, eot_threshold, eager_eot_threshold (not in the agent's tuning block: 0.2 below
// eot_threshold, floor 0.3, Flux's minimum, so the speculative reply has a head start), eot_timeout_ms, keyterm
// (repeated). Binary audio in, in 80 ms messages (the size Deepgram recommends for Flux; fewer socket writes too)
// except the quiet second after speech, sent frame by frame because Flux's end of turn falls there; silence goes out
// when the caller's audio stops (250 ms idle), since Flux needs audio to end a turn; `{"type":"CloseStream"}` ends
// the stream. Flux's own turn model decides: finalize() sends nothing (ForceEndTurn would override it with our VAD).
// Out: `Connected`, then `TurnInfo{event, turn_index, transcript}` with event StartOfTurn → speech_started, Update →
// interim, EagerEndOfTurn → eager_turn_end (the speculative reply starts), TurnResumed (only after an
// EagerEndOfTurn) → turn_resumed, EndOfTurn → turn_end; `Error{code, description}`.
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { clamp, jsonFrame, openWithin, refusedStream, SttSocket, termsOf, TurnTracker, vendorWsUrl } from './ws-session.ts';

export interface DeepgramBlock {
  eotThreshold?: number;
  eotTimeoutMs?: number;
  keyterms?: string;
}

export interface DeepgramOptions {
  apiKey?: string;
  baseUrl: string;
  model: string;
  block?: DeepgramBlock;
  /** silence after this long without caller audio (default 250) */
  keepaliveMs?: number;
}

const MULTI_LANGS = ['en', 'es', 'fr', 'de', 'hi', 'ru', 'pt', 'ja'];

/** flux-general-en unless the agent speaks something else (then flux-general-multi). */
export function deepgramDefaultModel(languages: string[]): string {
  return languages.some((l) => l !== 'en') ? 'flux-general-multi' : 'flux-general-en';
}

export function deepgramQuery(model: string, block: DeepgramBlock, languages: string[], keyterms: string[]): Array<[string, string | number]> {
  const eot = Math.round(clamp(block.eotThreshold, 0.5, 1.0, 0.7) * 100) / 100;
  const eager = Math.round(Math.max(0.3, Math.min(eot, eot - 0.2)) * 100) / 100;
  const q: Array<[string, string | number]> = [
    ['model', model],
    ['encoding', 'linear16'],
    ['sample_rate', 16000],
    ['eot_threshold', eot],
    ['eager_eot_threshold', eager],
    ['eot_timeout_ms', Math.round(clamp(block.eotTimeoutMs, 500, 60000, 2000))],
  ];
  for (const k of termsOf(keyterms)) q.push(['keyterm', k]);
  if (model === 'flux-general-multi') for (const l of languages.filter((x) => MULTI_LANGS.includes(x))) q.push(['language_hint', l]);
  return q;
}

export class DeepgramStt implements SttService {
  readonly provider = 'deepgram';
  readonly model: string;
  readonly hasTurnDetection = true;
  constructor(private readonly o: DeepgramOptions) {
    this.model = o.model;
  }

  async open(opts: SttOptions): Promise<SttStream> {
    const emit = (ev: SttEvent) => opts.onEvent(ev);
    if (!this.o.apiKey) return refusedStream(emit, 'deepgram', 'DEEPGRAM_API_KEY is not set');
    const turn = new TurnTracker(emit);
    const sock = new SttSocket({
      vendor: 'deepgram',
      url: vendorWsUrl(this.o.baseUrl, '/v2/listen', deepgramQuery(this.model, this.o.block ?? {}, opts.languages, opts.keyterms)),
      headers: { Authorization: `Token ${this.o.apiKey}` },
      emit,
      onOpen: (_s, reconnect) => {
        if (reconnect) turn.reset();
      },
      chunk: { ms: 80, liveAfterSpeechMs: 1000 },
      keepalive: { idleMs: this.o.keepaliveMs ?? 250, send: (s) => s.sendSilence(this.o.keepaliveMs ?? 250) },
      closeMessage: () => JSON.stringify({ type: 'CloseStream' }),
      isFatalClose: (code) => code === 1008,
      onMessage: (data, isBinary) => {
        const msg = jsonFrame<{ type?: string; event?: string; transcript?: string; code?: string; description?: string }>(data, isBinary);
        if (!msg) return;
        if (msg.type === 'Error') {
          const reason = `${msg.code ?? ''} ${msg.description ?? ''}`.trim();
          if (/auth|credit|quota|insufficient|permission|forbidden|model|invalid|unsupported/i.test(reason)) sock.refuse(reason || 'Error');
          return; // other errors: the vendor closes next and the socket reconnects
        }
        if (msg.type !== 'TurnInfo') return;
        const text = (msg.transcript ?? '').trim();
        switch (msg.event) {
          case 'StartOfTurn':
            turn.start();
            if (text) emit({ type: 'interim', text });
            return;
          case 'Update':
            turn.update(text);
            return;
          case 'EagerEndOfTurn':
            turn.eagerEnd(text);
            return;
          case 'TurnResumed':
            turn.resume();
            return;
          case 'EndOfTurn':
            turn.end(text);
            return;
        }
      },
    });
    await openWithin(sock);
    return {
      write: (pcm) => sock.sendAudio(pcm),
      finalize: () => {},
      close: () => sock.close(),
    };
  }
}
