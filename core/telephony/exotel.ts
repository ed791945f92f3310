// Exotel, REST/webhook half: "Connect Voice AI" (`POST /v1/Accounts/{sid}/Calls/connect` with `StreamUrl` +
// `StreamType=bidirectional`: the answered call streams straight to our WebSocket, transport
// media/transports/carriers/exotel.ts), the account's ExoPhones (`GET /v2_beta/Accounts/{sid}/IncomingPhoneNumbers`: the
// credential probe and the ownership probe), status callbacks and the Voicebot applet's dynamic URL for inbound
// calls. Base URL: EXOTEL_API_BASE_URL replaces scheme/host/port of https://{subdomain} (api.exotel.com for
// Singapore, api.in.exotel.com for Mumbai); paths are Exotel's.
//
// Exotel signs no webhooks. Every callback URL we give it carries our own signature instead: per-call hooks the
// signed call token (`?token=`, as the stream URL), and the Voicebot applet URL pasted in the Exotel flow of inbound
// numbers (`voicebot_url` on the configuration) the configuration's signature (`?config={id}&sig=…`); the generic
// routes check them (`signedUrls`). Exotel has no API to attach a flow to an ExoPhone, so `provider_sync` says what to
// paste where. No call-transfer API for a streaming call (→ provider_not_supported) and no carrier AMD (the
// heuristics run). Hang-up: closing the stream ends a Connect Voice AI call; the REST hang-up is not offered.
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { sameNumber } from './numbers.ts';
import { configUrlSig } from './signing.ts';
import { mapCarrierStatus } from './status.ts';
import { CarrierHttpError, type CarrierAdapter, type CarrierContext, type CarrierEvent, type Credentials, type WebhookRequest } from './types.ts';
import { withBase } from './urls.ts';

export const exotelCredentials = z.object({
  api_key: z.string().trim().min(1).max(256),
  api_token: z.string().trim().min(1).max(256),
  account_sid: z.string().trim().regex(/^[A-Za-z0-9_-]{1,128}$/, 'account_sid must be the Exotel Account SID'),
  /** api.exotel.com (Singapore) or api.in.exotel.com (Mumbai) */
  subdomain: z.string().trim().regex(/^[a-z0-9.-]+\.exotel\.(com|in)$/i, "subdomain must be the account's API host, e.g. api.exotel.com or api.in.exotel.com").default('api.exotel.com'),
  /** Audio on the stream: 16-bit linear PCM (Exotel's default) or µ-law, both 8 kHz. */
  stream_encoding: z.enum(['pcm16', 'mulaw']).default('pcm16'),
});
export type ExotelCredentials = z.infer<typeof exotelCredentials>;

const creds = (c: Credentials) => c as ExotelCredentials;
const basic = (c: ExotelCredentials) => `Basic ${Buffer.from(`${c.api_key}:${c.api_token}`).toString('base64')}`;

function base(config: Config, c: ExotelCredentials): string {
  return withBase(`https://${c.subdomain || 'api.exotel.com'}`, config.EXOTEL_API_BASE_URL);
}

function messageOf(r: CarrierResponse): string {
  const b = r.body as { RestException?: { Message?: unknown }; message?: unknown; error?: unknown } | null;
  const m = b?.RestException?.Message ?? b?.message ?? b?.error;
  return typeof m === 'string' ? m : r.text.slice(0, 300) || `HTTP ${r.status}`;
}

function check(r: CarrierResponse): void {
  if (r.status >= 200 && r.status < 300) return;
  throw new CarrierHttpError('exotel', r.status, messageOf(r));
}

const phones = (ctx: CarrierContext, c: ExotelCredentials) =>
  carrierRequest(ctx.config, 'exotel', `${base(ctx.config, c)}/v2_beta/Accounts/${encodeURIComponent(c.account_sid)}/IncomingPhoneNumbers`, {
    method: 'GET', headers: { authorization: basic(c) },
  });

/** The dynamic Voicebot URL of a configuration (pasted into the Voicebot applet of the numbers' flow). */
export function exotelVoicebotUrl(config: Pick<Config, 'baseUrl' | 'SIGNING_SECRET' | 'DATA_DIR'>, configId: number): string {
  return `${config.baseUrl}/telephony/exotel/voice?config=${configId}&sig=${configUrlSig(config, 'exotel', configId)}`;
}

/** Exotel writes Indian numbers nationally ("0XXXXXXXXXX"); everything else is E.164 or digits. */
function e164Of(n: string): string {
  const d = n.trim();
  if (/^0\d{10}$/.test(d)) return `+91${d.slice(1)}`;
  return d;
}

const TERMINAL = new Set(['completed', 'failed', 'busy', 'no-answer', 'canceled', 'cancelled']);

function parse(hook: string, req: WebhookRequest): CarrierEvent[] {
  const b = (req.json && typeof req.json === 'object' ? req.json : req.params) as Record<string, unknown>;
  const s = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : typeof b[k] === 'number' ? String(b[k]) : '');
  const sid = s('CallSid') || null;
  if (hook === 'voice') {
    const to = s('CallTo') || s('To');
    return to ? [{ type: 'inbound', from: e164Of(s('CallFrom') || s('From')), to: e164Of(to), carrierCallId: sid }] : [];
  }
  if (hook !== 'status' && hook !== 'voice-status') return [];
  const raw = (s('Status') || s('CallStatus')).toLowerCase();
  if (!raw) return [];
  const duration = Number(s('ConversationDuration') || s('Duration'));
  return [{ type: 'status', raw, terminal: TERMINAL.has(raw), carrierCallId: sid, durationS: Number.isFinite(duration) && s('ConversationDuration') + s('Duration') !== '' ? duration : null }];
}

