// Vonage (Voice API), REST/webhook half: `POST /v1/calls` with an inline NCCO whose `connect` action bridges the
// call to our WebSocket (raw 16-bit linear PCM, transport media/transports/carriers/vonage.ts), call modification
// (`PUT /v1/calls/{uuid}`: hangup, transfer), the Application (answer_url / event_url of inbound calls), the
// account's numbers (ownership, linking a number to the application), signed webhooks and status mapping.
// Base URL: VONAGE_API_BASE_URL replaces scheme/host/port of both Vonage hosts (https://api.nexmo.com for calls and
// applications, https://rest.nexmo.com for numbers); paths are Vonage's.
//
// Vonage facts used here (developer.vonage.com): the Voice API authenticates with a JWT signed RS256 by the
// application's private key (claims application_id, iat, exp, jti); Applications API and Numbers API take the
// account's api_key/api_secret. Signed callbacks carry `Authorization: Bearer <JWT>` signed HS256 with the
// account's signature secret, with `payload_hash` = hex SHA-256 of the body. Event webhooks carry `status`
// (started, ringing, answered, busy, cancelled, failed, rejected, timeout, unanswered, completed; with
// advanced machine detection also `human` / `machine`). The WebSocket has no clear message and no marks.
import { createHash, createHmac, createPrivateKey, randomUUID, sign as signData, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { mapCarrierStatus, withReason } from './status.ts';
import { CarrierHttpError, type CarrierAdapter, type CarrierContext, type CarrierEvent, type Credentials, type TransferRequest, type WebhookRequest } from './types.ts';
import { dialOutSupport, dialOutTarget } from './transfer-target.ts';
import { withBase } from './urls.ts';

const pem = z.string().min(1).max(16384).refine((v) => {
  try {
    createPrivateKey(v);
    return true;
  } catch {
    return false;
  }
}, 'private_key must be the PEM private key of the Vonage application');

export const vonageCredentials = z.object({
  api_key: z.string().trim().min(1).max(64),
  api_secret: z.string().trim().min(1).max(256),
  application_id: z.string().trim().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'application_id must be the Vonage application UUID'),
  private_key: pem,
  /** Verifies signed callbacks (Dashboard → Settings → signature secret, HMAC/SHA-256 JWT). */
  signature_secret: z.string().min(1).max(512),
});
export type VonageCredentials = z.infer<typeof vonageCredentials>;

const creds = (c: Credentials) => c as VonageCredentials;
const digits = (n: string) => n.replace(/^\+/, '');
const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

function apiBase(config: Config): string {
  return withBase('https://api.nexmo.com', config.VONAGE_API_BASE_URL);
}
const restBase = (config: Config) => withBase('https://rest.nexmo.com', config.VONAGE_API_BASE_URL);

/** The Voice API's bearer token: RS256 with the application's private key. */
export function vonageAppJwt(c: VonageCredentials, nowS = Math.floor(Date.now() / 1000), ttlS = 300): string {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify({ application_id: c.application_id, iat: nowS, exp: nowS + ttlS, jti: randomUUID() }));
  const sig = signData('sha256', Buffer.from(`${head}.${body}`), createPrivateKey(c.private_key));
  return `${head}.${body}.${b64url(sig)}`;
}

const basic = (c: VonageCredentials) => `Basic ${Buffer.from(`${c.api_key}:${c.api_secret}`).toString('base64')}`;

function messageOf(r: CarrierResponse): string {
  const b = r.body as { title?: unknown; detail?: unknown; error_title?: unknown; 'error-code-label'?: unknown } | null;
  const parts = [b?.title, b?.detail, b?.error_title, b?.['error-code-label']].filter((x) => typeof x === 'string' && x);
  return parts.length ? parts.join(': ') : r.text.slice(0, 300) || `HTTP ${r.status}`;
}

function check(r: CarrierResponse): void {
  if (r.status >= 200 && r.status < 300) return;
  throw new CarrierHttpError('vonage', r.status, messageOf(r));
}

