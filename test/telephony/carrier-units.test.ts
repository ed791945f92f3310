// Unit checks of the carriers: webhook signatures (Plivo V3, Telnyx Ed25519, Vonage signed
// JWT) against independently computed ones, tampering and replay windows; status mapping to the spec's values;
// the Vonage application JWT; base-URL overrides; the L16 codec's framing.
import { createHash, createHmac, generateKeyPairSync, sign, verify } from 'node:crypto';
import test from 'ava';
import { loadConfig } from '../../core/config.ts';
import { exotel } from '../../core/telephony/exotel.ts';
import { plivo, verifyPlivoSignature } from '../../core/telephony/plivo.ts';
import { telnyx, verifyTelnyxSignature } from '../../core/telephony/telnyx.ts';
import { vonage, vonageAppJwt, verifyVonageSignature } from '../../core/telephony/vonage.ts';
import { L16Decoder, L16Encoder } from '../../media/audio/l16-stream.ts';
import { MulawDecoder, MulawEncoder } from '../../media/audio/mulaw-stream.ts';
import { signPlivoV3 } from '../fakes/plivo.ts';

test('Plivo V3: query + sorted POST params + nonce; comma-separated tokens; tampering and a wrong nonce fail', (t) => {
  const url = 'https://voice.example.com/api/v1/telephony/plivo/status/abc?b=2&a=1';
  const params = { CallUUID: 'u-1', CallStatus: 'busy', From: '14155550100', To: '14155550199' };
  const nonce = '05429567804466091622';
  const sig = signPlivoV3('token-1', url, params, nonce);
  const req = (p: Record<string, string>, s: string, n = nonce) => ({ url, params: p, method: 'POST', headers: { 'x-plivo-signature-v3': s, 'x-plivo-signature-v3-nonce': n } });
  t.true(verifyPlivoSignature('token-1', req(params, sig)));
  t.true(verifyPlivoSignature('token-1', req(params, `${signPlivoV3('other', url, params, nonce)},${sig}`)), 'any of several signatures');
  t.false(verifyPlivoSignature('token-1', req({ ...params, CallStatus: 'completed' }, sig)));
  t.false(verifyPlivoSignature('token-1', req(params, sig, '1')));
  t.false(verifyPlivoSignature('token-2', req(params, sig)));
  t.false(verifyPlivoSignature('token-1', { url, params, headers: {} }));
  // no query, no POST params: just the URL and the nonce
  const bare = 'https://voice.example.com/x';
  t.true(verifyPlivoSignature('k', { url: bare, params: {}, method: 'POST', headers: { 'x-plivo-signature-v3': signPlivoV3('k', bare, {}, 'n'), 'x-plivo-signature-v3-nonce': 'n' } }));
});

test('Telnyx: Ed25519 over "timestamp|body" with the portal public key; other keys, tampered bodies and stale timestamps fail', (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
  const body = Buffer.from(JSON.stringify({ data: { event_type: 'call.hangup', payload: { call_control_id: 'v3:x', hangup_cause: 'user_busy' } } }));
  const now = 1_800_000_000;
  const signed = (ts: number, b = body, key = privateKey) => ({
    url: 'https://x/y', params: {}, rawBody: b,
    headers: { 'telnyx-timestamp': String(ts), 'telnyx-signature-ed25519': sign(null, Buffer.concat([Buffer.from(`${ts}|`), b]), key).toString('base64') },
  });
  t.true(verifyTelnyxSignature(pub, signed(now), now));
  t.false(verifyTelnyxSignature(pub, { ...signed(now), rawBody: Buffer.from(body.toString().replace('user_busy', 'normal_clearing')) }, now));
  t.false(verifyTelnyxSignature(pub, signed(now, body, generateKeyPairSync('ed25519').privateKey), now));
  t.false(verifyTelnyxSignature(pub, signed(now - 301), now), 'older than five minutes');
  t.false(verifyTelnyxSignature('not-a-key', signed(now), now));
});

