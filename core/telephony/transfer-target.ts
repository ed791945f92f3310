// Where a transferCall destination goes on a carrier: a phone number, or a SIP URI. The agent schema accepts E.164
// numbers, `sip:`/`sips:` URIs and Asterisk-style endpoints (`SIP/…`, `PJSIP/…`): the latter are SIP, never a
// phone number — `SIP/alice@pbx.example.com` is `sip:alice@pbx.example.com`. An endpoint without a host (`PJSIP/123`)
// names a device on an Asterisk the carrier cannot reach: the transfer is refused (provider_not_supported) with
// what to write instead, and the call goes on.
import { CarrierHttpError } from './types.ts';

export type TransferTarget = { kind: 'pstn'; number: string } | { kind: 'sip'; uri: string };

export function transferTarget(carrier: string, destination: string): TransferTarget {
  const d = destination.trim();
  if (/^sips?:/i.test(d)) return { kind: 'sip', uri: d.replace(/^sips?:/i, (m) => m.toLowerCase()) };
  const endpoint = /^(?:PJSIP|SIP)\/(.+)$/i.exec(d);
  if (endpoint) {
    const rest = endpoint[1]!;
    if (/^[^@\s]+@[A-Za-z0-9.-]+(?::\d{1,5})?$/.test(rest)) return { kind: 'sip', uri: `sip:${rest}` };
    throw new CarrierHttpError(carrier, 400, `provider_not_supported: the SIP endpoint '${d}' has no host a carrier can reach; use sip:${rest}@<your SIP server> (or SIP/${rest}@<host>)`);
  }
  return { kind: 'pstn', number: d };
}
