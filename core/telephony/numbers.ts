// Phone number addresses: E.164 normalisation (libphonenumber-js), SIP URIs kept as sent, and the format-tolerant
// comparison the streaming carrier needs (with plus and country code, without plus, bare national digits).
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

export type Normalized =
  | { ok: true; normalized: string; type: 'pstn' | 'sip' }
  | { ok: false; error: 'needs_country_code' | 'invalid' | 'bad_country'; message: string };

const SIP = /^sips?:[^\s@]+@[^\s@]+$|^sips?:[^\s@]+$/i;

export function normalizeAddress(address: string, countryCode?: string | null): Normalized {
  const a = address.trim();
  if (SIP.test(a)) return { ok: true, normalized: a.replace(/^sips?:/i, (m) => m.toLowerCase()), type: 'sip' };
  const compact = a.replace(/[\s().-]/g, '');
  if (compact.startsWith('+')) {
    const p = parsePhoneNumberFromString(compact);
    if (!p || !p.isPossible()) return { ok: false, error: 'invalid', message: `'${address}' is not a valid E.164 phone number` };
    return { ok: true, normalized: p.number, type: 'pstn' };
  }
  if (/^\d+$/.test(compact)) {
    if (!countryCode) {
      return { ok: false, error: 'needs_country_code', message: `country_code is required when address '${address}' has no leading '+' and country code` };
    }
    const cc = countryCode.trim().toUpperCase();
    if (!/^[A-Z]{2}$/.test(cc)) return { ok: false, error: 'bad_country', message: `country_code '${countryCode}' is not an ISO 3166-1 alpha-2 code` };
    let p;
    try {
      p = parsePhoneNumberFromString(compact, cc as CountryCode);
    } catch {
      p = undefined;
    }
    if (!p || !p.isPossible()) return { ok: false, error: 'invalid', message: `'${address}' is not a valid phone number for country ${cc}` };
    return { ok: true, normalized: p.number, type: 'pstn' };
  }
  return { ok: false, error: 'invalid', message: `'${address}' is neither an E.164 phone number nor a SIP URI` };
}

/** E.164 of a destination number (toNumber), or null. */
export function toE164(v: string): string | null {
  const r = normalizeAddress(v);
  return r.ok && r.type === 'pstn' ? r.normalized : null;
}

const digits = (s: string) => s.replace(/\D/g, '');

/**
 * Do two spellings name the same number? "+919876543210", "919876543210", "09876543210" and "9876543210" all match
 * a stored "+919876543210". SIP URIs compare case-insensitively.
 */
export function sameNumber(raw: string, stored: string): boolean {
  if (/^sips?:/i.test(stored) || /^sips?:/i.test(raw)) return raw.trim().toLowerCase() === stored.trim().toLowerCase();
  const full = digits(stored);
  const d = digits(raw).replace(/^0+/, '');
  if (!d || !full) return false;
  if (d === full) return true;
  const p = parsePhoneNumberFromString(stored);
  const national = p ? String(p.nationalNumber) : null;
  return national !== null && d === national;
}
