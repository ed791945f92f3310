// Exotel AgentStream, Voicebot (bidirectional) stream (developer.exotel.com "WebSocket protocol"): snake_case JSON —
// `connected`, `start{stream_sid, call_sid, account_sid, from, to, custom_parameters, media_format{encoding,
// sample_rate, bit_rate}}`, `media{chunk, timestamp, payload}` about every 100 ms, `dtmf{digit, duration}`, `mark{name}`
// once the audio before our mark has played, `stop{reason}`. Audio is 8 kHz 16-bit linear PCM in base64 by
// default; `?codec=mulaw` on the stream URL (configuration `stream_encoding: "mulaw"`) switches to 8 kHz µ-law. We
// send `media{payload}` in chunks that are multiples of 320 bytes (100 ms: 1600 bytes of PCM; 200 ms of µ-law), a
// `mark` after each, and `clear` on barge-in. Mechanics: carrier-stream.ts; this file maps Exotel's names.
import type { WebSocket } from 'ws';
import { L16Decoder, L16Encoder } from '../../audio/l16-stream.ts';
import { CarrierStreamTransport, obj } from './stream.ts';

export class ExotelStreamTransport extends CarrierStreamTransport {
  constructor(ws: WebSocket, opts: { codec?: 'pcm16' | 'mulaw'; drainMs?: number } = {}) {
    const { codec = 'pcm16', ...rest } = opts;
    super(ws, codec === 'mulaw'
      ? { kind: 'exotel', frameBytes: 1600, ...rest }
      : { kind: 'exotel', codec: { decoder: new L16Decoder(8000), encoder: new L16Encoder(8000, 1600), bytesPerMs: 16 }, ...rest });
  }

  protected override onMessage(m: Record<string, unknown>): void {
    switch (m.event) {
      case 'start': {
        const s = obj(m.start);
        super.onMessage({
          event: 'start',
          start: { streamSid: s.stream_sid ?? m.stream_sid, callSid: s.call_sid, accountSid: s.account_sid, from: s.from, to: s.to, customParameters: obj(s.custom_parameters) },
        });
        return;
      }
      case 'media':
        super.onMessage({ event: 'media', media: { payload: obj(m.media).payload } });
        return;
      case 'dtmf':
        super.onMessage({ event: 'dtmf', dtmf: obj(m.dtmf) });
        return;
      case 'mark':
        super.onMessage({ event: 'mark', mark: obj(m.mark) });
        return;
      case 'stop':
        super.onMessage({ event: 'stop', stop: obj(m.stop) });
        return;
      default:
        return; // connected
    }
  }

  protected override send(m: Record<string, unknown>): void {
    const stream_sid = this.start?.streamSid ?? '';
    let out: Record<string, unknown> | null = null;
    if (m.event === 'media') out = { event: 'media', stream_sid, media: { payload: obj(m.media).payload } };
    else if (m.event === 'mark') out = { event: 'mark', stream_sid, mark: { name: obj(m.mark).name } };
    else if (m.event === 'clear') out = { event: 'clear', stream_sid };
    this.sendTranslated(out);
  }
}
