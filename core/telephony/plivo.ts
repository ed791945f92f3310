// Plivo, REST/webhook half: Call API (dial, hang up, transfer), Number / Application API (ownership, inbound
// answer_url), Account API (credential probe), X-Plivo-Signature-V3, status mapping and the Plivo XML we answer with
// (`<Stream bidirectional="true">` bridging the call to our media stream, transport media/transports/carriers/plivo.ts).
// Base URL: PLIVO_API_BASE_URL replaces scheme/host/port of https://api.plivo.com; paths are Plivo's.
//
// Plivo facts used here (docs.plivo.com): `POST /v1/Account/{auth_id}/Call/` (HTTP Basic auth_id:auth_token, JSON)
// answers 201 `{message: "call fired", request_uuid}`; the CallUUID arrives with the answer/hangup callbacks.
// `hangup_url` receives CallStatus completed|busy|failed|timeout|no-answer|cancel; `machine_detection=true` posts
// `Machine=true|false` to machine_detection_url. Numbers are answered by an Application (answer_url, hangup_url)
// linked with `POST /Number/{number}/ {app_id}`: the configuration's app_id, else the account's default_app. Transfer: `POST /Call/{uuid}/ {legs: "aleg", aleg_url}` — the
// aleg_url answers `<Dial>` XML. V3 signature: `plivoV3Signature` below (checked against the plivo SDK's
// validateV3Signature in test/telephony/carrier-signatures.test.ts), header X-Plivo-Signature-V3 (comma-separated
// when the account has several tokens) with X-Plivo-Signature-V3-Nonce.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { mapCarrierStatus, withReason } from './status.ts';
import {
  CarrierHttpError, type CarrierAdapter, type CarrierContext, type CarrierEvent, type Credentials, type TransferRequest, type WebhookRequest,
} from './types.ts';
import { dialOutSupport, dialOutTarget } from './transfer-target.ts';
import { carrierHookUrl, withBase } from './urls.ts';

export const plivoCredentials = z.object({
  auth_id: z.string().trim().regex(/^[A-Za-z0-9]{10,64}$/, 'auth_id must be the Plivo Auth ID (letters and digits, e.g. MAXXXXXXXXXXXXXXXXXX)'),
  auth_token: z.string().trim().min(1).max(256),
  /** The Plivo Application answering the numbers' inbound calls; the account's default application when absent. */
  app_id: z.string().trim().min(1).max(64).optional(),
});
export type PlivoCredentials = z.infer<typeof plivoCredentials>;

const creds = (c: Credentials) => c as PlivoCredentials;
const basic = (c: PlivoCredentials) => `Basic ${Buffer.from(`${c.auth_id}:${c.auth_token}`).toString('base64')}`;
/** Plivo writes numbers as digits without "+"; SIP endpoints stay URIs. */
const plivoNumber = (n: string) => (/^sips?:/i.test(n) ? n : n.replace(/^\+/, ''));

function apiBase(config: Config): string {
  return withBase('https://api.plivo.com', config.PLIVO_API_BASE_URL);
}
const accountUrl = (config: Config, c: PlivoCredentials, rest: string) => `${apiBase(config)}/v1/Account/${encodeURIComponent(c.auth_id)}${rest}`;

function messageOf(r: CarrierResponse): string {
  const b = r.body as { error?: unknown; message?: unknown } | null;
  if (typeof b?.error === 'string') return b.error;
  if (b?.error && typeof b.error === 'object') return JSON.stringify(b.error);
  if (typeof b?.message === 'string') return b.message;
  return r.text.slice(0, 300) || `HTTP ${r.status}`;
}

function check(r: CarrierResponse): void {
  if (r.status >= 200 && r.status < 300) return;
  throw new CarrierHttpError('plivo', r.status, messageOf(r));
}

const request = (ctx: CarrierContext, c: PlivoCredentials, method: string, rest: string, json?: unknown) =>
  carrierRequest(ctx.config, 'plivo', accountUrl(ctx.config, c, rest), { method, headers: { authorization: basic(c) }, ...(json !== undefined ? { json } : {}) });

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
const XML = '<?xml version="1.0" encoding="UTF-8"?>';

export const NO_APPLICATION = 'No applicationId supplied and no default_app found for this Plivo account: set app_id to the Plivo application that should answer the number, or mark one of the account\'s applications as default';

