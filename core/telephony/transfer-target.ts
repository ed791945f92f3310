// What a transferCall destination names, and what each carrier can transfer to. The agent schema accepts E.164
// numbers, `sip:`/`sips:` URIs and Asterisk-style endpoints (`SIP/…`, `PJSIP/…`, the spec's own example):
//  - pstn:      a phone number (`+14155550100`);
//  - sip:       a SIP URI with a host (`sip:alice@pbx.example.com`, `SIP/alice@pbx.example.com`, `PJSIP/7001@10.0.0.5:5060`);
//  - extension: a host-less endpoint (`PJSIP/123`, `SIP/123`): a device or extension on the carrier's own PBX. A
//               carrier that only dials out (Twilio, Plivo, Telnyx, Vonage) cannot reach it; Smartflo's transfer takes
//               extensions of the account (its `intercom`).
// `CarrierAdapter.transferSupport(destination)` is each carrier's static, network-free answer (null = it can); the
// API refuses an agent whose transfer a carrier cannot make wherever the agent meets that carrier, and the transfer
// tool checks it again before it says its transfer message.
import { CarrierHttpError } from './types.ts';

export type TransferTarget =
  | { kind: 'pstn'; number: string }
  | { kind: 'sip'; uri: string }
  | { kind: 'extension'; extension: string; endpoint: string };

export function parseTransferDestination(destination: string): TransferTarget {
  const d = destination.trim();
  if (/^sips?:/i.test(d)) return { kind: 'sip', uri: d.replace(/^sips?:/i, (m) => m.toLowerCase()) };
  const endpoint = /^(?:PJSIP|SIP)\/(.+)$/i.exec(d);
  if (endpoint) {
    const rest = endpoint[1]!;
    if (/^[^@\s]+@[A-Za-z0-9.-]+(?::\d{1,5})?$/.test(rest)) return { kind: 'sip', uri: `sip:${rest}` };
    return { kind: 'extension', extension: rest, endpoint: d };
  }
  return { kind: 'pstn', number: d };
}

/** Why a carrier that dials numbers and SIP URIs (not a PBX of its own) cannot reach a destination; null when it can. */
export function dialOutSupport(carrierName: string, destination: string): string | null {
  const t = parseTransferDestination(destination);
  if (t.kind !== 'extension') return null;
  return `${carrierName} cannot reach the SIP endpoint '${t.endpoint}': it has no host. Write it with the SIP server that serves it, e.g. sip:${t.extension}@pbx.example.com (or SIP/${t.extension}@<host>)`;
}

/** The target for a carrier's transfer request; a destination the carrier cannot reach → provider_not_supported (400). */
export function transferTarget(carrier: string, destination: string, support: string | null): TransferTarget {
  if (support) throw new CarrierHttpError(carrier, 400, `provider_not_supported: ${support}`);
  return parseTransferDestination(destination);
}

/** The number or SIP URI a dial-out carrier transfers to; a host-less extension → provider_not_supported (400). */
export function dialOutTarget(carrier: string, carrierName: string, destination: string): Exclude<TransferTarget, { kind: 'extension' }> {
  const t = transferTarget(carrier, destination, dialOutSupport(carrierName, destination));
  if (t.kind === 'extension') throw new CarrierHttpError(carrier, 400, `provider_not_supported: ${dialOutSupport(carrierName, destination)}`);
  return t;
}
