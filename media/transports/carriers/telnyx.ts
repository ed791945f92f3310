// Telnyx Media Streaming over WebSocket, bidirectional RTP mode with PCMU (developers.telnyx.com "Stream call
// media over WebSocket"): Telnyx says `connected`, then `start{call_control_id, call_session_id, from, to,
// media_format{encoding: PCMU, sample_rate: 8000}}` with `stream_id` beside it (snake_case throughout), `media`
// frames {track, chunk, timestamp, payload: base64 RTP payload}, `dtmf{digit}`, echoes of our `mark`s once played,
// `error` and `stop`. We send `media{payload}` (20 ms of µ-law, within Telnyx's 20 ms – 30 s per chunk), a
// `mark` after each, and `clear` on barge-in. Mechanics: carrier-stream.ts; this file maps Telnyx's names.
import type { WebSocket } from 'ws';
import { CarrierStreamTransport, obj } from './stream.ts';

export class TelnyxStreamTransport extends CarrierStreamTransport {
  /** Telnyx's `error` frames, for the logs */
  readonly errors: unknown[] = [];

  constructor(ws: WebSocket, opts: { drainMs?: number } = {}) {
    super(ws, { kind: 'telnyx', frameBytes: 160, ...opts });
  }

  protected override onMessage(m: Record<string, unknown>): void {
    switch (m.event) {
      case 'start': {
        const s = obj(m.start);
        const fmt = obj(s.media_format);
        if (fmt.encoding !== undefined && String(fmt.encoding).toUpperCase() !== 'PCMU') this.errors.push({ unexpectedEncoding: fmt.encoding });
        super.onMessage({
          event: 'start',
          start: { streamSid: m.stream_id, callSid: s.call_control_id, accountSid: s.user_id, from: s.from, to: s.to, customParameters: {} },
        });
        return;
      }
      case 'media': {
        const media = obj(m.media);
        super.onMessage({ event: 'media', media: { track: media.track === 'inbound' || media.track === undefined ? 'inbound' : media.track, payload: media.payload } });
        return;
      }
      case 'dtmf':
        super.onMessage({ event: 'dtmf', dtmf: obj(m.dtmf) });
        return;
      case 'mark':
        super.onMessage({ event: 'mark', mark: obj(m.mark) });
        return;
      case 'stop':
        super.onMessage({ event: 'stop', stop: { reason: 'stop' } });
        return;
      case 'error':
        if (this.errors.length < 20) this.errors.push(m.payload ?? m);
        return;
      default:
        return; // connected
    }
  }

  protected override send(m: Record<string, unknown>): void {
    let out: Record<string, unknown> | null = null;
    if (m.event === 'media') out = { event: 'media', media: { payload: obj(m.media).payload } };
    else if (m.event === 'mark') out = { event: 'mark', mark: { name: obj(m.mark).name } };
    else if (m.event === 'clear') out = { event: 'clear' };
    this.sendTranslated(out);
  }
}