const voice = (ctx: CarrierContext, c: VonageCredentials, method: string, path: string, json?: unknown) =>
  carrierRequest(ctx.config, 'vonage', `${apiBase(ctx.config)}${path}`, { method, headers: { authorization: `Bearer ${vonageAppJwt(c)}` }, ...(json !== undefined ? { json } : {}) });
const appApi = (ctx: CarrierContext, c: VonageCredentials, method: string, json?: unknown) =>
  carrierRequest(ctx.config, 'vonage', `${apiBase(ctx.config)}/v2/applications/${encodeURIComponent(c.application_id)}`, {
    method, headers: { authorization: basic(c) }, ...(json !== undefined ? { json } : {}),
  });

/** Audio on the WebSocket: 16 kHz linear PCM (Vonage's wideband option; 640-byte frames of 20 ms). */
export const VONAGE_CONTENT_TYPE = 'audio/l16;rate=16000';

/** The NCCO bridging the call to our media stream. */
/** The whole-call recording of recordInProviderConsole (asynchronous: the NCCO goes on). */
const RECORD_ACTION = { action: 'record', split: 'conversation', channels: 2, format: 'mp3' };

export function vonageConnectNcco(streamUrl: string, callId: string): unknown[] {
  return [{ action: 'connect', endpoint: [{ type: 'websocket', uri: streamUrl, 'content-type': VONAGE_CONTENT_TYPE, headers: { callId } }] }];
}

function transferNcco(req: TransferRequest): unknown[] {
  const to = dialOutTarget('vonage', 'Vonage', req.destination);
  const endpoint = to.kind === 'sip' ? { type: 'sip', uri: to.uri } : { type: 'phone', number: digits(to.number) };
  const connect = { action: 'connect', timeout: Math.round(req.timeoutS), ...(req.callerId ? { from: digits(req.callerId) } : {}), endpoint: [endpoint] };
  // recordTransfer: an asynchronous `record` before the `connect` records the conversation the caller has with the
  // destination; Vonage posts {recording_url, recording_uuid, start_time, end_time} to its eventUrl when it is saved
  return req.recordingCallbackUrl
    ? [{ ...RECORD_ACTION, eventUrl: [req.recordingCallbackUrl], eventMethod: 'POST' }, connect]
    : [connect];
}

