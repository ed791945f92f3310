// Pure parts of the carrier half: Twilio's signature (the published test vector), status mapping, number
// normalisation and format-tolerant matching, signed stream values, credential encryption, base-URL overrides.
import test from 'ava';
import { decryptJson, encryptJson, encryptionKey, mask } from '../../core/secrets.ts';
import { normalizeAddress, sameNumber } from '../../core/telephony/numbers.ts';
import { customIdentifier, parseCustomIdentifier, smartfloStreamSig, streamToken, verifySmartfloStreamSig, verifyStreamToken } from '../../core/telephony/signing.ts';
import { mapCarrierStatus } from '../../core/telephony/status.ts';
import { transferTwiml, twilioSignature, verifyTwilioSignature } from '../../core/telephony/twilio.ts';
import { withBase } from '../../core/telephony/urls.ts';

const VECTOR = {
  token: '12345',
  url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
  params: { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' },
};

test('X-Twilio-Signature: the published test vector', (t) => {
  t.is(twilioSignature(VECTOR.token, VECTOR.url, VECTOR.params), '0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
  const headers = { 'x-twilio-signature': '0/KCTR6DLpKmkAf8muzZqo1nDgQ=' };
  t.true(verifyTwilioSignature(VECTOR.token, { url: VECTOR.url, headers, params: VECTOR.params }));
  // Twilio may have requested the URL with the explicit default port.
  t.true(verifyTwilioSignature(VECTOR.token, { url: VECTOR.url, headers: { 'x-twilio-signature': twilioSignature('12345', 'https://mycompany.com:443/myapp.php?foo=1&bar=2', VECTOR.params) }, params: VECTOR.params }));
  t.false(verifyTwilioSignature('54321', { url: VECTOR.url, headers, params: VECTOR.params }));
  t.false(verifyTwilioSignature(VECTOR.token, { url: VECTOR.url, headers, params: { ...VECTOR.params, Digits: '1235' } }));
  t.false(verifyTwilioSignature(VECTOR.token, { url: 'https://mycompany.com/other.php?foo=1&bar=2', headers, params: VECTOR.params }));
  t.false(verifyTwilioSignature(VECTOR.token, { url: VECTOR.url, headers: {}, params: VECTOR.params }));
});

test('carrier status → connectionStatus (spec values; unknown ones pass through as telephony_<raw>)', (t) => {
  t.is(mapCarrierStatus('busy'), 'busy');
  t.is(mapCarrierStatus('no-answer'), 'no_answer');
  t.is(mapCarrierStatus('failed'), 'connection_failed');
  t.is(mapCarrierStatus('canceled'), 'cancelled');
  t.is(mapCarrierStatus('completed'), 'completed');
  t.is(mapCarrierStatus('failed:sip_503'), 'unreachable');
  t.is(mapCarrierStatus('failed:congestion'), 'unreachable');
  t.is(mapCarrierStatus('failed:sip_404'), 'invalid_number');
  t.is(mapCarrierStatus('failed:sip_599'), 'connection_failed', 'an unknown reason falls back to the status');
  t.is(mapCarrierStatus('weird:unknown_reason'), 'telephony_weird');
  t.is(mapCarrierStatus('Network Congestion!'), 'unreachable', 'congestion is the spec\'s unreachable');
  t.is(mapCarrierStatus('Line Glitch!'), 'telephony_line_glitch');
});

test('addresses: E.164, country_code for bare digits, SIP kept, format-tolerant matching', (t) => {
  t.like(normalizeAddress('+1 (415) 555-0100'), { ok: true, normalized: '+14155550100', type: 'pstn' });
  t.like(normalizeAddress('4155550100'), { ok: false, error: 'needs_country_code' });
  t.like(normalizeAddress('(415) 555-0100', 'us'), { ok: true, normalized: '+14155550100' });
  t.like(normalizeAddress('09876543210', 'IN'), { ok: true, normalized: '+919876543210' });
  t.like(normalizeAddress('sip:Front.Desk@pbx.example.com'), { ok: true, normalized: 'sip:Front.Desk@pbx.example.com', type: 'sip' });
  t.like(normalizeAddress('+1'), { ok: false, error: 'invalid' });
  t.like(normalizeAddress('call me'), { ok: false, error: 'invalid' });
  for (const spelling of ['+919876543210', '919876543210', '09876543210', '9876543210', '+91 98765 43210']) t.true(sameNumber(spelling, '+919876543210'), spelling);
  t.false(sameNumber('9876543211', '+919876543210'));
  t.false(sameNumber('', '+919876543210'));
});

test('signed stream values verify only for their own call / configuration', (t) => {
  const config = { SIGNING_SECRET: 'unit-test-signing-secret-0123', DATA_DIR: '/nonexistent' };
  const a = '11111111-1111-4111-8111-111111111111';
  const b = '22222222-2222-4222-8222-222222222222';
  t.true(verifyStreamToken(config, a, streamToken(config, a)));
  t.false(verifyStreamToken(config, b, streamToken(config, a)));
  t.false(verifyStreamToken(config, a, undefined));
  t.true(verifySmartfloStreamSig(config, 7, smartfloStreamSig(config, 7)));
  t.false(verifySmartfloStreamSig(config, 8, smartfloStreamSig(config, 7)));
  // Purposes do not cross: a stream token is not a Smartflo signature.
  t.false(verifySmartfloStreamSig(config, a, streamToken(config, a)));
  t.is(parseCustomIdentifier(config, customIdentifier(config, a)), a);
  t.is(parseCustomIdentifier(config, `${a}.${streamToken(config, a)}`), null);
  t.is(parseCustomIdentifier(config, customIdentifier({ ...config, SIGNING_SECRET: 'another-secret-0123456789' }, a)), null);
  t.is(parseCustomIdentifier(config, 'garbage'), null);
});

test('credentials at rest: AES-256-GCM round trip, tampering detected, key from env or signing secret', (t) => {
  const base = { SIGNING_SECRET: 'unit-test-signing-secret-0123', DATA_DIR: '/nonexistent', TELEPHONY_ENCRYPTION_KEY: undefined };
  const key = encryptionKey(base);
  const blob = encryptJson(key, { auth_token: 'tok-123456' });
  t.false(blob.includes(Buffer.from('tok-123456')));
  t.deepEqual(decryptJson(key, blob), { auth_token: 'tok-123456' });
  const tampered = Buffer.from(blob);
  tampered[tampered.length - 1]! ^= 1;
  t.throws(() => decryptJson(key, tampered));
  const other = encryptionKey({ ...base, TELEPHONY_ENCRYPTION_KEY: 'a'.repeat(64) });
  t.notDeepEqual(other, key);
  t.throws(() => decryptJson(other, blob));
  t.is(mask('abcdefghij'), '••••ghij');
  t.is(mask('short'), '••••');
});

test('base-URL overrides replace scheme, host and port only; transfer TwiML', (t) => {
  t.is(withBase('https://api.twilio.com', 'http://127.0.0.1:4010'), 'http://127.0.0.1:4010');
  t.is(withBase('https://api.twilio.com', undefined), 'https://api.twilio.com');
  t.is(withBase('https://api.twilio.com', 'http://127.0.0.1:4010/ignored/path'), 'http://127.0.0.1:4010');
  const xml = transferTwiml({ destination: '+14155550123', timeoutS: 30, recordingCallbackUrl: 'https://x.example/cb?a=1&b=2', callerId: null });
  t.regex(xml, /<Dial timeout="30" record="record-from-answer-dual" recordingStatusCallback="https:\/\/x\.example\/cb\?a=1&amp;b=2"/);
  t.regex(xml, /<Number>\+14155550123<\/Number>/);
  t.regex(transferTwiml({ destination: 'sip:desk@pbx.example.com', timeoutS: 20, recordingCallbackUrl: null, callerId: '+14155550100' }), /<Dial timeout="20" callerId="\+14155550100"><Sip>sip:desk@pbx\.example\.com<\/Sip><\/Dial>/);
});

test('transfer destinations: numbers, SIP URIs (SIP/… and PJSIP/… with a host) and host-less extensions; dial-out carriers refuse an extension', async (t) => {
  const { parseTransferDestination, dialOutTarget } = await import('../../core/telephony/transfer-target.ts');
  const { plivoTransferXml } = await import('../../core/telephony/plivo.ts');
  t.deepEqual(parseTransferDestination('+14155550123'), { kind: 'pstn', number: '+14155550123' });
  t.deepEqual(parseTransferDestination('SIP/alice@pbx.example.com'), { kind: 'sip', uri: 'sip:alice@pbx.example.com' });
  t.deepEqual(parseTransferDestination('PJSIP/1001@10.0.0.5:5060'), { kind: 'sip', uri: 'sip:1001@10.0.0.5:5060' });
  t.deepEqual(parseTransferDestination('SIPS:desk@pbx.example.com'), { kind: 'sip', uri: 'sips:desk@pbx.example.com' });
  t.deepEqual(parseTransferDestination(' PJSIP/123 '), { kind: 'extension', extension: '123', endpoint: 'PJSIP/123' });
  t.deepEqual(parseTransferDestination('SIP/123'), { kind: 'extension', extension: '123', endpoint: 'SIP/123' });
  t.throws(() => dialOutTarget('twilio', 'Twilio', 'PJSIP/1001'), { message: /^provider_not_supported: Twilio cannot reach the SIP endpoint 'PJSIP\/1001': it has no host/ });
  const req = (destination: string) => ({ destination, timeoutS: 20, recordingCallbackUrl: null, callerId: null });
  t.regex(transferTwiml(req('SIP/alice@pbx.example.com')), /<Sip>sip:alice@pbx\.example\.com<\/Sip>/);
  t.notRegex(transferTwiml(req('PJSIP/1001@pbx.example.com')), /<Number>/);
  t.regex(plivoTransferXml(req('SIP/alice@pbx.example.com')), /<User>sip:alice@pbx\.example\.com<\/User>/);
  t.regex(plivoTransferXml(req('+14155550123')), /<Number>14155550123<\/Number>/);
});

test('what each carrier can transfer to and record: transferSupport / recordingSupport are static and name the carrier and destination', async (t) => {
  const { carrierFor } = await import('../../core/telephony/registry.ts');
  const can = (id: string, d: string) => carrierFor(id)!.transferSupport(d);
  const destinations = ['+14155550123', 'sip:desk@pbx.example.com', 'PJSIP/7001@10.0.0.5', 'PJSIP/123', 'SIP/123'];
  // [number, SIP URI, SIP endpoint with host, host-less PJSIP, host-less SIP] → can (true) or not
  const table: Record<string, boolean[]> = {
    twilio: [true, true, true, false, false],
    plivo: [true, true, true, false, false],
    telnyx: [true, true, true, false, false],
    vonage: [true, true, true, false, false],
    smartflo: [true, false, false, true, true],
    exotel: [false, false, false, false, false],
  };
  for (const [id, row] of Object.entries(table)) {
    destinations.forEach((d, i) => {
      const why = can(id, d);
      t.is(why === null, row[i]!, `${id} → ${d}: ${why}`);
      if (why) {
        t.true(why.startsWith(`${{ twilio: 'Twilio', plivo: 'Plivo', telnyx: 'Telnyx', vonage: 'Vonage', smartflo: 'Smartflo', exotel: 'Exotel' }[id]} cannot`), why);
        t.true(why.includes(d), why);
      }
    });
  }
  t.regex(can('smartflo', 'PJSIP/desk')!, /extensions are numbers/);
  const rec = (id: string, what: 'outbound_call' | 'inbound_call' | 'transfer_leg') => carrierFor(id)!.recordingSupport(what) === null;
  for (const id of ['twilio', 'plivo', 'telnyx', 'vonage']) for (const w of ['outbound_call', 'inbound_call', 'transfer_leg'] as const) t.true(rec(id, w), `${id} ${w}`);
  t.deepEqual([rec('exotel', 'outbound_call'), rec('exotel', 'inbound_call'), rec('exotel', 'transfer_leg')], [true, false, false]);
  t.deepEqual([rec('smartflo', 'outbound_call'), rec('smartflo', 'inbound_call'), rec('smartflo', 'transfer_leg')], [false, false, false]);
  t.regex(carrierFor('exotel')!.recordingSupport('inbound_call')!, /^Exotel.*flow/);
});
