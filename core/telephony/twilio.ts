// Twilio, REST/webhook half: Calls API (dial, update, hang up), IncomingPhoneNumbers (ownership, VoiceUrl),
// Accounts/{sid}.json (credential probe), X-Twilio-Signature, status mapping, and the TwiML we answer with.
// Base URL: TWILIO_API_BASE_URL replaces scheme/host/port of https://api.twilio.com; paths are Twilio's.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { mapCarrierStatus, TERMINAL_STATUSES, withReason } from './status.ts';
import {
  CarrierHttpError, type CarrierAdapter, type CarrierContext, type CarrierEvent, type CarrierReply, type Credentials, type DialRequest,
  type TransferRequest, type WebhookRequest,
} from './types.ts';
import { dialOutSupport, dialOutTarget } from './transfer-target.ts';
import { withBase } from './urls.ts';

export const twilioCredentials = z.object({
  account_sid: z.string().trim().regex(/^AC[0-9a-fA-F]{32}$/, "account_sid must look like 'AC' followed by 32 hex characters"),
  auth_token: z.string().trim().min(1).max(256),
});
export type TwilioCredentials = z.infer<typeof twilioCredentials>;

const creds = (c: Credentials) => c as TwilioCredentials;
const basic = (c: TwilioCredentials) => `Basic ${Buffer.from(`${c.account_sid}:${c.auth_token}`).toString('base64')}`;

function apiBase(config: Config): string {
  return withBase('https://api.twilio.com', config.TWILIO_API_BASE_URL);
}

function accountUrl(config: Config, c: TwilioCredentials, rest = ''): string {
  return `${apiBase(config)}/2010-04-01/Accounts/${encodeURIComponent(c.account_sid)}${rest}`;
}

/** Twilio's error body: {code, message, more_info, status}. */
function errorOf(r: CarrierResponse): { message: string; code?: number } {
  const b = r.body as { message?: unknown; code?: unknown } | null;
  const message = typeof b?.message === 'string' ? b.message : r.text.slice(0, 300) || `HTTP ${r.status}`;
  return { message, code: typeof b?.code === 'number' ? b.code : undefined };
}

