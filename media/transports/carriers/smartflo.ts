// Smartflo (Tata Tele) bi-directional audio streaming for its Voice Bot: Twilio-shaped JSON messages. Differences
// from Twilio: the documentation says the carrier sends `connected` first, third-party code says the bot must, so
// we send it on accept and ignore theirs; `start` also carries `from`, `to` and `direction`; inbound `media` comes
// in ~100 ms payloads; `stop` has a `reason`; outgoing payloads must be multiples of 160 bytes (we send 20 ms =
// 160 bytes each, with a sequence number, and a `mark` after each).
import type { WebSocket } from 'ws';
import { CarrierStreamTransport } from './stream.ts';

export class SmartfloStreamTransport extends CarrierStreamTransport {
  constructor(ws: WebSocket, opts: { drainMs?: number } = {}) {
    super(ws, { kind: 'smartflo', frameBytes: 160, sequenceNumbers: true, sendConnected: true, ...opts });
  }
}
