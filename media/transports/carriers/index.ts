// The carriers' media-stream dialects: one file per carrier beside this one, each a `CarrierStreamTransport`
// (stream.ts) translating its carrier's messages. Per-call streams arrive at `/api/v1/telephony/{carrier}/stream/
// {callId}` (server.ts); Smartflo's static Voice Bot stream has a path of its own. One line per carrier.
import type { WebSocket } from 'ws';
import type { CarrierStreamTransport } from './stream.ts';
import { ExotelStreamTransport } from './exotel.ts';
import { PlivoStreamTransport } from './plivo.ts';
import { TelnyxStreamTransport } from './telnyx.ts';
import { TwilioStreamTransport } from './twilio.ts';
import { VonageStreamTransport } from './vonage.ts';

export interface CarrierDialect {
  /** A transport for an accepted socket; `params` is the stream URL's query (carrier options such as Exotel's codec). */
  make(ws: WebSocket, params: URLSearchParams): CarrierStreamTransport;
  /**
   * Where the signed per-call token travels: in the stream URL's query, or in the `start` message's custom parameters
   * (Twilio drops query strings from `<Stream url>`, so the token is a `<Parameter>`).
   */
  tokenIn: 'url' | 'start';
}

const DIALECTS: Record<string, CarrierDialect> = {
  twilio: { make: (ws) => new TwilioStreamTransport(ws), tokenIn: 'start' },
  plivo: { make: (ws) => new PlivoStreamTransport(ws), tokenIn: 'url' },
  telnyx: { make: (ws) => new TelnyxStreamTransport(ws), tokenIn: 'url' },
  vonage: { make: (ws) => new VonageStreamTransport(ws), tokenIn: 'url' },
  exotel: { make: (ws, params) => new ExotelStreamTransport(ws, { codec: params.get('codec') === 'mulaw' ? 'mulaw' : 'pcm16' }), tokenIn: 'url' },
};

export function carrierDialect(carrier: string): CarrierDialect | null {
  return Object.hasOwn(DIALECTS, carrier) ? DIALECTS[carrier]! : null;
}
