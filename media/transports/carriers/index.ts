// Media-stream transports of the carriers on the generic stream path `/api/v1/telephony/{carrier}/stream/{callId}`
// (media/telephony-streams.ts). Twilio and Smartflo have their own paths. One line per carrier.
import type { WebSocket } from 'ws';
import type { CarrierStreamTransport } from './carrier-stream.ts';
import { ExotelStreamTransport } from './exotel.ts';
import { PlivoStreamTransport } from './plivo.ts';
import { TelnyxStreamTransport } from './telnyx.ts';
import { VonageStreamTransport } from './vonage.ts';

/** A transport for an accepted socket; `params` is the stream URL's query (carrier options such as Exotel's codec). */
type Make = (ws: WebSocket, params: URLSearchParams) => CarrierStreamTransport;

const TRANSPORTS: Record<string, Make> = {
  plivo: (ws) => new PlivoStreamTransport(ws),
  telnyx: (ws) => new TelnyxStreamTransport(ws),
  vonage: (ws) => new VonageStreamTransport(ws),
  exotel: (ws, params) => new ExotelStreamTransport(ws, { codec: params.get('codec') === 'mulaw' ? 'mulaw' : 'pcm16' }),
};

export function carrierTransportFor(carrier: string): Make | null {
  return Object.hasOwn(TRANSPORTS, carrier) ? TRANSPORTS[carrier]! : null;
}
