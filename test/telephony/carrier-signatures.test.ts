// Carrier webhook signatures checked against the carriers' own SDKs (devDependencies twilio, plivo, telnyx,
// @vonage/jwt), one table per carrier: a callback signed the way the carrier's published code signs or accepts it
// is accepted by our runtime verifier, and every tampered variant (another field value, another URL, another key,
// a replayed nonce or stale timestamp) is refused by ours exactly when the SDK refuses it.
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import test from 'ava';
import { plivoV3Signature, verifyPlivoSignature } from '../../core/telephony/plivo.ts';
import { verifyTelnyxSignature } from '../../core/telephony/telnyx.ts';
import { verifyTwilioSignature } from '../../core/telephony/twilio.ts';
import type { WebhookRequest } from '../../core/telephony/types.ts';
import { verifyVonageSignature } from '../../core/telephony/vonage.ts';
import { sdkPlivoAccepts, sdkTelnyxAccepts, sdkTwilioAccepts, sdkTwilioSignature, sdkVonageAccepts } from '../fakes/carrier-sdks.ts';
import { signPlivoV3 } from '../fakes/plivo.ts';

const BASE = 'https://voice.example.com/api/v1/telephony';

// ── Twilio ──────────────────────────────────────────────────────────────────────────────────────────────────
const twilioCases: Array<{ name: string; url: string; params: Record<string, string> }> = [
  { name: 'status callback', url: `${BASE}/twilio/status/6f1c`, params: { CallSid: 'CA1', CallStatus: 'busy', AccountSid: 'AC1', To: '+14155550199' } },
  { name: 'with a query', url: `${BASE}/twilio/voice?b=2&a=1`, params: { CallSid: 'CA2', From: '+1 415', Caller: 'Zoë Ünïcode' } },
  { name: 'no fields', url: `${BASE}/twilio/answer/x`, params: {} },
  { name: 'explicit default port', url: 'https://voice.example.com:443/api/v1/telephony/twilio/voice', params: { CallSid: 'CA3' } },
];
for (const c of twilioCases) {
  test(`Twilio (twilio SDK): ${c.name} — SDK-signed accepted, tampered refused`, (t) => {
    const token = randomBytes(16).toString('hex');
    const sig = sdkTwilioSignature(token, c.url, c.params);
    const req = (url: string, params: Record<string, string>, s: string): WebhookRequest => ({ url, params, headers: { 'x-twilio-signature': s } });
    t.true(verifyTwilioSignature(token, req(c.url, c.params, sig)));
    const tampered: Array<[string, string, Record<string, string>, string, string]> = [
      ['another field value', c.url, { ...c.params, CallStatus: 'completed' }, sig, token],
      ['another URL', `${c.url}x`, c.params, sig, token],
      ['another token', c.url, c.params, sig, 'wrong-token'],
      ['no signature', c.url, c.params, '', token],
    ];
    for (const [what, url, params, s, tok] of tampered) {
      t.is(sdkTwilioAccepts(tok, s, url, params), false, `the SDK refuses: ${what}`);
      t.false(verifyTwilioSignature(tok, req(url, params, s)), what);
    }
  });
}

// ── Plivo ───────────────────────────────────────────────────────────────────────────────────────────────────
const plivoCases: Array<{ name: string; method: 'GET' | 'POST'; url: string; params: Record<string, string> }> = [
  { name: 'hangup callback', method: 'POST', url: `${BASE}/plivo/status/6f1c`, params: { CallUUID: 'u-1', CallStatus: 'busy', From: '14155550100', To: '14155550199', Event: 'Hangup' } },
  { name: 'inbound answer_url', method: 'POST', url: `${BASE}/plivo/voice`, params: { CallUUID: 'u-2', Direction: 'inbound', From: '14155550100', To: '14155550199', CallerName: '+14155550100' } },
  { name: 'POST with a query', method: 'POST', url: `${BASE}/plivo/answer/abc?b=2&a=1&a=0`, params: { CallUUID: 'u-3', CallStatus: 'in-progress' } },
  { name: 'POST with an encoded query and spaces in fields', method: 'POST', url: `${BASE}/plivo/voice?x=a%20b&y=c%2Fd`, params: { CallerName: 'Jane Doe', To: 'sip:a@b.c' } },
  { name: 'POST without fields', method: 'POST', url: `${BASE}/plivo/transfer/abc`, params: {} },
  { name: 'GET with a query', method: 'GET', url: `${BASE}/plivo/answer/abc?CallUUID=u-4&CallStatus=ringing`, params: {} },
  { name: 'explicit port', method: 'POST', url: 'https://voice.example.com:8443/api/v1/telephony/plivo/voice', params: { CallUUID: 'u-5' } },
];
for (const c of plivoCases) {
  test(`Plivo (plivo SDK validateV3Signature): ${c.name} — our construction is the SDK's; tampered refused by both`, (t) => {
    const token = randomBytes(20).toString('hex');
    const nonce = String(Math.floor(Math.random() * 1e18));
    const sig = plivoV3Signature(token, c.method, c.url, c.params, nonce);
    t.true(sdkPlivoAccepts(c.method, c.url, nonce, token, sig, c.params), 'the SDK accepts the signature our verifier expects');
    if (c.method === 'POST') t.is(signPlivoV3(token, c.url, c.params, nonce), sig, 'the fake carrier signs the same');
    const req = (url: string, params: Record<string, string>, s: string, n: string): WebhookRequest => ({
      url, params, method: c.method, headers: { 'x-plivo-signature-v3': s, 'x-plivo-signature-v3-nonce': n },
    });
    t.true(verifyPlivoSignature(token, req(c.url, c.params, sig, nonce)));
    t.true(verifyPlivoSignature(token, req(c.url, c.params, `${plivoV3Signature('rotated', c.method, c.url, c.params, nonce)},${sig}`, nonce)), 'one of several comma-separated signatures');
    const field = c.method === 'POST' ? { ...c.params, CallStatus: 'completed' } : c.params;
    const tampered: Array<[string, string, Record<string, string>, string, string]> = [
      ['another URL', c.url.replace('/plivo/', '/plivo-x/'), c.params, nonce, token],
      ['another nonce', c.url, c.params, `${nonce}1`, token],
      ['another token', c.url, c.params, nonce, 'wrong-token'],
      ...(c.method === 'POST' ? [['another field value', c.url, field, nonce, token] as [string, string, Record<string, string>, string, string]] : []),
    ];
    for (const [what, url, params, n, tok] of tampered) {
      t.false(sdkPlivoAccepts(c.method, url, n, tok, sig, params), `the SDK refuses: ${what}`);
      t.false(verifyPlivoSignature(tok, req(url, params, sig, n)), what);
    }
  });
}

