// Media-stream transports of the carriers on the generic stream path `/api/v1/telephony/{carrier}/stream/{callId}`
// (media/telephony-streams.ts). Twilio and Smartflo have their own paths. One line per carrier.
import type { WebSocket } from 'ws';
import type { CarrierStreamTransport } from './carrier-stream.ts';
import { PlivoStreamTransport } from './plivo.ts';
import { TelnyxStreamTransport } from './telnyx.ts';
import { VonageStreamTransport } from './vonage.ts';

const TRANSPORTS: Record<string, (ws: WebSocket) => CarrierStreamTransport> = {
  plivo: (ws) => new PlivoStreamTransport(ws),
  telnyx: (ws) => new TelnyxStreamTransport(ws),
  vonage: (ws) => new VonageStreamTransport(ws),
};

export function carrierTransportFor(carrier: string): ((ws: WebSocket) => CarrierStreamTransport) | null {
  return Object.hasOwn(TRANSPORTS, carrier) ? TRANSPORTS[carrier]! : null;
}