/** HS256 JWT of a signed callback: signature, expiry and the body's payload_hash. */
export function verifyVonageSignature(signatureSecret: string, req: WebhookRequest, nowS = Date.now() / 1000): boolean {
  const h = req.headers.authorization;
  const auth = Array.isArray(h) ? h[0] : h;
  const m = auth ? /^Bearer\s+([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(auth.trim()) : null;
  if (!m || !signatureSecret) return false;
  let head: { alg?: unknown };
  let claims: { exp?: unknown; payload_hash?: unknown };
  try {
    head = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(m[2]!, 'base64url').toString('utf8'));
  } catch {
    return false;
  }
  if (head.alg !== 'HS256') return false;
  const want = createHmac('sha256', signatureSecret).update(`${m[1]}.${m[2]}`).digest();
  const got = Buffer.from(m[3]!, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return false;
  if (typeof claims.exp === 'number' && claims.exp < nowS) return false;
  const body = req.rawBody ?? Buffer.alloc(0);
  if (body.length > 0 || claims.payload_hash !== undefined) {
    const hash = createHash('sha256').update(body).digest('hex');
    if (typeof claims.payload_hash !== 'string' || claims.payload_hash.toLowerCase() !== hash) return false;
  }
  return true;
}

const TERMINAL = new Set(['busy', 'cancelled', 'failed', 'rejected', 'timeout', 'unanswered', 'completed']);

function mapStatus(raw: string): string {
  // a failed or rejected call's `detail` (`failed:cannot_route`, `rejected:unavailable`) says why
  return mapCarrierStatus(raw, (s) => (s === 'timeout' || s === 'unanswered' ? 'no_answer' : s === 'rejected' ? 'rejected' : undefined));
}

function parse(hook: string, req: WebhookRequest): CarrierEvent[] {
  const b = (req.json && typeof req.json === 'object' ? req.json : req.params) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');
  const uuid = str(b.uuid) || null;
  const status = str(b.status).toLowerCase();
  if (hook === 'recording') {
    // the `record` action's eventUrl: the saved recording (its call is the conversation, not a leg uuid)
    const start = Date.parse(str(b.start_time));
    const end = Date.parse(str(b.end_time));
    if (!str(b.recording_url) && !str(b.recording_uuid)) return [];
    return [{
      type: 'recording', url: str(b.recording_url) || null, carrierCallId: str(b.conversation_uuid) || uuid,
      durationS: Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, Math.round((end - start) / 100) / 10) : null,
    }];
  }
  if (hook === 'voice' && !status && str(b.to)) return [{ type: 'inbound', from: str(b.from), to: str(b.to), carrierCallId: uuid }];
  if (!status) return [];
  if (status === 'machine' || status === 'human') {
    // mode default: `machine`, then `machine` with sub_state beep_start (the beep) or beep_timeout (no beep came)
    const sub = str(b.sub_state);
    const answeredBy = status === 'human' ? 'human' : sub === 'beep_start' ? 'machine_end_beep' : sub === 'beep_timeout' ? 'machine_end_other' : 'machine_start';
    return [{ type: 'amd', answeredBy, carrierCallId: uuid }];
  }
  const duration = b.duration !== undefined ? Number(b.duration) : null;
  const reason = status === 'failed' || status === 'rejected' ? str(b.detail) : '';
  return [{ type: 'status', raw: withReason(status, reason), terminal: TERMINAL.has(status), carrierCallId: uuid, durationS: duration !== null && Number.isFinite(duration) ? duration : null }];
}

const ncco = (body: unknown) => ({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });

export const vonage: CarrierAdapter = {
  id: 'vonage',
  credentialsSchema: vonageCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: vonageCredentials as unknown as z.ZodType<Credentials>,
  secretFields: ['api_secret', 'private_key', 'signature_secret'],
  canDial: () => true,
  apiBase,
  carrierAmd: true,
  amdMessageEnd: true,
  accountRef: (c) => creds(c).application_id,

  async probeCredentials(ctx, c) {
    const r = await appApi(ctx, creds(c), 'GET');
    if (r.status >= 200 && r.status < 300) return { ok: true };
    if (r.status === 401 || r.status === 403) return { ok: false, reason: `Vonage refused the API key and secret (HTTP ${r.status}: ${messageOf(r)})` };
    if (r.status === 404) return { ok: false, reason: `Vonage has no application ${creds(c).application_id} on this account` };
    throw new CarrierHttpError('vonage', r.status, messageOf(r));
  },

  async probeNumber(ctx, c, e164) {
    const cr = creds(c);
    const q = new URLSearchParams({ api_key: cr.api_key, api_secret: cr.api_secret, pattern: digits(e164), search_pattern: '0' });
    const r = await carrierRequest(ctx.config, 'vonage', `${restBase(ctx.config)}/account/numbers?${q}`, { method: 'GET' });
    check(r);
    const hit = ((r.body as { numbers?: Array<{ msisdn?: unknown; country?: unknown }> } | null)?.numbers ?? []).find((n) => n.msisdn === digits(e164));
    return hit ? { owned: true, ref: typeof hit.country === 'string' ? hit.country : null } : { owned: false };
  },

  async syncInbound(ctx, c, e164, urls) {
    if (!urls) return { ok: true, message: null };
    const cr = creds(c);
    try {
      const owned = await vonage.probeNumber(ctx, c, e164);
      if (!owned.owned || !owned.ref) return { ok: false, message: `Phone number ${e164} is not owned by this Vonage account` };
      const app = await appApi(ctx, cr, 'GET');
      check(app);
      const current = app.body as { name?: unknown; capabilities?: Record<string, unknown> } | null;
      check(await appApi(ctx, cr, 'PUT', {
        name: typeof current?.name === 'string' ? current.name : 'voice-agent',
        capabilities: {
          ...(current?.capabilities ?? {}),
          voice: {
            webhooks: { answer_url: { address: urls.voiceUrl, http_method: 'POST' }, event_url: { address: urls.statusCallbackUrl, http_method: 'POST' } },
            signed_callbacks: true,
          },
        },
      }));
      const form = new URLSearchParams({ api_key: cr.api_key, api_secret: cr.api_secret, country: owned.ref, msisdn: digits(e164), app_id: cr.application_id });
      check(await carrierRequest(ctx.config, 'vonage', `${restBase(ctx.config)}/number/update`, { method: 'POST', form }));
      return { ok: true, message: `answer_url of application ${cr.application_id} set to ${urls.voiceUrl}` };
    } catch (err) {
      return { ok: false, message: `Vonage was not updated: ${(err as Error).message}` };
    }
  },

  async dial(ctx, c, req) {
    const r = await voice(ctx, creds(c), 'POST', '/v1/calls', {
      to: [/^sips?:/i.test(req.to) ? { type: 'sip', uri: req.to } : { type: 'phone', number: digits(req.to) }],
      from: { type: 'phone', number: digits(req.from) },
      // recordInProviderConsole: an NCCO `record` action first (asynchronous: the call goes on to the connect)
      ncco: [...(req.record ? [RECORD_ACTION] : []), ...vonageConnectNcco(req.streamUrl, req.callId)],
      event_url: [req.statusCallbackUrl],
      event_method: 'POST',
      ringing_timer: Math.min(120, Math.max(1, Math.round(req.timeoutS))),
      // mode default: asynchronous detection with beep detection (the beep is where a voicemail message goes)
      ...(req.amd ? { advanced_machine_detection: { behavior: 'continue', mode: 'default', beep_timeout: 45 } } : {}),
    });
    check(r);
    const uuid = (r.body as { uuid?: unknown } | null)?.uuid;
    return { carrierCallId: typeof uuid === 'string' ? uuid : null };
  },

  // Play DTMF into the call (PUT /v1/calls/{uuid}/dtmf); the WebSocket leg goes on
  async sendDtmf(ctx, c, carrierCallId, digits) {
    check(await voice(ctx, creds(c), 'PUT', `/v1/calls/${encodeURIComponent(carrierCallId)}/dtmf`, { digits }));
  },

  async hangup(ctx, c, carrierCallId) {
    const r = await voice(ctx, creds(c), 'PUT', `/v1/calls/${encodeURIComponent(carrierCallId)}`, { action: 'hangup' });
    if (r.status === 404) return;
    check(r);
  },

  transferSupport: (destination) => dialOutSupport('Vonage', destination),
  // an NCCO record action on dial/answer and before a transfer's connect
  recordingSupport: () => null,

  async transfer(ctx, c, carrierCallId, req) {
    const r = await voice(ctx, creds(c), 'PUT', `/v1/calls/${encodeURIComponent(carrierCallId)}`, {
      action: 'transfer', destination: { type: 'ncco', ncco: transferNcco(req) },
    });
    check(r);
  },

  // the signed-callback JWT names the application (checked with its signature secret afterwards)
  accountOf: (req) => {
    const h = req.headers.authorization;
    const m = /^Bearer\s+[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\./.exec((Array.isArray(h) ? h[0] : h) ?? '');
    try {
      const id = m ? (JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as { application_id?: unknown }).application_id : null;
      return typeof id === 'string' ? id : null;
    } catch {
      return null;
    }
  },

  verifyWebhook(c, req) {
    return verifyVonageSignature(creds(c).signature_secret, req);
  },

  mapStatus,

  hooks: {
    parse,
    async bridge(_ctx, _c, call) {
      // recordInProviderConsole on an answered (inbound) call: the same asynchronous NCCO `record` first
      return ncco([...(call.record ? [RECORD_ACTION] : []), ...vonageConnectNcco(call.streamUrl, call.callId)]);
    },
    async refuse(_ctx, _c, _id, message) {
      return ncco(message ? [{ action: 'talk', text: message }] : [{ action: 'talk', text: ' ' }]);
    },
    // recording_url downloads take the application's JWT; it must outlive the download's retry window (45 minutes)
    recordingHeaders: (c) => ({ authorization: `Bearer ${vonageAppJwt(creds(c), undefined, 3600)}` }),
  },
};