/** The account's default application (`default_app: true` in the Application list), or null. */
async function defaultApp(ctx: CarrierContext, c: PlivoCredentials): Promise<string | null> {
  for (let offset = 0; offset < 2000; offset += 20) {
    const r = await request(ctx, c, 'GET', `/Application/?limit=20&offset=${offset}`);
    check(r);
    const body = r.body as { objects?: Array<{ app_id?: unknown; default_app?: unknown }>; meta?: { next?: unknown } } | null;
    const hit = body?.objects?.find((a) => a.default_app === true && (typeof a.app_id === 'string' || typeof a.app_id === 'number'));
    if (hit) return String(hit.app_id);
    if (!body?.meta?.next || !body.objects?.length) return null;
  }
  return null;
}

/**
 * The answer XML bridging the call to our media stream: bidirectional, 8 kHz µ-law, the call held by the stream.
 * `record` (recordInProviderConsole): `<Record recordSession="true">` first — Plivo records the whole session in the
 * background (kept on the Plivo account) and goes on to the stream.
 */
export function plivoStreamXml(streamUrl: string, record = false): string {
  const rec = record ? '<Record recordSession="true" redirect="false" maxLength="86400" fileFormat="mp3"/>' : '';
  return `${XML}<Response>${rec}<Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" streamTimeout="86400">${xmlEscape(streamUrl)}</Stream></Response>`;
}

export function plivoRefusalXml(message: string): string {
  return `${XML}<Response>${message ? `<Speak>${xmlEscape(message)}</Speak>` : ''}<Hangup/></Response>`;
}

/** An inbound call refused with the busy signal before it is answered. */
export function plivoBusyXml(): string {
  return `${XML}<Response><Hangup reason="busy"/></Response>`;
}

export function plivoTransferXml(req: TransferRequest): string {
  const attrs = [`timeout="${Math.round(req.timeoutS)}"`];
  if (req.callerId) attrs.push(`callerId="${xmlEscape(plivoNumber(req.callerId))}"`);
  const to = dialOutTarget('plivo', 'Plivo', req.destination);
  const target = to.kind === 'sip' ? `<User>${xmlEscape(to.uri)}</User>` : `<Number>${xmlEscape(plivoNumber(to.number))}</Number>`;
  // recordTransfer: <Record startOnDialAnswer> before the <Dial> records the bridged (caller-to-destination) legs from
  // the moment the destination answers; Plivo posts RecordUrl / RecordingDuration to callbackUrl when the file is ready
  const rec = req.recordingCallbackUrl
    ? `<Record startOnDialAnswer="true" redirect="false" maxLength="86400" fileFormat="mp3" callbackUrl="${xmlEscape(req.recordingCallbackUrl)}" callbackMethod="POST"/>`
    : '';
  return `${XML}<Response>${rec}<Dial ${attrs.join(' ')}>${target}</Dial></Response>`;
}

/**
 * The V3 signature of a request, built exactly as Plivo's SDKs check it (`validateV3Signature` of the `plivo` npm
 * package, `validate_v3_signature` of plivo-python): the URL as requested up to its query (scheme, host and an explicit
 * port kept as written), then for a POST with form fields `?` + the sorted, decoded query (`k=v` joined by `&`),
 * `.` when both exist, and the sorted POST fields as `key` + `value` with no separator; a GET signs the URL's sorted
 * query only. Then `.` + nonce, HMAC-SHA256 with the auth token, base64.
 */
export function plivoV3Signature(authToken: string, method: string, url: string, params: Record<string, string>, nonce: string): string {
  const noHash = url.split('#')[0]!;
  const cut = noHash.indexOf('?');
  let base = cut < 0 ? noHash : noHash.slice(0, cut);
  const q = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(cut < 0 ? '' : noHash.slice(cut + 1))) q.set(k, [...(q.get(k) ?? []), v]);
  const query = [...q.keys()].sort().flatMap((k) => [...q.get(k)!].sort().map((v) => `${k}=${v}`)).join('&');
  const post = method.toUpperCase() === 'GET' ? {} : params;
  const keys = Object.keys(post).sort();
  if (query.length > 0 || keys.length > 0) base += `?${query}`;
  if (query.length > 0 && keys.length > 0) base += '.';
  base += keys.map((k) => `${k}${post[k]}`).join('');
  return createHmac('sha256', authToken).update(`${base}.${nonce}`, 'utf8').digest('base64');
}