test('Vonage: HS256 signed-callback JWT with payload_hash; tampering, another secret, alg none and expiry fail', (t) => {
  const body = Buffer.from(JSON.stringify({ status: 'busy', uuid: 'u' }));
  const jwt = (claims: Record<string, unknown>, secret = 's3cret', alg = 'HS256') => {
    const h = Buffer.from(JSON.stringify({ alg, typ: 'JWT' })).toString('base64url');
    const c = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `Bearer ${h}.${c}.${createHmac('sha256', secret).update(`${h}.${c}`).digest('base64url')}`;
  };
  const hash = createHash('sha256').update(body).digest('hex');
  const now = 1_800_000_000;
  const req = (auth: string, b = body) => ({ url: 'https://x', params: {}, rawBody: b, headers: { authorization: auth } });
  t.true(verifyVonageSignature('s3cret', req(jwt({ iat: now, exp: now + 300, payload_hash: hash })), now));
  t.false(verifyVonageSignature('s3cret', req(jwt({ iat: now, payload_hash: hash }), Buffer.from('{"status":"completed"}')), now));
  t.false(verifyVonageSignature('s3cret', req(jwt({ iat: now, payload_hash: hash }, 'other')), now));
  t.false(verifyVonageSignature('s3cret', req(jwt({ iat: now, payload_hash: hash }, 's3cret', 'none')), now));
  t.false(verifyVonageSignature('s3cret', req(jwt({ iat: now - 600, exp: now - 300, payload_hash: hash })), now));
  t.false(verifyVonageSignature('s3cret', req(jwt({ iat: now })), now), 'a body needs its payload_hash');
  t.false(verifyVonageSignature('s3cret', req(''), now));
});

test('Vonage application JWT: RS256 with the private key, application_id claim', (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const token = vonageAppJwt({ api_key: 'k', api_secret: 's', application_id: '11111111-2222-4333-8444-555555555555', private_key: pem, signature_secret: 'x' }, 1000);
  const [h, c, s] = token.split('.');
  t.like(JSON.parse(Buffer.from(h!, 'base64url').toString()), { alg: 'RS256' });
  t.like(JSON.parse(Buffer.from(c!, 'base64url').toString()), { application_id: '11111111-2222-4333-8444-555555555555', iat: 1000, exp: 1300 });
  t.true(verify('sha256', Buffer.from(`${h}.${c}`), publicKey, Buffer.from(s!, 'base64url')));
});

test('carrier statuses → the spec connectionStatus values (unknown ones pass through as telephony_<raw>)', (t) => {
  t.deepEqual(['completed', 'busy', 'no-answer', 'timeout', 'failed', 'cancel', 'ringing'].map((s) => plivo.mapStatus(s)),
    ['completed', 'busy', 'no_answer', 'no_answer', 'connection_failed', 'cancelled', 'telephony_ringing']);
  t.deepEqual(['normal_clearing', 'user_busy', 'timeout', 'originator_cancel', 'call_rejected', 'unallocated_number', 'unspecified', 'weird-cause'].map((s) => telnyx.mapStatus(s)),
    ['completed', 'busy', 'no_answer', 'cancelled', 'rejected', 'invalid_number', 'connection_failed', 'telephony_weird_cause']);
  t.deepEqual(['completed', 'busy', 'timeout', 'unanswered', 'failed', 'rejected', 'cancelled'].map((s) => vonage.mapStatus(s)),
    ['completed', 'busy', 'no_answer', 'no_answer', 'connection_failed', 'rejected', 'cancelled']);
  t.deepEqual(['completed', 'busy', 'no-answer', 'failed', 'canceled'].map((s) => exotel.mapStatus(s)),
    ['completed', 'busy', 'no_answer', 'connection_failed', 'cancelled']);
});

