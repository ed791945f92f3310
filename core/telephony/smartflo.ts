// Smartflo (the streaming-native carrier), REST half: the account's numbers (`GET /v1/my_number`, which doubles as
// the token check: there is no dedicated endpoint, a 401 means invalid), the click-to-call originate
// (`POST /v1/click_to_call_support`, async, correlated by our signed custom_identifier), hang-up and transfer (`POST /v1/call/options` type 4).
// No per-number webhook exists: inbound audio arrives on the static signed `voice_bot_wss_url` pasted in the portal.
// Base URL: SMARTFLO_API_BASE_URL replaces scheme/host/port of https://api-smartflo.tatateleservices.com.
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { sameNumber } from './numbers.ts';
import { mapCarrierStatus } from './status.ts';
import { CarrierHttpError, type CarrierAdapter, type Credentials } from './types.ts';
import { parseTransferDestination, transferTarget } from './transfer-target.ts';
import { withBase } from './urls.ts';

export const smartfloCredentials = z.object({
  auth_token: z.string().trim().min(1).max(4096),
  click_to_call_api_key: z.string().trim().min(1).max(4096).optional(),
});
export type SmartfloCredentials = z.infer<typeof smartfloCredentials>;

const creds = (c: Credentials) => c as SmartfloCredentials;
const bearer = (token: string) => (/^bearer\s/i.test(token) ? token : `Bearer ${token}`);

function apiBase(config: Config): string {
  return withBase('https://api-smartflo.tatateleservices.com', config.SMARTFLO_API_BASE_URL);
}

function messageOf(r: CarrierResponse): string {
  const b = r.body as { message?: unknown; error?: unknown } | null;
  if (typeof b?.message === 'string') return b.message;
  if (typeof b?.error === 'string') return b.error;
  return r.text.slice(0, 300) || `HTTP ${r.status}`;
}

/** The DIDs of the account: an array of objects carrying the number as `did`, `number` or `alias`. */
function numbersOf(body: unknown): string[] {
  const list = Array.isArray(body) ? body : Array.isArray((body as { data?: unknown } | null)?.data) ? (body as { data: unknown[] }).data : [];
  const out: string[] = [];
  for (const item of list) {
    if (typeof item === 'string') out.push(item);
    else if (item && typeof item === 'object') {
      for (const k of ['did', 'number', 'alias', 'phone_number']) {
        const v = (item as Record<string, unknown>)[k];
        if (typeof v === 'string' || typeof v === 'number') out.push(String(v));
      }
    }
  }
  return out;
}

async function myNumbers(config: Config, c: SmartfloCredentials): Promise<CarrierResponse> {
  return carrierRequest(config, 'smartflo', `${apiBase(config)}/v1/my_number`, { method: 'GET', headers: { authorization: bearer(c.auth_token) } });
}

