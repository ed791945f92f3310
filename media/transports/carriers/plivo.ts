// Plivo Audio Streams (bidirectional `<Stream>`, docs.plivo.com/docs/voice/xml/audiostream): Plivo sends no
// `connected`; `start{callId, streamId, accountId, tracks, mediaFormat}` (camelCase), then `media{payload}` (8 kHz
// µ-law with contentType audio/x-mulaw;rate=8000), `dtmf{digit}`, `playedStream{name}` once the audio before a
// `checkpoint` of ours has played, `clearedAudio` after a `clearAudio`, and the socket closes (or `stop`) when the
// call leaves the stream. We send `playAudio{media:{contentType, sampleRate, payload}}` in 20 ms payloads, a
// `checkpoint` after each (Plivo's marks) and `clearAudio` on barge-in. Mechanics: carrier-stream.ts; this file
// translates Plivo's messages to and from the Twilio-shaped ones it speaks.
import type { WebSocket } from 'ws';
import { CarrierStreamTransport, obj } from './stream.ts';

/** Plivo's `extraHeaders` ("a=1,b=2", or an object) as custom parameters. */
function extraHeaders(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v === 'string') {
    for (const part of v.split(',')) {
      const i = part.indexOf('=');
      if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
    }
  } else for (const [k, x] of Object.entries(obj(v))) if (x !== null && x !== undefined) out[k] = String(x);
  return out;
}

export class PlivoStreamTransport extends CarrierStreamTransport {
  constructor(ws: WebSocket, opts: { drainMs?: number } = {}) {
    super(ws, { kind: 'plivo', frameBytes: 160, ...opts });
  }

  protected override onMessage(m: Record<string, unknown>): void {
    switch (m.event) {
      case 'start': {
        const s = obj(m.start);
        super.onMessage({
          event: 'start',
          start: {
            streamSid: s.streamId ?? m.streamId, callSid: s.callId, accountSid: s.accountId,
            customParameters: extraHeaders(m.extra_headers ?? s.extraHeaders ?? s.extra_headers),
          },
        });
        return;
      }
      case 'media':
        super.onMessage({ event: 'media', media: obj(m.media) });
        return;
      case 'dtmf':
        super.onMessage({ event: 'dtmf', dtmf: obj(m.dtmf) });
        return;
      case 'playedStream':
        super.onMessage({ event: 'mark', mark: { name: m.name } });
        return;
      case 'stop':
        super.onMessage({ event: 'stop', stop: obj(m.stop) });
        return;
      default:
        return; // clearedAudio and anything newer
    }
  }

  protected override send(m: Record<string, unknown>): void {
    const streamId = this.start?.streamSid ?? '';
    let out: Record<string, unknown> | null = null;
    if (m.event === 'media') {
      out = { event: 'playAudio', media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: obj(m.media).payload } };
    } else if (m.event === 'mark') out = { event: 'checkpoint', streamId, name: obj(m.mark).name };
    else if (m.event === 'clear') out = { event: 'clearAudio', streamId };
    this.sendTranslated(out);
  }
}