function check(r: CarrierResponse): void {
  if (r.status >= 200 && r.status < 300) return;
  const e = errorOf(r);
  throw new CarrierHttpError('twilio', r.status, e.message, e.code);
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** The answer TwiML that bridges the call's audio to our media stream. */
export function streamTwiml(streamUrl: string, parameters: Record<string, string>): string {
  const params = Object.entries(parameters).map(([k, v]) => `<Parameter name="${xmlEscape(k)}" value="${xmlEscape(v)}"/>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="${xmlEscape(streamUrl)}">${params}</Stream></Connect></Response>`;
}

/** A refused call: a spoken refusal, then hang up. */
export function refusalTwiml(message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>${xmlEscape(message)}</Say><Hangup/></Response>`;
}

/** An inbound call refused with the busy signal, never answered (not billed). */
export function busyTwiml(): string {
  return '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="busy"/></Response>';
}

export function hangupTwiml(): string {
  return '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';
}

/** <Dial> of a transfer, recording the transferred leg when asked. */
export function transferTwiml(req: TransferRequest): string {
  const attrs = [`timeout="${Math.round(req.timeoutS)}"`];
  if (req.callerId) attrs.push(`callerId="${xmlEscape(req.callerId)}"`);
  if (req.recordingCallbackUrl) {
    attrs.push('record="record-from-answer-dual"', `recordingStatusCallback="${xmlEscape(req.recordingCallbackUrl)}"`,
      'recordingStatusCallbackMethod="POST"', 'recordingStatusCallbackEvent="completed absent"');
  }
  const to = dialOutTarget('twilio', 'Twilio', req.destination);
  const target = to.kind === 'sip' ? `<Sip>${xmlEscape(to.uri)}</Sip>` : `<Number>${xmlEscape(to.number)}</Number>`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial ${attrs.join(' ')}>${target}</Dial></Response>`;
}

/** base64(HMAC-SHA1(authToken, url + sorted key+value pairs)). */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data = Object.keys(params).sort().reduce((acc, k) => acc + k + params[k], url);
  return createHmac('sha1', authToken).update(Buffer.from(data, 'utf8')).digest('base64');
}

/** The URL with and without an explicit default port: Twilio signs whichever form it requested. */
function urlVariants(url: string): string[] {
  const out = new Set([url]);
  try {
    const u = new URL(url);
    const def = u.protocol === 'https:' ? '443' : '80';
    const rest = `${u.pathname}${u.search}`;
    if (!u.port) out.add(`${u.protocol}//${u.hostname}:${def}${rest}`);
    else if (u.port === def) out.add(`${u.protocol}//${u.hostname}${rest}`);
  } catch {
    /* not a URL: only the literal form */
  }
  return [...out];
}

export function verifyTwilioSignature(authToken: string, req: WebhookRequest): boolean {
  const header = req.headers['x-twilio-signature'];
  const got = Array.isArray(header) ? header[0] : header;
  if (!got) return false;
  const g = Buffer.from(got);
  return urlVariants(req.url).some((u) => {
    const want = Buffer.from(twilioSignature(authToken, u, req.params));
    return want.length === g.length && timingSafeEqual(want, g);
  });
}

const xmlReply = (body: string): CarrierReply => ({ status: 200, contentType: 'text/xml', body });

/** Twilio's form-encoded webhooks in carrier-neutral events (the AMD vocabulary is Twilio's own). */
function parse(hook: string, req: WebhookRequest): CarrierEvent[] {
  const p = req.params;
  const carrierCallId = p.CallSid ?? null;
  switch (hook) {
    case 'answer':
      return [{ type: 'answer', carrierCallId }];
    case 'status':
    case 'voice-status': {
      const raw = (p.CallStatus ?? '').toLowerCase();
      const durationS = p.CallDuration !== undefined && /^\d+$/.test(p.CallDuration) ? Number(p.CallDuration) : null;
      // a failed dial's SIP response code says why (503: unreachable, 404: no such number): `failed:sip_503`
      const sip = raw === 'failed' && /^\d{3}$/.test(p.SipResponseCode ?? '') ? `sip_${p.SipResponseCode}` : null;
      return raw ? [{ type: 'status', raw: withReason(raw, sip), terminal: TERMINAL_STATUSES.has(raw), carrierCallId, durationS }] : [];
    }
    case 'amd': {
      const answeredBy = (p.AnsweredBy ?? '').toLowerCase();
      return answeredBy ? [{ type: 'amd', answeredBy, carrierCallId }] : [];
    }
    case 'recording': {
      // RecordingStatusCallbackEvent "completed absent": in-progress callbacks carry nothing to act on
      const status = (p.RecordingStatus ?? '').toLowerCase();
      if (!status || status === 'in-progress') return [];
      const url = p.RecordingUrl;
      return [{
        type: 'recording',
        // RecordingUrl names the recording without an extension; Twilio serves it as WAV (or MP3) by suffix
        url: status === 'completed' && url ? (/\.(wav|mp3)$/i.test(url) ? url : `${url}.wav`) : null,
        durationS: p.RecordingDuration !== undefined && /^\d+$/.test(p.RecordingDuration) ? Number(p.RecordingDuration) : null,
        carrierCallId: p.DialCallSid ?? carrierCallId,
      }];
    }
    case 'voice':
      return [{ type: 'inbound', from: p.From ?? p.Caller ?? '', to: p.To ?? p.Called ?? '', carrierCallId }];
    default:
      return [];
  }
}

export const twilio: CarrierAdapter = {
  id: 'twilio',
  credentialsSchema: twilioCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: twilioCredentials as unknown as z.ZodType<Credentials>,
  secretFields: ['auth_token'],
  canDial: () => true,
  apiBase,

  async probeCredentials(ctx: CarrierContext, c: Credentials) {
    const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), '.json'), {
      method: 'GET', headers: { authorization: basic(creds(c)) },
    });
    if (r.status >= 200 && r.status < 300) {
      const status = (r.body as { status?: unknown } | null)?.status;
      if (status === 'suspended' || status === 'closed') return { ok: false, reason: `the Twilio account is ${status}` };
      return { ok: true };
    }
    if (r.status === 401 || r.status === 403 || r.status === 404) {
      const e = errorOf(r);
      return { ok: false, reason: `Twilio refused the credentials (HTTP ${r.status}${e.code ? `, code ${e.code}` : ''}: ${e.message})` };
    }
    const e = errorOf(r);
    throw new CarrierHttpError('twilio', r.status, e.message, e.code);
  },

  async probeNumber(ctx, c, e164) {
    const url = `${accountUrl(ctx.config, creds(c), '/IncomingPhoneNumbers.json')}?PhoneNumber=${encodeURIComponent(e164)}`;
    const r = await carrierRequest(ctx.config, 'twilio', url, { method: 'GET', headers: { authorization: basic(creds(c)) } });
    check(r);
    const list = (r.body as { incoming_phone_numbers?: Array<{ sid?: unknown; phone_number?: unknown }> } | null)?.incoming_phone_numbers ?? [];
    const hit = list.find((n) => n.phone_number === e164) ?? list[0];
    return hit ? { owned: true, ref: typeof hit.sid === 'string' ? hit.sid : null } : { owned: false };
  },

  async syncInbound(ctx, c, e164, urls) {
    if (!urls) return { ok: true, message: null };
    try {
      const owned = await twilio.probeNumber(ctx, c, e164);
      if (!owned.owned || !owned.ref) return { ok: false, message: `Phone number ${e164} is not owned by this Twilio account` };
      const form = new URLSearchParams({ VoiceUrl: urls.voiceUrl, VoiceMethod: 'POST', StatusCallback: urls.statusCallbackUrl, StatusCallbackMethod: 'POST' });
      const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), `/IncomingPhoneNumbers/${encodeURIComponent(owned.ref)}.json`), {
        method: 'POST', headers: { authorization: basic(creds(c)) }, form,
      });
      check(r);
      return { ok: true, message: `VoiceUrl set to ${urls.voiceUrl}` };
    } catch (err) {
      const e = err as CarrierHttpError;
      return { ok: false, message: `Twilio was not updated: ${e.message}` };
    }
  },

  async dial(ctx, c, req: DialRequest) {
    const form = new URLSearchParams({
      To: req.to, From: req.from, Url: req.answerUrl, Method: 'POST',
      StatusCallback: req.statusCallbackUrl, StatusCallbackMethod: 'POST', Timeout: String(req.timeoutS),
    });
    for (const ev of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', ev);
    // recordInProviderConsole: Twilio records the whole call (both channels); it is kept in the Twilio console
    if (req.record) {
      form.set('Record', 'true');
      form.set('RecordingChannels', 'dual');
    }
    if (req.amd) {
      form.set('MachineDetection', 'DetectMessageEnd');
      form.set('AsyncAmd', 'true');
      form.set('AsyncAmdStatusCallback', req.amd.callbackUrl);
      form.set('AsyncAmdStatusCallbackMethod', 'POST');
    }
    const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), '/Calls.json'), {
      method: 'POST', headers: { authorization: basic(creds(c)) }, form,
    });
    check(r);
    const sid = (r.body as { sid?: unknown } | null)?.sid;
    return { carrierCallId: typeof sid === 'string' ? sid : null };
  },

  async hangup(ctx, c, carrierCallId) {
    const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), `/Calls/${encodeURIComponent(carrierCallId)}.json`), {
      method: 'POST', headers: { authorization: basic(creds(c)) }, form: new URLSearchParams({ Status: 'completed' }),
    });
    check(r);
  },

  // recordInProviderConsole on an inbound call (the VoiceUrl's <Connect><Stream> TwiML cannot record): Twilio's
  // Call Recordings API on the live call, both channels; the recording stays in the Twilio console
  async startRecording(ctx, c, carrierCallId) {
    const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), `/Calls/${encodeURIComponent(carrierCallId)}/Recordings.json`), {
      method: 'POST', headers: { authorization: basic(creds(c)) }, form: new URLSearchParams({ RecordingChannels: 'dual', RecordingTrack: 'both' }),
    });
    check(r);
  },

  transferSupport: (destination) => dialOutSupport('Twilio', destination),
  // the dial's Record, the Call Recordings API on inbound calls, <Dial record> on a transfer
  recordingSupport: () => null,

  async transfer(ctx, c, carrierCallId, req) {
    const r = await carrierRequest(ctx.config, 'twilio', accountUrl(ctx.config, creds(c), `/Calls/${encodeURIComponent(carrierCallId)}.json`), {
      method: 'POST', headers: { authorization: basic(creds(c)) }, form: new URLSearchParams({ Twiml: transferTwiml(req) }),
    });
    check(r);
  },

  verifyWebhook(c, req) {
    return verifyTwilioSignature(creds(c).auth_token, req);
  },

  mapStatus: (raw) => mapCarrierStatus(raw),
  carrierAmd: true,
  amdMessageEnd: true,
  accountRef: (c) => creds(c).account_sid,
  accountOf: (req) => req.params.AccountSid ?? null,

  hooks: {
    parse,
    // Twilio drops query strings on <Stream url>: the per-call token travels as a <Parameter> and arrives in the
    // stream's start.customParameters
    async bridge(_ctx, _c, call) {
      const url = new URL(call.streamUrl);
      const token = url.searchParams.get('token') ?? '';
      url.search = '';
      return xmlReply(streamTwiml(url.toString(), { token, callId: call.callId }));
    },
    async refuse(_ctx, _c, _id, message) {
      return xmlReply(message ? refusalTwiml(message) : hangupTwiml());
    },
    busy: async () => xmlReply(busyTwiml()),
    recordingHeaders: (c) => ({ authorization: basic(creds(c)) }),
  },
};

/** Basic auth header of an account (recording downloads handed to the transfer-recording workflow). */
export function twilioBasicAuth(c: Credentials): string {
  return basic(creds(c));
}