const streamUrlOf = (streamUrl: string, c: ExotelCredentials) => (c.stream_encoding === 'mulaw' ? `${streamUrl}&codec=mulaw` : streamUrl);

export const exotel: CarrierAdapter = {
  id: 'exotel',
  credentialsSchema: exotelCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: exotelCredentials as unknown as z.ZodType<Credentials>,
  secretFields: ['api_token'],
  canDial: () => true,
  apiBase: (config) => withBase('https://api.exotel.com', config.EXOTEL_API_BASE_URL),
  carrierAmd: false,
  signedUrls: true,
  accountRef: (c) => creds(c).account_sid,
  configFields: (config, configId) => ({ voicebot_url: exotelVoicebotUrl(config, configId) }),

  async probeCredentials(ctx, c) {
    const r = await phones(ctx, creds(c));
    if (r.status >= 200 && r.status < 300) return { ok: true };
    if (r.status === 401 || r.status === 403) return { ok: false, reason: `Exotel refused the API key and token (HTTP ${r.status}: ${messageOf(r)})` };
    throw new CarrierHttpError('exotel', r.status, messageOf(r));
  },

  async probeNumber(ctx, c, e164) {
    const r = await phones(ctx, creds(c));
    check(r);
    const list = (r.body as { incoming_phone_numbers?: Array<{ phone_number?: unknown; sid?: unknown }> } | null)?.incoming_phone_numbers ?? [];
    const hit = list.find((n) => typeof n.phone_number === 'string' && sameNumber(n.phone_number, e164));
    return hit ? { owned: true, ref: typeof hit.sid === 'string' ? hit.sid : null } : { owned: false };
  },

  async syncInbound(_ctx, _c, e164, urls) {
    if (!urls) return { ok: true, message: null };
    return { ok: true, message: `Exotel has no API to attach a flow to ${e164}: put a Voicebot applet in its flow with this configuration's voicebot_url` };
  },

  async dial(ctx, c, req) {
    const cr = creds(c);
    const form = new URLSearchParams({
      From: req.to,
      CallerId: req.from,
      StreamUrl: streamUrlOf(req.streamUrl, cr),
      StreamType: 'bidirectional',
      CallType: 'trans',
      TimeOut: String(Math.round(req.timeoutS)),
      StatusCallback: req.statusCallbackUrl,
      'StatusCallbackEvents[0]': 'terminal',
      'StatusCallbackEvents[1]': 'answered',
      StatusCallbackContentType: 'application/json',
      CustomField: req.callId,
    });
    // recordInProviderConsole: Exotel records the call (the recording is listed in the Exotel dashboard)
    if (req.record) form.set('Record', 'true');
    const r = await carrierRequest(ctx.config, 'exotel', `${base(ctx.config, cr)}/v1/Accounts/${encodeURIComponent(cr.account_sid)}/Calls/connect.json`, {
      method: 'POST', headers: { authorization: basic(cr) }, form,
    });
    check(r);
    const call = (r.body as { Call?: { Sid?: unknown }; call?: { sid?: unknown } } | null);
    const sid = call?.Call?.Sid ?? call?.call?.sid;
    return { carrierCallId: typeof sid === 'string' ? sid : null };
  },

  async hangup() {
    // a Connect Voice AI call ends when its stream closes (the media side closes it before calling this)
  },

  // A Connect Voice AI call (and a Voicebot applet's stream) has no transfer API: Exotel hands the call on only from a
  // flow, where a Connect applet after the Voicebot applet could dial a number the flow learns from a dynamic URL —
  // an App Bazaar flow the customer builds, outside what the stream or the REST API can ask for. Not supported.
  transferSupport: (destination) =>
    `Exotel cannot transfer a call to '${destination.trim()}': it offers no transfer of a streaming (Voicebot) call through its API`,
  // outbound: the dial's Record; inbound calls come from the number's flow, whose own recording setting decides
  recordingSupport: (what) =>
    what === 'outbound_call' ? null
      : what === 'inbound_call' ? "Exotel's API cannot record an inbound call: recording is a setting of the number's flow in Exotel (App Bazaar); turn it on there and leave recordInProviderConsole off"
        : 'Exotel offers no transfer of a streaming call, so no transferred conversation to record',

  async transfer(_ctx, _c, _id, req) {
    throw new CarrierHttpError('exotel', 501, `provider_not_supported: ${exotel.transferSupport(req.destination)}`);
  },

  verifyWebhook: () => false,
  mapStatus: (raw) => mapCarrierStatus(raw),

  hooks: {
    parse,
    async bridge(_ctx, c, call) {
      return { status: 200, contentType: 'application/json', body: JSON.stringify({ url: streamUrlOf(call.streamUrl, creds(c)) }) };
    },
    async refuse(_ctx, _c, _id, message) {
      // The Voicebot applet gets no stream URL and the flow moves on to its next applet (the flow's own fallback)
      return { status: 200, contentType: 'application/json', body: JSON.stringify({ url: null, reason: message }) };
    },
  },
};