export const smartflo: CarrierAdapter = {
  id: 'smartflo',
  credentialsSchema: smartfloCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: null,
  secretFields: ['auth_token', 'click_to_call_api_key'],
  canDial: (c) => typeof creds(c).click_to_call_api_key === 'string' && creds(c).click_to_call_api_key!.length > 0,
  apiBase,

  async probeCredentials(ctx, c) {
    const r = await myNumbers(ctx.config, creds(c));
    if (r.status >= 200 && r.status < 300) return { ok: true };
    if (r.status === 401 || r.status === 403) return { ok: false, reason: `Smartflo refused the token (HTTP ${r.status}: ${messageOf(r)})` };
    throw new CarrierHttpError('smartflo', r.status, messageOf(r));
  },

  async probeNumber(ctx, c, e164) {
    const r = await myNumbers(ctx.config, creds(c));
    if (r.status < 200 || r.status >= 300) throw new CarrierHttpError('smartflo', r.status, messageOf(r));
    return numbersOf(r.body).some((n) => sameNumber(n, e164)) ? { owned: true, ref: null } : { owned: false };
  },

  async syncInbound(_ctx, _c, _e164, urls) {
    if (!urls) return { ok: true, message: null };
    return { ok: true, message: 'Smartflo has no per-number webhook: its Voice Bot points at the configuration\'s voice_bot_wss_url' };
  },

  async dial(ctx, c, req) {
    const k = creds(c).click_to_call_api_key;
    if (!k) throw new CarrierHttpError('smartflo', 400, 'the configuration has no click_to_call_api_key');
    const r = await carrierRequest(ctx.config, 'smartflo', `${apiBase(ctx.config)}/v1/click_to_call_support`, {
      method: 'POST',
      json: {
        customer_number: req.to.replace(/^\+/, ''),
        api_key: k,
        caller_id: req.from.replace(/^\+/, ''),
        async: 1,
        customer_ring_timeout: Math.min(30, Math.max(10, Math.round(req.timeoutS))),
        custom_identifier: req.customIdentifier,
      },
    });
    const body = r.body as { success?: unknown } | null;
    if (r.status < 200 || r.status >= 300) throw new CarrierHttpError('smartflo', r.status, messageOf(r));
    if (body?.success === false) throw new CarrierHttpError('smartflo', 400, messageOf(r));
    return { carrierCallId: null };
  },

  async hangup(ctx, c, carrierCallId) {
    const r = await carrierRequest(ctx.config, 'smartflo', `${apiBase(ctx.config)}/v1/call/hangup`, {
      method: 'POST', headers: { authorization: bearer(creds(c).auth_token) }, json: { call_id: carrierCallId },
    });
    if (r.status < 200 || r.status >= 300) throw new CarrierHttpError('smartflo', r.status, messageOf(r));
  },

  // Call Operations API (docs.smartflo.tatatelebusiness.com/reference/v1calloptions): `POST /v1/call/options`
  // `{type: 4 (transfer), call_id, intercom}` where intercom is the agent's 10-digit mobile number, an extension or a
  // department intercom. Numbers (Indian numbers as 10 digits, others as international digits) and host-less
  // extensions (`PJSIP/123`, `SIP/123` → intercom 123) transfer; a SIP URI has no Smartflo equivalent. Smartflo then
  // takes the call off the stream.
  transferSupport(destination) {
    const to = parseTransferDestination(destination);
    if (to.kind === 'sip') return `Smartflo cannot transfer a call to the SIP address '${destination.trim()}': its transfer API takes numbers, extensions and departments of the account only (write an extension as PJSIP/<number>)`;
    if (to.kind === 'extension' && !/^\d{1,15}$/.test(to.extension)) return `Smartflo cannot transfer a call to '${to.endpoint}': its extensions are numbers (intercom), e.g. PJSIP/123`;
    return null;
  },
  // Smartflo records calls by the account's own settings (the number's call recording in the Smartflo portal); its
  // click-to-call, stream and transfer APIs take no recording request
  recordingSupport(what) {
    return what === 'transfer_leg'
      ? "Smartflo's transfer API cannot record the transferred conversation (call recording is a setting of the number in the Smartflo portal)"
      : "Smartflo's API cannot start a recording of the call: call recording is a setting of the number in the Smartflo portal (turn it on there and leave recordInProviderConsole off)";
  },

  async transfer(ctx, c, carrierCallId, req) {
    const to = transferTarget('smartflo', req.destination, smartflo.transferSupport(req.destination));
    const intercom = to.kind === 'extension' ? to.extension
      : to.kind === 'pstn' ? (/^\+91\d{10}$/.test(to.number) ? to.number.slice(3) : to.number.replace(/^\+/, '')) : '';
    const r = await carrierRequest(ctx.config, 'smartflo', `${apiBase(ctx.config)}/v1/call/options`, {
      method: 'POST', headers: { authorization: bearer(creds(c).auth_token) }, json: { type: '4', call_id: carrierCallId, intercom: [intercom] },
    });
    const body = r.body as { success?: unknown } | null;
    if (r.status < 200 || r.status >= 300) throw new CarrierHttpError('smartflo', r.status, messageOf(r));
    if (body?.success === false) throw new CarrierHttpError('smartflo', 400, messageOf(r));
  },

  verifyWebhook: () => false,
  mapStatus: (raw) => mapCarrierStatus(raw),
};