/** Our inbound URLs carry the Auth ID (`?account=`): the look-up key of the keys to verify a webhook with. */
const withAccount = (url: string, authId: string) => `${url}${url.includes('?') ? '&' : '?'}account=${encodeURIComponent(authId)}`;
function accountParam(url: string): string | null {
  try {
    return new URL(url).searchParams.get('account');
  } catch {
    return null;
  }
}

const header = (h: WebhookRequest['headers'], name: string) => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

export function verifyPlivoSignature(authToken: string, req: WebhookRequest): boolean {
  const sig = header(req.headers, 'x-plivo-signature-v3');
  const nonce = header(req.headers, 'x-plivo-signature-v3-nonce');
  if (!sig || !nonce || !authToken) return false;
  const want = Buffer.from(plivoV3Signature(authToken, req.method ?? 'POST', req.url, req.params, nonce));
  return sig.split(',').some((s) => {
    const got = Buffer.from(s.trim());
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

/** Plivo call statuses that end a call (hangup_url). */
const TERMINAL = new Set(['completed', 'busy', 'failed', 'timeout', 'no-answer', 'cancel']);

function mapStatus(raw: string): string {
  // `timeout`: the ring timeout ran out; a failed call's HangupCauseName (`failed:destination_out_of_order`) says why
  return mapCarrierStatus(raw, (s) => (s === 'timeout' ? 'no_answer' : s === 'cancel' ? 'cancelled' : undefined));
}

function parse(hook: string, req: WebhookRequest): CarrierEvent[] {
  const p = req.params;
  const uuid = p.CallUUID || null;
  switch (hook) {
    case 'answer':
      return [{ type: 'answer', carrierCallId: uuid }];
    case 'transfer':
      return [{ type: 'transfer_leg', carrierCallId: uuid }];
    case 'recording': {
      // <Record> callbackUrl: RecordUrl when the file is ready (no RecordUrl: nothing was recorded)
      const d = p.RecordingDuration !== undefined && p.RecordingDuration !== '' ? Number(p.RecordingDuration) : null;
      return [{ type: 'recording', url: p.RecordUrl || null, durationS: d !== null && Number.isFinite(d) && d >= 0 ? d : null, carrierCallId: uuid }];
    }
    case 'amd':
      if (p.Machine === undefined) return [];
      return [{ type: 'amd', answeredBy: p.Machine.toLowerCase() === 'true' ? 'machine_start' : 'human', carrierCallId: uuid }];
    case 'voice':
      if ((p.Direction ?? 'inbound').toLowerCase() !== 'inbound' || !p.To) return [];
      return [{ type: 'inbound', from: p.From ?? p.CallerName ?? '', to: p.To, carrierCallId: uuid }];
    case 'status':
    case 'voice-status': {
      const raw = (p.CallStatus ?? '').toLowerCase();
      if (!raw) return [];
      const duration = p.Duration !== undefined && p.Duration !== '' ? Number(p.Duration) : null;
      const reason = raw === 'failed' ? p.HangupCauseName : undefined;
      return [{ type: 'status', raw: withReason(raw, reason), terminal: TERMINAL.has(raw), carrierCallId: uuid, durationS: Number.isFinite(duration) ? duration : null }];
    }
    default:
      return [];
  }
}

const xmlReply = (body: string) => ({ status: 200, contentType: 'application/xml', body });

export const plivo: CarrierAdapter = {
  id: 'plivo',
  credentialsSchema: plivoCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: plivoCredentials as unknown as z.ZodType<Credentials>,
  secretFields: ['auth_token'],
  canDial: () => true,
  apiBase,
  carrierAmd: true,
  accountRef: (c) => creds(c).auth_id,
  accountOf: (req) => accountParam(req.url),

  async probeCredentials(ctx, c) {
    const r = await request(ctx, creds(c), 'GET', '/');
    if (r.status >= 200 && r.status < 300) return { ok: true };
    if (r.status === 401 || r.status === 403 || r.status === 404) return { ok: false, reason: `Plivo refused the credentials (HTTP ${r.status}: ${messageOf(r)})` };
    throw new CarrierHttpError('plivo', r.status, messageOf(r));
  },

  async probeNumber(ctx, c, e164) {
    const r = await request(ctx, creds(c), 'GET', `/Number/${encodeURIComponent(plivoNumber(e164))}/`);
    if (r.status === 404) return { owned: false };
    check(r);
    const n = (r.body as { number?: unknown } | null)?.number;
    return { owned: true, ref: typeof n === 'string' ? n : plivoNumber(e164) };
  },

  async syncInbound(ctx, c, e164, urls) {
    if (!urls) return { ok: true, message: null };
    const cr = creds(c);
    try {
      const owned = await plivo.probeNumber(ctx, c, e164);
      if (!owned.owned) return { ok: false, message: `Phone number ${e164} is not owned by this Plivo account` };
      // `account` names the configuration's account in our URLs: webhooks are verified with that account's keys only
      const app = { answer_url: withAccount(urls.voiceUrl, cr.auth_id), answer_method: 'POST', hangup_url: withAccount(urls.statusCallbackUrl, cr.auth_id), hangup_method: 'POST' };
      // The application answering the number: the configuration's app_id, else the account's default application
      // (spec: "No applicationId supplied and no default_app found…" when there is neither; we never create one).
      const appId = cr.app_id ?? (await defaultApp(ctx, cr));
      if (!appId) return { ok: false, blocking: true, message: NO_APPLICATION };
      check(await request(ctx, cr, 'POST', `/Application/${encodeURIComponent(appId)}/`, app));
      check(await request(ctx, cr, 'POST', `/Number/${encodeURIComponent(plivoNumber(e164))}/`, { app_id: appId }));
      return { ok: true, message: `answer_url set to ${app.answer_url} (Plivo application ${appId})` };
    } catch (err) {
      return { ok: false, message: `Plivo was not updated: ${(err as Error).message}` };
    }
  },

  async dial(ctx, c, req) {
    const body: Record<string, unknown> = {
      from: plivoNumber(req.from),
      to: plivoNumber(req.to),
      answer_url: req.answerUrl,
      answer_method: 'POST',
      hangup_url: req.statusCallbackUrl,
      hangup_method: 'POST',
      ring_url: req.statusCallbackUrl,
      ring_method: 'POST',
      ring_timeout: Math.round(req.timeoutS),
    };
    if (req.amd) Object.assign(body, { machine_detection: 'true', machine_detection_url: req.amd.callbackUrl, machine_detection_method: 'POST' });
    const r = await request(ctx, creds(c), 'POST', '/Call/', body);
    check(r);
    // request_uuid names the request, not the call: the CallUUID arrives with the answer / hangup callbacks
    return { carrierCallId: null };
  },

  // Plivo's Send Digits API plays the keys on the call (leg aleg: the callee's leg); the stream goes on
  async sendDtmf(ctx, c, carrierCallId, digits) {
    check(await request(ctx, creds(c), 'POST', `/Call/${encodeURIComponent(carrierCallId)}/DTMF/`, { digits, leg: 'aleg' }));
  },

  async hangup(ctx, c, carrierCallId) {
    const r = await request(ctx, creds(c), 'DELETE', `/Call/${encodeURIComponent(carrierCallId)}/`);
    if (r.status === 404) return; // already gone
    check(r);
  },

  transferSupport: (destination) => dialOutSupport('Plivo', destination),
  // <Record recordSession> in the answer XML, <Record startOnDialAnswer> before a transfer's <Dial>
  recordingSupport: () => null,

  async transfer(ctx, c, carrierCallId, req) {
    if (!req.callId) throw new CarrierHttpError('plivo', 400, 'provider_not_supported: the transfer has no call to answer its leg URL');
    dialOutTarget('plivo', 'Plivo', req.destination); // a destination Plivo cannot dial is refused now, not when the leg URL is fetched
    const r = await request(ctx, creds(c), 'POST', `/Call/${encodeURIComponent(carrierCallId)}/`, {
      legs: 'aleg', aleg_url: carrierHookUrl(ctx.config, 'plivo', 'transfer', req.callId), aleg_method: 'POST',
    });
    check(r);
  },

  verifyWebhook(c, req) {
    return verifyPlivoSignature(creds(c).auth_token, req);
  },

  mapStatus,

  hooks: {
    parse,
    async bridge(_ctx, _c, call) {
      return xmlReply(plivoStreamXml(call.streamUrl, call.record === true));
    },
    async refuse(_ctx, _c, _id, message) {
      return xmlReply(plivoRefusalXml(message));
    },
    busy: async () => xmlReply(plivoBusyXml()),
    transferDocument: (req) => xmlReply(plivoTransferXml(req)),
    // recordings of accounts with secured media need the account's Basic auth; open ones ignore it
    recordingHeaders: (c) => ({ authorization: basic(creds(c)) }),
  },
};
