// Smartflo's Voice Bot stream as the carrier runs it: Twilio-shaped messages (see twilio-media.ts) with the
// Smartflo differences — `connected` from either side first, `start` with from/to/direction and the custom
// identifier in customParameters, caller `media` in ~100 ms payloads, `stop{reason}`.
import { FakeCarrierStream, type FakeStreamStart } from './twilio-media.ts';

export function connectSmartfloStream(
  url: string,
  start: FakeStreamStart & { from: string; to: string; direction: 'inbound' | 'outbound' },
  opts: { connected?: 'carrier' | 'bot'; payloadMs?: number } = {},
): FakeCarrierStream {
  return new FakeCarrierStream(url, start, { flavour: 'smartflo', payloadMs: opts.payloadMs ?? 100, connected: opts.connected ?? 'carrier' });
}