test('congestion and unreachable destinations → unreachable on every carrier that reports them', (t) => {
  // Telnyx hangup causes
  t.deepEqual(['destination_out_of_order', 'normal_temporary_failure', 'switch_congestion', 'no_route_destination', 'network_out_of_order', 'subscriber_absent', 'service_unavailable'].map((s) => telnyx.mapStatus(s)),
    Array(7).fill('unreachable'));
  // Plivo: a failed call's HangupCauseName, as the status callback parses it
  const plivoStatus = (params: Record<string, string>) => plivo.hooks!.parse('status', { url: 'https://x/status', headers: {}, params: { CallUUID: 'u1', ...params } });
  const failed = plivoStatus({ CallStatus: 'failed', HangupCauseName: 'Destination Out Of Order' })[0] as { raw: string; terminal: boolean };
  t.deepEqual([failed.raw, failed.terminal], ['failed:destination_out_of_order', true]);
  t.is(plivo.mapStatus(failed.raw), 'unreachable');
  t.is(plivo.mapStatus((plivoStatus({ CallStatus: 'failed', HangupCauseName: 'Unroutable' })[0] as { raw: string }).raw), 'unreachable');
  t.is(plivo.mapStatus((plivoStatus({ CallStatus: 'failed', HangupCauseName: 'Invalid Destination Address' })[0] as { raw: string }).raw), 'invalid_number');
  t.is(plivo.mapStatus((plivoStatus({ CallStatus: 'failed', HangupCauseName: 'Something Else' })[0] as { raw: string }).raw), 'connection_failed');
  t.is(plivo.mapStatus((plivoStatus({ CallStatus: 'busy', HangupCauseName: 'Busy Line' })[0] as { raw: string }).raw), 'busy');
  // Vonage: a failed call's detail
  const vonageEvent = (body: Record<string, unknown>) => vonage.hooks!.parse('status', { url: 'https://x/status', headers: {}, params: {}, json: { uuid: 'v1', ...body } })[0] as { raw: string; terminal: boolean };
  const cannot = vonageEvent({ status: 'failed', detail: 'cannot_route' });
  t.deepEqual([cannot.raw, cannot.terminal], ['failed:cannot_route', true]);
  t.is(vonage.mapStatus(cannot.raw), 'unreachable');
  t.is(vonage.mapStatus(vonageEvent({ status: 'rejected', detail: 'unavailable' }).raw), 'unreachable');
  t.is(vonage.mapStatus(vonageEvent({ status: 'failed', detail: 'number_out_of_service' }).raw), 'invalid_number');
  t.is(vonage.mapStatus(vonageEvent({ status: 'rejected', detail: 'restricted' }).raw), 'rejected');
  t.is(vonage.mapStatus(vonageEvent({ status: 'timeout' }).raw), 'no_answer');
});

test('<CARRIER>_API_BASE_URL replaces scheme, host and port only', (t) => {
  const c = loadConfig({ PLIVO_API_BASE_URL: 'http://127.0.0.1:9001/ignored', TELNYX_API_BASE_URL: 'http://127.0.0.1:9002', VONAGE_API_BASE_URL: 'http://127.0.0.1:9003', EXOTEL_API_BASE_URL: 'http://127.0.0.1:9004' });
  t.is(plivo.apiBase(c), 'http://127.0.0.1:9001');
  t.is(telnyx.apiBase(c), 'http://127.0.0.1:9002');
  t.is(vonage.apiBase(c), 'http://127.0.0.1:9003');
  t.is(exotel.apiBase(c), 'http://127.0.0.1:9004');
  const d = loadConfig({});
  t.deepEqual([plivo.apiBase(d), telnyx.apiBase(d), vonage.apiBase(d)], ['https://api.plivo.com', 'https://api.telnyx.com', 'https://api.nexmo.com']);
});

test('L16 codec: 24 kHz agent audio → whole 20 ms frames at the carrier rate; carrier PCM → 16 kHz', (t) => {
  const enc = new L16Encoder(16000, 640);
  const frames = enc.push(new Int16Array(480 * 5).fill(1000)); // 100 ms at 24 kHz
  t.true(frames.length >= 4 && frames.every((f) => f.length === 640));
  t.is(enc.produced, frames.length * 640);
  const tail = enc.flush();
  t.true(tail.length <= 1 && tail.every((f) => f.length === 640), 'the end: at most one padded frame');
  const dec = new L16Decoder(8000);
  const out = dec.decode(new Uint8Array(1600)); // 100 ms at 8 kHz
  t.true(Math.abs(out.length - 1600) <= 64, `${out.length} samples at 16 kHz`);
  // an odd byte split across two messages is kept for the next one
  t.is(new L16Decoder(16000).decode(new Uint8Array(3)).length, 1);
});

test('carrier encoders send each 20 ms block of agent audio as one frame at once, not a frame period later', (t) => {
  // the resampler's look-ahead must not hold back the end of a block: the first block would give no frame and every
  // frame after it would leave one pacer tick (20 ms) late
  const block = new Int16Array(480).map((_, i) => Math.round(Math.sin(i / 9) * 8000));
  for (const [name, enc, bytes] of [
    ['µ-law 8 kHz', new MulawEncoder(24000), 160],
    ['L16 16 kHz', new L16Encoder(16000, 640), 640],
    ['L16 8 kHz', new L16Encoder(8000, 320), 320],
  ] as const) {
    for (let k = 1; k <= 50; k++) {
      const frames = enc.push(block);
      t.is(frames.length, 1, `${name}: block ${k}`);
      t.is(frames[0]!.length, bytes);
    }
    // the end of the stream: only the resampler's look-ahead (< 1 ms) was still held, it leaves as one padded frame
    const tail = enc.flush();
    t.is(tail.length, 1, `${name}: one last frame`);
    t.is(tail[0]!.length, bytes);
    t.is(enc.produced, 51 * bytes);
  }
});

