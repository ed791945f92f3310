// Telnyx (Call Control), REST/webhook half: `POST /v2/calls` dials with the media stream attached
// (`stream_url`, bidirectional RTP PCMU: transport media/transports/carriers/telnyx.ts), call commands
// (`/v2/calls/{call_control_id}/actions/answer|hangup|transfer|reject`), phone numbers and the Call Control
// Application whose `webhook_event_url` receives inbound calls, Ed25519-signed webhooks and status mapping.
// Base URL: TELNYX_API_BASE_URL replaces scheme/host/port of https://api.telnyx.com; paths are Telnyx's.
//
// Telnyx facts used here (developers.telnyx.com): Bearer API key; webhooks are JSON `{data: {event_type,
// payload: {call_control_id, direction, from, to, hangup_cause, result, …}}}` signed with the account's Ed25519
// key: `telnyx-signature-ed25519` = base64 signature of "{telnyx-timestamp}|{raw body}", verified with the public
// key shown in the portal. Call Control has no answer document: an inbound `call.initiated` is answered with the
// `answer` command carrying the stream settings; an outbound call streams once answered. AMD:
// `answering_machine_detection: "greeting_end"` → `call.machine.detection.ended {result: human|machine|not_sure}`,
// then on a machine `call.machine.greeting.ended {result: beep_detected|ended|not_sure}` once its greeting is over
// (a beep or the silence after it). DTMF: `actions/send_dtmf {digits}` plays keys into the call; the stream goes on.
import { createPublicKey, verify as verifySignature } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { carrierRequest, type CarrierResponse } from './http.ts';
import { mapCarrierStatus } from './status.ts';
import { CarrierHttpError, type CarrierAdapter, type CarrierContext, type CarrierEvent, type Credentials, type WebhookRequest } from './types.ts';
import { dialOutSupport, dialOutTarget } from './transfer-target.ts';
import { withBase } from './urls.ts';

export const telnyxCredentials = z.object({
  api_key: z.string().trim().min(1).max(512),
  /** The account's webhook public key (base64, Portal → Keys & Credentials → Public Key). */
  public_key: z.string().trim().refine((v) => {
    try {
      return Buffer.from(v, 'base64').length === 32;
    } catch {
      return false;
    }
  }, 'public_key must be the base64 Ed25519 public key (32 bytes) shown in the Telnyx portal'),
  /** The Call Control Application (connection) the calls run on. */
  connection_id: z.string().trim().min(1).max(128),
});
export type TelnyxCredentials = z.infer<typeof telnyxCredentials>;

const creds = (c: Credentials) => c as TelnyxCredentials;

function apiBase(config: Config): string {
  return withBase('https://api.telnyx.com', config.TELNYX_API_BASE_URL);
}

function messageOf(r: CarrierResponse): string {
  const e = (r.body as { errors?: Array<{ title?: unknown; detail?: unknown; code?: unknown }> } | null)?.errors?.[0];
  if (e) return [e.title, e.detail].filter((x) => typeof x === 'string' && x).join(': ') || `HTTP ${r.status}`;
  return r.text.slice(0, 300) || `HTTP ${r.status}`;
}
const codeOf = (r: CarrierResponse) => {
  const c = (r.body as { errors?: Array<{ code?: unknown }> } | null)?.errors?.[0]?.code;
  return typeof c === 'string' || typeof c === 'number' ? c : undefined;
};

function check(r: CarrierResponse): void {
  if (r.status >= 200 && r.status < 300) return;
  throw new CarrierHttpError('telnyx', r.status, messageOf(r), codeOf(r));
}

const request = (ctx: CarrierContext, c: TelnyxCredentials, method: string, path: string, json?: unknown) =>
  carrierRequest(ctx.config, 'telnyx', `${apiBase(ctx.config)}${path}`, {
    method, headers: { authorization: `Bearer ${c.api_key}` }, ...(json !== undefined ? { json } : {}),
  });