// ── Telnyx ──────────────────────────────────────────────────────────────────────────────────────────────────
test('Telnyx (telnyx SDK webhooks.unwrap): Ed25519 over "timestamp|body" accepted; another body, key or a stale timestamp refused by both', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
  const body = JSON.stringify({ data: { event_type: 'call.hangup', payload: { call_control_id: 'v3:x', hangup_cause: 'user_busy' } } });
  const now = Math.floor(Date.now() / 1000);
  const headersOf = (ts: number, b: string, key = privateKey) => ({ 'telnyx-timestamp': String(ts), 'telnyx-signature-ed25519': sign(null, Buffer.from(`${ts}|${b}`), key).toString('base64') });
  const ours = (h: Record<string, string>, b: string) => verifyTelnyxSignature(pub, { url: 'https://x/y', params: {}, rawBody: Buffer.from(b), headers: h });
  const good = headersOf(now, body);
  t.true(await sdkTelnyxAccepts(pub, body, good));
  t.true(ours(good, body));
  const other = body.replace('user_busy', 'normal_clearing');
  const cases: Array<[string, Record<string, string>, string]> = [
    ['another body', good, other],
    ['another key', headersOf(now, body, generateKeyPairSync('ed25519').privateKey), body],
    ['stale timestamp', headersOf(now - 600, body), body],
    ['no signature', { 'telnyx-timestamp': String(now) }, body],
  ];
  for (const [what, h, b] of cases) {
    t.false(await sdkTelnyxAccepts(pub, b, h), `the SDK refuses: ${what}`);
    t.false(ours(h, b), what);
  }
});

// ── Vonage ──────────────────────────────────────────────────────────────────────────────────────────────────
test('Vonage (@vonage/jwt verifySignature): the signed-callback HS256 JWT accepted; another secret, alg none or expiry refused by both; a changed body refused by its payload_hash', (t) => {
  const secret = randomBytes(24).toString('hex');
  const body = JSON.stringify({ status: 'busy', uuid: 'u' });
  const now = Math.floor(Date.now() / 1000);
  const jwt = (claims: Record<string, unknown>, key = secret, alg = 'HS256') => {
    const h = Buffer.from(JSON.stringify({ alg, typ: 'JWT' })).toString('base64url');
    const c = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${h}.${c}.${alg === 'none' ? '' : createHmac('sha256', key).update(`${h}.${c}`).digest('base64url')}`;
  };
  const hash = createHash('sha256').update(body).digest('hex');
  const ours = (token: string, b = body) => verifyVonageSignature(secret, { url: 'https://x', params: {}, rawBody: Buffer.from(b), headers: { authorization: `Bearer ${token}` } });
  const good = jwt({ iat: now, exp: now + 300, jti: 'j', iss: 'Vonage', payload_hash: hash, api_key: 'k', application_id: 'a' });
  t.true(sdkVonageAccepts(good, secret));
  t.true(ours(good));
  for (const [what, token] of [
    ['another secret', jwt({ iat: now, payload_hash: hash }, 'other')],
    ['alg none', jwt({ iat: now, payload_hash: hash }, secret, 'none')],
    ['expired', jwt({ iat: now - 600, exp: now - 300, payload_hash: hash })],
  ] as const) {
    t.false(sdkVonageAccepts(token, secret), `the SDK refuses: ${what}`);
    t.false(ours(token), what);
  }
  t.false(ours(good, JSON.stringify({ status: 'completed', uuid: 'u' })), 'payload_hash covers the body (documented; the SDK checks only the JWT)');
});
