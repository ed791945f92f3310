// Soniox real-time STT (docs/engines.md, STT `soniox`): wss://stt-rt.soniox.com/transcribe-websocket with
// `Authorization: Bearer <key>` on the upgrade (the key in the start message is deprecated). The first text frame
// configures the session (model, pcm_s16le 16 kHz mono, language hints, endpoint detection, context terms and
// the endpoint tuning); then binary PCM; `{"type":"keepalive"}` through silence (no audio for 5 s; Soniox
// closes after ~20 s without either); `{"type":"finalize"}` at the end of caller speech (tokens come back final,
// then a `<fin>` marker); an empty frame ends the stream.
// Responses carry `tokens[]` (final ones once, non-final ones repeated until they settle); a final `<end>` token
// is Soniox's endpoint: the caller's turn is over. `{error_code, error_message}` reports an error.
// Events: the first text of a turn → speech_started; every response → interim (turn text so far);
// `<fin>` → final (what settled since the last final); `<end>` → turn_end (the rest of the turn).
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { clamp, jsonFrame, openWithin, refusedStream, SttSocket, termsOf, TurnTracker, vendorWsUrl } from './ws-session.ts';

export interface SonioxBlock {
  contextTerms?: string;
  endpointSensitivity?: number;
  endpointLatencyAdjustmentLevel?: number;
  maxEndpointDelayMs?: number;
}

export interface SonioxOptions {
  apiKey?: string;
  baseUrl: string;
  model: string;
  block?: SonioxBlock;
  /** keepalive after this long without audio (default 5000) */
  keepaliveMs?: number;
}

interface SonioxToken {
  text: string;
  is_final?: boolean;
}

/** The start message for a session (exported for tests). */
export function sonioxConfig(model: string, block: SonioxBlock, languages: string[], keyterms: string[]): Record<string, unknown> {
  const cfg: Record<string, unknown> = {
    model,
    audio_format: 'pcm_s16le',
    sample_rate: 16000,
    num_channels: 1,
    enable_endpoint_detection: true,
  };
  if (languages.length) cfg.language_hints = languages;
  const terms = termsOf(keyterms);
  if (terms.length) cfg.context = { terms };
  // endpoint_sensitivity exists on v5 models only
  if (!/v4/.test(model)) cfg.endpoint_sensitivity = clamp(block.endpointSensitivity, -1, 1, 0.3);
  cfg.endpoint_latency_adjustment_level = Math.round(clamp(block.endpointLatencyAdjustmentLevel, 0, 3, 2));
  cfg.max_endpoint_delay_ms = Math.round(clamp(block.maxEndpointDelayMs, 500, 3000, 2000));
  return cfg;
}

export class SonioxStt implements SttService {
  readonly provider = 'soniox';
  readonly model: string;
  readonly hasTurnDetection = true;
  constructor(private readonly o: SonioxOptions) {
    this.model = o.model;
  }

  async open(opts: SttOptions): Promise<SttStream> {
    const emit = (ev: SttEvent) => opts.onEvent(ev);
    const config = sonioxConfig(this.model, this.o.block ?? {}, opts.languages, opts.keyterms);
    if (!this.o.apiKey) return refusedStream(emit, 'soniox', 'SONIOX_API_KEY is not set');
    let settled = ''; // final text of this turn not yet emitted as `final`
    let emittedFinal = ''; // final text of this turn already emitted
    const turn = new TurnTracker(emit);
    let lastFinalizeAt = 0;
    const resetTurn = () => {
      settled = '';
      emittedFinal = '';
      turn.reset();
    };
    const sock = new SttSocket({
      vendor: 'soniox',
      url: vendorWsUrl(this.o.baseUrl, '/transcribe-websocket'),
      headers: { Authorization: `Bearer ${this.o.apiKey}` },
      emit,
      onOpen: (s, reconnect) => {
        if (reconnect) resetTurn();
        s.sendControl(config);
      },
      keepalive: { idleMs: this.o.keepaliveMs ?? 5000, send: (s) => s.sendControl({ type: 'keepalive' }) },
      closeMessage: () => Buffer.alloc(0),
      onMessage: (data) => {
        const msg = jsonFrame<{ tokens?: SonioxToken[]; error_code?: number; error_message?: string; finished?: boolean }>(data);
        if (!msg) return;
        if (msg.error_code !== undefined || msg.error_message) {
          const code = Number(msg.error_code ?? 0);
          const reason = `${code || ''} ${msg.error_message ?? ''}`.trim();
          // 408 (audio too slow / timeouts) and 5xx are the vendor's own trouble: the close that follows reconnects
          if (code === 408 || code >= 500) return;
          sock.refuse(reason);
          return;
        }
        let nonFinal = '';
        let fin = false;
        let end = false;
        for (const t of msg.tokens ?? []) {
          if (t.text === '<end>') {
            if (t.is_final) end = true;
            continue;
          }
          if (t.text === '<fin>') {
            if (t.is_final) fin = true;
            continue;
          }
          if (t.is_final) settled += t.text;
          else nonFinal += t.text;
        }
        const turnText = (emittedFinal + settled + nonFinal).trim();
        turn.update(turnText, !end);
        if (fin && settled.trim() && !end) {
          emit({ type: 'final', text: settled.trim() });
          emittedFinal += settled;
          settled = '';
        }
        if (end) {
          const rest = settled.trim();
          const had = (emittedFinal + settled).trim();
          resetTurn();
          if (had) emit({ type: 'turn_end', text: rest });
        }
      },
    });
    await openWithin(sock);
    return {
      write: (pcm) => sock.sendAudio(pcm),
      finalize: () => {
        // "every few seconds is fine; too often may cause disconnections"
        const now = Date.now();
        if (now - lastFinalizeAt < 1000) return;
        if (sock.sendControl({ type: 'finalize' })) lastFinalizeAt = now;
      },
      close: () => sock.close(),
    };
  }
}