/** The stream settings of a dial or an answer: bidirectional RTP, PCMU both ways. */
const streamSettings = (streamUrl: string) => ({
  stream_url: streamUrl, stream_track: 'inbound_track', stream_bidirectional_mode: 'rtp', stream_bidirectional_codec: 'PCMU',
});

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const TOLERANCE_S = 300;

export function verifyTelnyxSignature(publicKey: string, req: WebhookRequest, nowS = Date.now() / 1000): boolean {
  const h = (n: string) => {
    const v = req.headers[n];
    return Array.isArray(v) ? v[0] : v;
  };
  const sig = h('telnyx-signature-ed25519');
  const ts = h('telnyx-timestamp');
  if (!sig || !ts || !req.rawBody || !/^\d+$/.test(ts) || Math.abs(nowS - Number(ts)) > TOLERANCE_S) return false;
  try {
    const raw = Buffer.from(publicKey, 'base64');
    if (raw.length !== 32) return false;
    const key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: 'der', type: 'spki' });
    return verifySignature(null, Buffer.concat([Buffer.from(`${ts}|`), req.rawBody]), key, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}

const HANGUP_CAUSES: Record<string, string> = {
  normal_clearing: 'completed',
  user_busy: 'busy',
  timeout: 'no_answer',
  no_answer: 'no_answer',
  originator_cancel: 'cancelled',
  call_rejected: 'rejected',
  unallocated_number: 'invalid_number',
  not_found: 'invalid_number',
  unspecified: 'connection_failed',
};

/** A `call.hangup` cause → connectionStatus (unknown causes pass through as telephony_<cause>). */
function mapStatus(raw: string): string {
  // the causes not listed here (destination_out_of_order, normal_temporary_failure, …) are status.ts's common reasons
  return mapCarrierStatus(raw, (s) => HANGUP_CAUSES[s]);
}

const AMD: Record<string, string> = { human: 'human', machine: 'machine_start', not_sure: 'unknown', fax_detected: 'fax', silence: 'unknown' };
/** call.machine.greeting.ended results (and premium's) in Twilio's end-of-message words */
const GREETING_END: Record<string, string> = { beep_detected: 'machine_end_beep', ended: 'machine_end_silence', not_sure: 'machine_end_other', no_beep_detected: 'machine_end_other' };

function parse(hook: string, req: WebhookRequest): CarrierEvent[] {
  const data = (req.json as { data?: { event_type?: unknown; payload?: Record<string, unknown> } } | null)?.data;
  const type = typeof data?.event_type === 'string' ? data.event_type : '';
  const p = data?.payload ?? {};
  const id = typeof p.call_control_id === 'string' ? p.call_control_id : null;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  if (hook === 'recording') {
    // the transferred leg's webhook_url: only its recording matters (its call.hangup is not our call's)
    if (type !== 'call.recording.saved') return [];
    const urls = (p.recording_urls ?? {}) as Record<string, unknown>;
    const start = Date.parse(str(p.recording_started_at));
    const end = Date.parse(str(p.recording_ended_at));
    return [{
      type: 'recording', url: str(urls.mp3) || str(urls.wav) || null, carrierCallId: id,
      durationS: Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, Math.round((end - start) / 100) / 10) : null,
    }];
  }
  switch (type) {
    case 'call.initiated':
      if (hook === 'voice' && str(p.direction) === 'incoming') return [{ type: 'inbound', from: str(p.from), to: str(p.to), carrierCallId: id }];
      return [{ type: 'status', raw: 'initiated', terminal: false, carrierCallId: id, durationS: null }];
    case 'call.answered':
      return [{ type: 'status', raw: 'answered', terminal: false, carrierCallId: id, durationS: null }];
    case 'call.hangup': {
      const start = Date.parse(str(p.start_time));
      const end = Date.parse(str(p.end_time));
      return [{
        type: 'status', raw: str(p.hangup_cause) || 'unspecified', terminal: true, carrierCallId: id,
        durationS: Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, (end - start) / 1000) : null,
      }];
    }
    case 'call.machine.detection.ended':
    case 'call.machine.premium.detection.ended':
      return [{ type: 'amd', answeredBy: AMD[str(p.result)] ?? 'unknown', carrierCallId: id }];
    case 'call.machine.greeting.ended':
    case 'call.machine.premium.greeting.ended':
      return [{ type: 'amd', answeredBy: GREETING_END[str(p.result)] ?? 'machine_end_other', carrierCallId: id }];
    default:
      return [];
  }
}

