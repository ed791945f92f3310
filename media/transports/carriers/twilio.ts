// Twilio Media Streams (bidirectional `<Connect><Stream>`): Twilio says `connected` then `start` (with the TwiML
// `<Parameter>`s in `start.customParameters`), then `media` every 20 ms (160 bytes of 8 kHz µ-law), `dtmf`, echoes
// of our `mark`s once played, and `stop` when the call leaves the stream (hang-up, or a call update with new
// TwiML). We send `media` (20 ms payloads), a `mark` after each, and `clear` on barge-in. All the mechanics live
// in carrier-stream.ts; this file names Twilio's settings.
import type { WebSocket } from 'ws';
import { CarrierStreamTransport } from './stream.ts';

export class TwilioStreamTransport extends CarrierStreamTransport {
  constructor(ws: WebSocket, opts: { drainMs?: number } = {}) {
    super(ws, { kind: 'twilio', frameBytes: 160, sequenceNumbers: false, sendConnected: false, ...opts });
  }
}