test('carrier decoders pass each frame of caller audio on whole at once, not its last millisecond with the next frame', (t) => {
  // the resampler's look-ahead must not keep a frame's last ~1 ms until the next one arrives: an STT vendor that
  // judges silence in 20 ms steps would see a turn's end one frame (20 ms) late
  const mulaw = new MulawDecoder(16000);
  const l16 = new L16Decoder(8000);
  const frame16 = new Uint8Array(320).map((_, i) => (i * 37) & 0xff);
  for (let k = 1; k <= 50; k++) {
    t.is(mulaw.decode(new Uint8Array(160).fill(0x55)).length, 320, `µ-law frame ${k}`);
    t.is(l16.decode(frame16).length, 320, `L16 8 kHz frame ${k}`);
  }
});

test('recordInProviderConsole in answer documents: Plivo <Record recordSession> before the stream, Vonage an asynchronous NCCO record before connect', async (t) => {
  const { plivoStreamXml } = await import('../../core/telephony/plivo.ts');
  t.regex(plivoStreamXml('wss://x/s', true), /<Response><Record recordSession="true" redirect="false"[^>]*\/><Stream /);
  t.notRegex(plivoStreamXml('wss://x/s'), /<Record/);
  const reply = await vonage.hooks!.bridge({ config: loadConfig({}) }, {}, { callId: 'c', carrierCallId: null, streamUrl: 'wss://x/s?token=t', inbound: true, record: true });
  const ncco = JSON.parse(reply.body!) as Array<{ action: string }>;
  t.deepEqual(ncco.map((a) => a.action), ['record', 'connect']);
});

test('AMD webhooks in Twilio\'s words: Telnyx detection and greeting ended, Vonage machine / beep_start / beep_timeout, Plivo Machine; end of message is machine_end_*', (t) => {
  const telnyxEvent = (event_type: string, result: string) => telnyx.hooks!.parse('status', { url: 'x', headers: {}, params: {}, json: { data: { event_type, payload: { call_control_id: 'cc-1', result } } } });
  t.like(telnyxEvent('call.machine.detection.ended', 'machine')[0], { type: 'amd', answeredBy: 'machine_start' });
  t.like(telnyxEvent('call.machine.detection.ended', 'human')[0], { type: 'amd', answeredBy: 'human' });
  t.like(telnyxEvent('call.machine.greeting.ended', 'beep_detected')[0], { type: 'amd', answeredBy: 'machine_end_beep' });
  t.like(telnyxEvent('call.machine.greeting.ended', 'ended')[0], { type: 'amd', answeredBy: 'machine_end_silence' });
  t.like(telnyxEvent('call.machine.premium.greeting.ended', 'no_beep_detected')[0], { type: 'amd', answeredBy: 'machine_end_other' });
  const vonageEvent = (body: Record<string, unknown>) => vonage.hooks!.parse('status', { url: 'x', headers: {}, params: {}, json: { uuid: 'v-1', ...body } });
  t.like(vonageEvent({ status: 'machine' })[0], { type: 'amd', answeredBy: 'machine_start' });
  t.like(vonageEvent({ status: 'machine', sub_state: 'beep_start' })[0], { type: 'amd', answeredBy: 'machine_end_beep' });
  t.like(vonageEvent({ status: 'machine', sub_state: 'beep_timeout' })[0], { type: 'amd', answeredBy: 'machine_end_other' });
  t.like(vonageEvent({ status: 'human' })[0], { type: 'amd', answeredBy: 'human' });
  t.like(plivo.hooks!.parse('amd', { url: 'x', headers: {}, params: { CallUUID: 'p-1', Machine: 'true' } })[0], { type: 'amd', answeredBy: 'machine_start' });
  t.true(!!telnyx.amdMessageEnd && !!vonage.amdMessageEnd && !plivo.amdMessageEnd, 'Plivo reports no end of message');
  t.truthy(telnyx.sendDtmf && vonage.sendDtmf && plivo.sendDtmf);
  t.falsy(exotel.sendDtmf, 'Exotel: keys in-band');
});
