// Sarvam saaras streaming STT (docs/engines.md, STT `sarvam`): wss://api.sarvam.ai/speech-to-text/ws with header
// `Api-Subscription-Key`. Query: `language-code` (with a HYPHEN: en-IN, hi-IN, …, od-IN for Odia, `unknown` to
// detect), model=saaras:v3, mode (transcribe | verbatim | translit | codemix; codemix automatically when the agent's
// languages are exactly English + Hindi), input_audio_codec=pcm_s16le, sample_rate, high_vad_sensitivity,
// vad_signals=true. Audio goes as JSON `{"audio":{"data":<base64 PCM>,"sample_rate":16000,"encoding":"audio/wav"}}`;
// `{"type":"flush"}` at the end of caller speech makes Sarvam transcribe what it has now. Sarvam closes a socket
// after 60 s without audio, and its VAD needs trailing silence: silence goes out after 1 s without caller audio.
// Out: `{"type":"events","data":{"signal_type":"START_SPEECH"|"END_SPEECH"}}` and one final transcript per
// utterance `{"type":"data","data":{"transcript","language_code"}}` (no interims); `{"type":"error"}`.
// Events: START_SPEECH → speech_started; every transcript → final. Sarvam's END_SPEECH is its VAD's silence, not a
// model of the end of the turn, so the adapter has no turn detection of its own: the call's turn model (Smart
// Turn, media/services/turn) ends the caller's turn and the finals of its utterances are joined into it.
import type { SttEvent, SttOptions, SttService, SttStream } from '../types.ts';
import { jsonFrame, openWithin, pcmBytes, refusedStream, SttSocket, vendorWsUrl } from './ws-session.ts';

export interface SarvamBlock {
  mode?: string;
  highVadSensitivity?: boolean;
}

export interface SarvamOptions {
  apiKey?: string;
  baseUrl: string;
  model: string;
  block?: SarvamBlock;
  /** silence after this long without caller audio (default 1000) */
  keepaliveMs?: number;
}

const SARVAM_LANGS = new Set(['en', 'hi', 'bn', 'gu', 'kn', 'ml', 'mr', 'or', 'pa', 'ta', 'te', 'ur', 'ne']);

/** The agent's languages → Sarvam's `language-code` (one supported language: its code; else `unknown`). */
export function sarvamLanguageCode(languages: string[]): string {
  if (languages.length !== 1 || !SARVAM_LANGS.has(languages[0]!)) return 'unknown';
  const l = languages[0]!;
  return `${l === 'or' ? 'od' : l}-IN`;
}

export function sarvamQuery(model: string, block: SarvamBlock, languages: string[]): Array<[string, string]> {
  const enHi = languages.length === 2 && languages.includes('en') && languages.includes('hi');
  const mode = enHi ? 'codemix' : ['transcribe', 'verbatim', 'translit', 'codemix'].includes(block.mode ?? '') ? block.mode! : 'transcribe';
  return [
    ['language-code', enHi ? 'hi-IN' : sarvamLanguageCode(languages)],
    ['model', model],
    ['mode', mode],
    ['input_audio_codec', 'pcm_s16le'],
    ['sample_rate', '16000'],
    ['high_vad_sensitivity', block.highVadSensitivity ? 'true' : 'false'],
    ['vad_signals', 'true'],
  ];
}

export class SarvamStt implements SttService {
  readonly provider = 'sarvam';
  readonly model: string;
  readonly hasTurnDetection = false;
  constructor(private readonly o: SarvamOptions) {
    this.model = o.model;
  }

  async open(opts: SttOptions): Promise<SttStream> {
    const emit = (ev: SttEvent) => opts.onEvent(ev);
    if (!this.o.apiKey) return refusedStream(emit, 'sarvam', 'SARVAM_API_KEY is not set');
    let speaking = false;
    const sock = new SttSocket({
      vendor: 'sarvam',
      url: vendorWsUrl(this.o.baseUrl, '/speech-to-text/ws', sarvamQuery(this.model, this.o.block ?? {}, opts.languages)),
      headers: { 'Api-Subscription-Key': this.o.apiKey },
      emit,
      encodeAudio: (pcm) => JSON.stringify({ audio: { data: pcmBytes(pcm).toString('base64'), sample_rate: 16000, encoding: 'audio/wav' } }),
      onOpen: () => {
        speaking = false;
      },
      keepalive: { idleMs: this.o.keepaliveMs ?? 1000, send: (s) => s.sendSilence(Math.min(1000, this.o.keepaliveMs ?? 1000)) },
      closeMessage: () => null,
      onMessage: (data, isBinary) => {
        const msg = jsonFrame<{ type?: string; data?: { transcript?: string; signal_type?: string; message?: string; error?: string; code?: string | number } }>(data, isBinary);
        if (!msg) return;
        if (msg.type === 'error') {
          const reason = `${msg.data?.code ?? ''} ${msg.data?.message ?? msg.data?.error ?? ''}`.trim() || 'error';
          if (/timeout|timed out|idle|internal|unavailable|5\d\d/i.test(reason)) return; // the close that follows reconnects
          sock.refuse(reason);
          return;
        }
        if (msg.type === 'events') {
          if (msg.data?.signal_type === 'START_SPEECH') {
            if (!speaking) emit({ type: 'speech_started' });
            speaking = true;
          } else if (msg.data?.signal_type === 'END_SPEECH') speaking = false;
          return;
        }
        if (msg.type === 'data') {
          const text = (msg.data?.transcript ?? '').trim();
          if (text) emit({ type: 'final', text });
        }
      },
    });
    await openWithin(sock);
    return {
      write: (pcm) => sock.sendAudio(pcm),
      finalize: () => void sock.sendControl({ type: 'flush' }),
      close: () => sock.close(),
    };
  }
}
