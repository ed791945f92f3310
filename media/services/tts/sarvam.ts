// Sarvam bulbul TTS (docs/engines.md, TTS `sarvam`). One `/text-to-speech/ws?model=<model>&send_completion_event=true`
// WebSocket per call (header `Api-Subscription-Key`), opened as the call connects; every (re)opened connection
// first gets `{type:"config", data:{target_language_code, speaker, pace, temperature (v3), speech_sample_rate:24000,
// output_audio_codec:"linear16"}}` (Sarvam's docs name the language field `target_language_code`). Kept warm with
// `{type:"ping"}` and reopened when Sarvam closes it. No context ids: chunks go one at a time as
// `{type:"text", data:{text}}` + `{type:"flush"}`, their audio comes as `{type:"audio", data:{audio}}` until the
// completion event `{type:"event", data:{event_type:"final"}}`. Sarvam has no cancel message: on barge-in the
// flushed generation's audio is dropped up to its `final` (a new reply that comes first gets a fresh socket).
// Tuning: pace (bulbul:v3 0.5–2.0, v2 0.3–3.0) → pace; temperature (v3 0.01–1; v2 has none) → temperature.
import type WebSocket from 'ws';
import { SequentialTts } from './sequential-tts.ts';
import { classifyVendorError, clamp, jsonMessage, stripWavHeader, vendorUrl } from './vendor.ts';

export interface SarvamTuning {
  pace?: number;
  temperature?: number;
}

export interface SarvamTtsOptions {
  apiKey?: string;
  /** SARVAM_BASE_URL: http(s)://host[:port][/prefix] */
  baseUrl: string;
  model: string;
  /** speaker; null/'default' = the model's default (v3 shubh, v2 anushka) */
  voice: string | null;
  languages: string[];
  tuning?: SarvamTuning;
  keepaliveMs?: number;
}

/** The agent's primary language → Sarvam's BCP-47 code (Odia is od-IN). */
export function sarvamTtsLanguage(languages: string[]): string {
  const l = languages[0] ?? 'en';
  return l === 'or' ? 'od-IN' : `${l}-IN`;
}

export class SarvamTts extends SequentialTts {
  readonly provider = 'sarvam';
  readonly model: string;
  readonly voice: string;
  protected readonly vendorName = 'Sarvam';

  constructor(private readonly o: SarvamTtsOptions) {
    super();
    this.model = o.model;
    this.voice = (o.voice && o.voice !== 'default' ? o.voice : o.model === 'bulbul:v2' ? 'anushka' : 'shubh').toLowerCase();
    this.socket = this.makeSocket({
      vendor: this.vendorName,
      url: vendorUrl(o.baseUrl, '/text-to-speech/ws', { model: o.model, send_completion_event: true }, true),
      headers: o.apiKey ? { 'Api-Subscription-Key': o.apiKey } : {},
      onOpen: (send) => send(JSON.stringify({ type: 'config', data: this.config() })),
      keepalive: () => JSON.stringify({ type: 'ping' }),
      keepaliveMs: o.keepaliveMs ?? 20_000,
    });
  }

  /** the config message's data, tuning clamped to the model's ranges */
  config(): Record<string, unknown> {
    const t = this.o.tuning ?? {};
    const v2 = this.model === 'bulbul:v2';
    return {
      target_language_code: sarvamTtsLanguage(this.o.languages),
      speaker: this.voice,
      pace: v2 ? clamp(t.pace ?? 1, 0.3, 3) : clamp(t.pace ?? 1, 0.5, 2),
      ...(v2 ? {} : { temperature: clamp(t.temperature ?? 0.6, 0.01, 1) }),
      speech_sample_rate: 24000,
      output_audio_codec: 'linear16',
    };
  }

  protected sendRequest(text: string): void {
    this.socket.send(JSON.stringify({ type: 'text', data: { text } }));
    this.socket.send(JSON.stringify({ type: 'flush' }));
  }

  protected sendCancel(): void {
    // Sarvam has no cancel: the generation's audio is dropped up to its final event
  }

  protected onMessage(data: WebSocket.RawData): void {
    const msg = jsonMessage<{ type?: string; data?: Record<string, unknown> }>(data);
    if (!msg) return;
    switch (msg.type) {
      case 'audio':
        if (typeof msg.data?.audio === 'string') this.audio(stripWavHeader(Buffer.from(msg.data.audio, 'base64')));
        return;
      case 'event':
        if (msg.data?.event_type === 'final') this.done();
        return;
      case 'error': {
        const reason = String(msg.data?.message ?? msg.data?.error ?? 'error');
        const code = typeof msg.data?.code === 'number' ? msg.data.code : undefined;
        this.error(classifyVendorError(this.vendorName, reason, code));
        return;
      }
    }
  }
}
