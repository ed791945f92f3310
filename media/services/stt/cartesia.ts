// Cartesia Ink STT with turn detection (docs/engines.md, STT `cartesia`):
// wss://api.cartesia.ai/stt/turns/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=16000 with `X-API-Key` and
// `Cartesia-Version`. Query also carries the turn tuning: turn_start_threshold (0.5–0.9), turn_eager_end_threshold
// (0.3–0.6: the agent's 0.3–0.8 is clamped), turn_end_threshold (0.05–0.5), turn_end_timeout_ms (640–11200) and
// keyterm (repeated, ≤ 100 terms / 1200 characters). Lower thresholds demand more confidence (the opposite of
// Deepgram). Binary audio in; `{"type":"close"}` ends the session.
// Cartesia only ends a turn while audio flows: when the caller's audio stops mid-turn `turn.end` never comes, so
// silence goes out after 100 ms without caller audio. finalize() sends nothing (the turn model is Cartesia's).
// Out: `connected`, `turn.start` → speech_started, `turn.update{transcript}` → interim (cumulative),
// `turn.eager_end` → eager_turn_end, `turn.resume` → turn_resumed, `turn.end{transcript}` → turn_end, `error`
// (status_code 4xx: refusal).
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { clamp, jsonFrame, openWithin, refusedStream, SttSocket, termsOf, TurnTracker, vendorWsUrl } from './ws-session.ts';

export interface CartesiaSttBlock {
  turnStartThreshold?: number;
  turnEagerEndThreshold?: number;
  turnEndThreshold?: number;
  turnEndTimeoutMs?: number;
  keyterms?: string;
}

export interface CartesiaSttOptions {
  apiKey?: string;
  baseUrl: string;
  model: string;
  block?: CartesiaSttBlock;
  /** silence after this long without caller audio (default 100) */
  keepaliveMs?: number;
}

export const CARTESIA_VERSION = '2026-03-01';

/** ink-2 is English only: an agent that speaks another language gets ink-whisper. */
export function cartesiaDefaultModel(languages: string[]): string {
  return languages.some((l) => l !== 'en') ? 'ink-whisper' : 'ink-2';
}

export function cartesiaSttQuery(model: string, block: CartesiaSttBlock, keyterms: string[], languages: string[] = []): Array<[string, string | number]> {
  const r2 = (v: number) => Math.round(v * 1000) / 1000;
  const q: Array<[string, string | number]> = [
    ['model', model],
    ['encoding', 'pcm_s16le'],
    ['sample_rate', 16000],
    // ink-whisper takes the caller's language (ISO 639-1); ink-2 is English only
    ...(model === 'ink-whisper' && languages[0] ? [['language', languages[0]] as [string, string]] : []),
    ['turn_start_threshold', r2(clamp(block.turnStartThreshold, 0.5, 0.9, 0.8))],
    ['turn_eager_end_threshold', r2(clamp(block.turnEagerEndThreshold, 0.3, 0.6, 0.4))],
    ['turn_end_threshold', r2(clamp(block.turnEndThreshold, 0.05, 0.5, 0.2))],
    ['turn_end_timeout_ms', Math.round(clamp(block.turnEndTimeoutMs, 640, 11200, 2000))],
  ];
  let chars = 0;
  let count = 0;
  for (const k of termsOf(keyterms)) {
    if (count >= 100 || chars + k.length > 1200) break;
    q.push(['keyterm', k]);
    chars += k.length;
    count++;
  }
  return q;
}

export class CartesiaStt implements SttService {
  readonly provider = 'cartesia';
  readonly model: string;
  readonly hasTurnDetection = true;
  constructor(private readonly o: CartesiaSttOptions) {
    this.model = o.model;
  }

  async open(opts: SttOptions): Promise<SttStream> {
    const emit = (ev: SttEvent) => opts.onEvent(ev);
    if (!this.o.apiKey) return refusedStream(emit, 'cartesia', 'CARTESIA_API_KEY is not set');
    const turn = new TurnTracker(emit);
    const idle = this.o.keepaliveMs ?? 100;
    const sock = new SttSocket({
      vendor: 'cartesia',
      url: vendorWsUrl(this.o.baseUrl, '/stt/turns/websocket', cartesiaSttQuery(this.model, this.o.block ?? {}, opts.keyterms, opts.languages)),
      headers: { 'X-API-Key': this.o.apiKey, 'Cartesia-Version': CARTESIA_VERSION },
      emit,
      onOpen: (_s, reconnect) => {
        if (reconnect) turn.reset();
      },
      keepalive: { idleMs: idle, send: (s) => s.sendSilence(idle) },
      closeMessage: () => JSON.stringify({ type: 'close' }),
      isFatalClose: (code) => code === 1008,
      onMessage: (data, isBinary) => {
        const msg = jsonFrame<{ type?: string; transcript?: string; status_code?: number; error_code?: string; message?: string; title?: string }>(data, isBinary);
        if (!msg) return;
        const text = (msg.transcript ?? '').trim();
        switch (msg.type) {
          case 'error': {
            const status = Number(msg.status_code ?? 0);
            const reason = `${status || ''} ${msg.error_code ?? ''} ${msg.message ?? msg.title ?? ''}`.replace(/\s+/g, ' ').trim();
            if (status >= 400 && status < 500 && status !== 408) sock.refuse(reason);
            return;
          }
          case 'turn.start':
            turn.start();
            return;
          case 'turn.update':
            turn.update(text);
            return;
          case 'turn.eager_end':
            if (text) turn.eagerEnd(text);
            return;
          case 'turn.resume':
            turn.resume();
            return;
          case 'turn.end':
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