export const telnyx: CarrierAdapter = {
  id: 'telnyx',
  credentialsSchema: telnyxCredentials as unknown as z.ZodType<Credentials>,
  inlineAuthSchema: telnyxCredentials as unknown as z.ZodType<Credentials>,
  secretFields: ['api_key'],
  canDial: () => true,
  apiBase,
  carrierAmd: true,
  amdMessageEnd: true,
  accountRef: (c) => creds(c).connection_id,
  accountOf: (req) => {
    const id = (req.json as { data?: { payload?: { connection_id?: unknown } } } | null)?.data?.payload?.connection_id;
    return typeof id === 'string' || typeof id === 'number' ? String(id) : null;
  },

  async probeCredentials(ctx, c) {
    const r = await request(ctx, creds(c), 'GET', `/v2/call_control_applications/${encodeURIComponent(creds(c).connection_id)}`);
    if (r.status >= 200 && r.status < 300) return { ok: true };
    if (r.status === 401 || r.status === 403) return { ok: false, reason: `Telnyx refused the API key (HTTP ${r.status}: ${messageOf(r)})` };
    if (r.status === 404) return { ok: false, reason: `Telnyx has no Call Control Application ${creds(c).connection_id} on this account` };
    throw new CarrierHttpError('telnyx', r.status, messageOf(r), codeOf(r));
  },

  async probeNumber(ctx, c, e164) {
    const r = await request(ctx, creds(c), 'GET', `/v2/phone_numbers?filter[phone_number]=${encodeURIComponent(e164)}`);
    check(r);
    const list = (r.body as { data?: Array<{ id?: unknown; phone_number?: unknown }> } | null)?.data ?? [];
    const hit = list.find((n) => n.phone_number === e164);
    return hit ? { owned: true, ref: typeof hit.id === 'string' ? hit.id : null } : { owned: false };
  },

  async syncInbound(ctx, c, e164, urls) {
    if (!urls) return { ok: true, message: null };
    const cr = creds(c);
    try {
      const owned = await telnyx.probeNumber(ctx, c, e164);
      if (!owned.owned || !owned.ref) return { ok: false, message: `Phone number ${e164} is not owned by this Telnyx account` };
      check(await request(ctx, cr, 'PATCH', `/v2/phone_numbers/${encodeURIComponent(owned.ref)}`, { connection_id: cr.connection_id }));
      const app = await request(ctx, cr, 'GET', `/v2/call_control_applications/${encodeURIComponent(cr.connection_id)}`);
      check(app);
      const name = (app.body as { data?: { application_name?: unknown } } | null)?.data?.application_name;
      check(await request(ctx, cr, 'PATCH', `/v2/call_control_applications/${encodeURIComponent(cr.connection_id)}`, {
        application_name: typeof name === 'string' ? name : 'voice-agent', webhook_event_url: urls.voiceUrl, webhook_api_version: '2',
      }));
      return { ok: true, message: `webhook_event_url of connection ${cr.connection_id} set to ${urls.voiceUrl}` };
    } catch (err) {
      return { ok: false, message: `Telnyx was not updated: ${(err as Error).message}` };
    }
  },

  async dial(ctx, c, req) {
    const cr = creds(c);
    const r = await request(ctx, cr, 'POST', '/v2/calls', {
      connection_id: cr.connection_id,
      to: req.to,
      from: req.from,
      webhook_url: req.statusCallbackUrl,
      webhook_url_method: 'POST',
      timeout_secs: Math.round(req.timeoutS),
      ...streamSettings(req.streamUrl),
      // greeting_end: a machine's end of greeting is reported too (where a voicemail message goes)
      ...(req.amd ? { answering_machine_detection: 'greeting_end' } : {}),
      // recordInProviderConsole: Telnyx records the call from the answer (kept on the Telnyx account)
      ...(req.record ? { record: 'record-from-answer', record_channels: 'dual', record_format: 'mp3' } : {}),
    });
    check(r);
    const id = (r.body as { data?: { call_control_id?: unknown } } | null)?.data?.call_control_id;
    return { carrierCallId: typeof id === 'string' ? id : null };
  },

  async sendDtmf(ctx, c, carrierCallId, digits) {
    check(await request(ctx, creds(c), 'POST', `/v2/calls/${encodeURIComponent(carrierCallId)}/actions/send_dtmf`, { digits }));
  },

  async hangup(ctx, c, carrierCallId) {
    const r = await request(ctx, creds(c), 'POST', `/v2/calls/${encodeURIComponent(carrierCallId)}/actions/hangup`, {});
    if (r.status === 422 || r.status === 404) return; // the call already ended
    check(r);
  },

  transferSupport: (destination) => dialOutSupport('Telnyx', destination),
  // record on dial/answer, record on the transfer command
  recordingSupport: () => null,

  async transfer(ctx, c, carrierCallId, req) {
    const to = dialOutTarget('telnyx', 'Telnyx', req.destination);
    const r = await request(ctx, creds(c), 'POST', `/v2/calls/${encodeURIComponent(carrierCallId)}/actions/transfer`, {
      to: to.kind === 'sip' ? to.uri : to.number, timeout_secs: Math.round(req.timeoutS), ...(req.callerId ? { from: req.callerId } : {}),
      // recordTransfer: Telnyx records the bridged legs from the destination's answer and sends the transferred leg's
      // events, `call.recording.saved` among them, to webhook_url (our `recording` hook of the call)
      ...(req.recordingCallbackUrl
        ? { record: 'record-from-answer', record_channels: 'dual', record_format: 'mp3', webhook_url: req.recordingCallbackUrl, webhook_url_method: 'POST' }
        : {}),
    });
    check(r);
  },

  verifyWebhook(c, req) {
    return verifyTelnyxSignature(creds(c).public_key, req);
  },

  mapStatus,

  hooks: {
    parse,
    async bridge(ctx, c, call) {
      // Call Control has no answer document: answer the inbound leg with the stream attached
      if (call.inbound && call.carrierCallId) {
        // recordInProviderConsole: the answer command records the whole call from the answer, as the dial does outbound
        const r = await request(ctx, creds(c), 'POST', `/v2/calls/${encodeURIComponent(call.carrierCallId)}/actions/answer`, {
          ...streamSettings(call.streamUrl), ...(call.record ? { record: 'record-from-answer', record_channels: 'dual', record_format: 'mp3' } : {}),
        });
        // a retried call.initiated of a call answered before: the carrier says it is answered already (422)
        if (!(call.replay && r.status === 422)) check(r);
      }
      return { status: 200 };
    },
    async refuse(ctx, c, carrierCallId) {
      // No document to speak from: the refused call is rejected (the caller hears the network's busy/rejection tone)
      if (c && carrierCallId) {
        const r = await request(ctx, creds(c), 'POST', `/v2/calls/${encodeURIComponent(carrierCallId)}/actions/reject`, { cause: 'USER_BUSY' });
        if (r.status >= 300) ctx.logger?.warn({ status: r.status }, 'telnyx reject failed');
      }
      return { status: 200 };
    },
    // the refusal is the busy rejection already
    async busy(ctx, c, carrierCallId) {
      return telnyx.hooks!.refuse(ctx, c, carrierCallId, '');
    },
    ack: () => ({ status: 200 }),
  },
};
