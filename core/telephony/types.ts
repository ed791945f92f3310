// The carrier adapter contract (REST/webhook half of a carrier). One file per carrier in core/telephony/<id>.ts
// implements `CarrierAdapter`; `carrierFor(id)` (registry.ts) returns it. The media-stream half of a carrier lives in
// media/transports/carriers/<id>.ts. Adding a carrier touches those two files, its fake and its tests.
// See README.md beside this file for the whole contract (URLs, signing, call rows, hook points).
import type { z } from 'zod';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/** Carriers built so far. `callConfig.provider` values outside this set but in core/calls/request.ts CARRIERS → 501. */
export type CarrierId = 'twilio' | 'smartflo' | 'plivo' | 'telnyx' | 'vonage' | 'exotel';

/** What an adapter needs from the process: config (base URLs, OUTBOUND_ALLOW_HOSTS) and a logger. */
export interface CarrierContext {
  config: Config;
  logger?: Logger;
}

/** Credentials of one carrier account, decrypted. Adapter-specific shape (validated by `credentialsSchema`). */
export type Credentials = Record<string, unknown>;

/** A carrier answered a REST request with an error status, or could not be reached (status 0). */
export class CarrierHttpError extends Error {
  constructor(
    readonly provider: string,
    /** HTTP status of the carrier's answer; 0 when unreachable (network error, timeout, refused by the SSRF guard). */
    readonly status: number,
    message: string,
    /** The carrier's own error code when it gave one (Twilio `code`, e.g. 20003). */
    readonly carrierCode?: number | string,
  ) {
    super(message);
    this.name = 'CarrierHttpError';
  }
}

/** What a carrier may be asked to record on its side (CarrierAdapter.recordingSupport). */
export type CarrierRecording = 'outbound_call' | 'inbound_call' | 'transfer_leg';

export type ProbeResult = { ok: true } | { ok: false; reason: string };

/** Number ownership on the carrier account. `ref` is the carrier's id of the number (Twilio PhoneNumberSid). */
export type OwnershipResult = { owned: true; ref: string | null } | { owned: false };

export interface SyncResult {
  ok: boolean;
  message: string | null;
  /** The number cannot take inbound calls with these credentials at all: an inbound registration is refused (400 message). */
  blocking?: boolean;
}

export interface DialRequest {
  /** Our call id (calls.id). */
  callId: string;
  from: string;
  to: string;
  /** Twilio: the answer webhook (Url); it replies with <Connect><Stream>. */
  answerUrl: string;
  statusCallbackUrl: string;
  /** The media stream URL the carrier should connect to (already signed where the carrier keeps query strings). */
  streamUrl: string;
  /** Ask the carrier for answering-machine detection (async) with results posted to amdCallbackUrl. */
  amd: { callbackUrl: string } | null;
  /** Ring timeout in seconds. */
  timeoutS: number;
  /** Smartflo: the signed custom identifier correlating the returning stream (signing.ts customIdentifier). */
  customIdentifier: string;
  /** `recordInProviderConsole`: ask the carrier to record the whole call on its side (where its dial API offers it). */
  record?: boolean;
}

/** Carrier call id when the carrier returns one synchronously (Twilio CallSid); null for Smartflo (async). */
export interface DialResult {
  carrierCallId: string | null;
}

export interface TransferRequest {
  /** Our call id (carriers whose transfer fetches a document from us: Plivo's aleg_url). */
  callId?: string;
  /** E.164 number or SIP URI. */
  destination: string;
  /** Ring timeout of the transferred leg, seconds. */
  timeoutS: number;
  /** When set, the transferred leg is recorded and the carrier posts recording status here. */
  recordingCallbackUrl: string | null;
  /** Caller id to present on the transferred leg (null: carrier default). */
  callerId: string | null;
}

/** A carrier webhook as received (form fields parsed). `url` is the public URL the carrier requested (PUBLIC_URL based). */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  params: Record<string, string>;
  /** HTTP method (GET answer URLs of some carriers); POST when absent. */
  method?: string;
  /** The body exactly as received (JSON webhooks are signed over it: Telnyx, Vonage). */
  rawBody?: Buffer;
  /** The parsed JSON body of JSON webhooks. */
  json?: unknown;
}

/**
 * What a carrier webhook said, in carrier-neutral terms (api/routes/telephony/webhooks.ts).
 * `answeredBy` uses Twilio's AMD vocabulary (`human`, `machine_start`, `machine_end_beep`, `machine_end_silence`,
 * `machine_end_other`, `fax`, `unknown`): the media side treats `machine_*`/`fax` as a machine, and `machine_end_*`
 * as the end of its greeting (beep, silence after it, or the carrier's detection gave up) — where a voicemail
 * message goes.
 */
export type CarrierEvent =
  | { type: 'answer'; carrierCallId: string | null }
  | { type: 'status'; raw: string; terminal: boolean; carrierCallId: string | null; durationS: number | null }
  | { type: 'amd'; answeredBy: string; carrierCallId: string | null }
  | { type: 'inbound'; from: string; to: string; carrierCallId: string | null }
  | { type: 'transfer_leg'; carrierCallId: string | null }
  /** The carrier's recording of a transferred leg is ready (`url`) or will not come (`url` null). */
  | { type: 'recording'; url: string | null; durationS: number | null; carrierCallId: string | null };

/** An HTTP answer to a carrier webhook (XML / NCCO / JSON document, or an empty 204). */
export interface CarrierReply {
  status: number;
  contentType?: string;
  body?: string;
}

/**
 * A carrier's webhooks, served by the shared routes `/telephony/{id}/{answer|status|amd|transfer|recording}/{callId}`
 * and `/telephony/{id}/voice[-status]` (api/routes/telephony/webhooks.ts).
 */
export interface CarrierHooks {
  /** The events of one webhook (`hook` = answer | status | amd | transfer | voice). Unknown content → []. */
  parse(hook: string, req: WebhookRequest): CarrierEvent[];
  /**
   * Bridge an answered call to our media stream: the answer document (Plivo XML, Vonage NCCO, Exotel {url}) or,
   * for call-control carriers (Telnyx), the REST command that starts the stream, then an empty reply.
   */
  bridge(ctx: CarrierContext, creds: Credentials, call: { callId: string; carrierCallId: string | null; streamUrl: string; inbound: boolean; replay?: boolean; record?: boolean }): Promise<CarrierReply>;
  /** A refused call: a spoken message, then hang up. */
  refuse(ctx: CarrierContext, creds: Credentials | null, carrierCallId: string | null, message: string): Promise<CarrierReply>;
  /**
   * An inbound call refused because no media node has room: the carrier's own busy signal, without answering
   * (Twilio `<Reject reason="busy">`, Plivo `<Hangup reason="busy">`, Telnyx `reject` USER_BUSY). Absent: `refuse`
   * with the spoken busy message.
   */
  busy?(ctx: CarrierContext, creds: Credentials | null, carrierCallId: string | null): Promise<CarrierReply>;
  /** The document a transfer's leg URL answers with (Plivo aleg_url); null when the carrier transfers by REST alone. */
  transferDocument?(req: TransferRequest): CarrierReply;
  /** Headers of the download of a transferred leg's recording (the carrier's auth); none when its URLs are pre-signed. */
  recordingHeaders?(creds: Credentials): Record<string, string>;
  /** Reply to a webhook that needs no document (status callbacks): 204 unless the carrier wants something else. */
  ack?(hook: string): CarrierReply;
}

export interface CarrierAdapter {
  readonly id: CarrierId;
  /** Credentials of a saved telephony configuration: the `config` body minus `provider` (and minus `amd_enabled`). */
  readonly credentialsSchema: z.ZodType<Credentials>;
  /** Inline `callConfig.auth` of POST /call; null when inline credentials are forbidden (smartflo). */
  readonly inlineAuthSchema: z.ZodType<Credentials> | null;
  /** Which credential fields are secrets (masked in every response, encrypted at rest). */
  readonly secretFields: readonly string[];
  /** Can dial outbound through `dial` (smartflo needs click_to_call_api_key: checked by `canDial`). */
  canDial(creds: Credentials): boolean;
  /** Credential probe (Twilio: GET Accounts/{sid}.json; Smartflo: authenticated GET). */
  probeCredentials(ctx: CarrierContext, creds: Credentials): Promise<ProbeResult>;
  /** Is this E.164 number on the account? Throws CarrierHttpError when the carrier cannot answer. */
  probeNumber(ctx: CarrierContext, creds: Credentials, e164: string): Promise<OwnershipResult>;
  /**
   * Point the number's inbound voice webhook at us (Twilio VoiceUrl/StatusCallback) or, with `voiceUrl` null, leave
   * it. Carriers with no per-number webhook (smartflo) answer ok with a message saying so. Never throws.
   */
  syncInbound(ctx: CarrierContext, creds: Credentials, e164: string, urls: { voiceUrl: string; statusCallbackUrl: string } | null): Promise<SyncResult>;
  /** Place the call. Throws CarrierHttpError on a carrier 4xx/5xx or when unreachable. */
  dial(ctx: CarrierContext, creds: Credentials, req: DialRequest): Promise<DialResult>;
  /** End a live call (Twilio: Status=completed). */
  hangup(ctx: CarrierContext, creds: Credentials, carrierCallId: string): Promise<void>;
  /**
   * recordInProviderConsole on a call whose answer carried no recording request (Twilio inbound calls): start the
   * carrier's own whole-call recording on the live call through its REST API. Absent: the answer/dial asks for it.
   */
  startRecording?(ctx: CarrierContext, creds: Credentials, carrierCallId: string): Promise<void>;
  /**
   * Static and network-free: can this carrier move a live call to `destination` (transfer-target.ts: a number, a SIP
   * URI, a host-less extension)? null = it can; else why not, naming the carrier and the destination. The API refuses
   * an agent whose transfer the carrier of a number, binding, call or campaign cannot make; the transfer tool asks
   * again before it speaks its transfer message.
   */
  transferSupport(destination: string): string | null;
  /**
   * Static: can this carrier record on its own side? `outbound_call` / `inbound_call`: the whole call of that
   * direction (recordInProviderConsole); `transfer_leg`: the transferred conversation (recordTransfer). null = it can;
   * else why not.
   */
  recordingSupport(what: CarrierRecording): string | null;
  /** Move the live call to `destination` (Twilio: call update with <Dial> TwiML). The media stream then stops. */
  transfer(ctx: CarrierContext, creds: Credentials, carrierCallId: string, req: TransferRequest): Promise<void>;
  /**
   * Press keys on the live call through the carrier's DTMF API, without disturbing its media stream (Telnyx
   * send_dtmf, Plivo Call DTMF, Vonage dtmf). `digits` holds keys only (`0-9 * #`); pauses are the caller's. Absent:
   * the keys go in-band, as tones in the stream (Twilio has no DTMF request short of new TwiML, which ends the stream).
   */
  sendDtmf?(ctx: CarrierContext, creds: Credentials, carrierCallId: string, digits: string): Promise<void>;
  /** Webhook authenticity (Twilio X-Twilio-Signature). Carriers without signed webhooks return false. */
  verifyWebhook(creds: Credentials, req: WebhookRequest): boolean;
  /** Raw carrier call status → the spec's connectionStatus (busy, no_answer, connection_failed, cancelled, completed, telephony_<raw>). */
  mapStatus(raw: string): string;
  /** Carrier REST base (env override replaces scheme/host/port). */
  apiBase(config: Config): string;
  /** The carrier runs answering-machine detection when asked at dial time (results: `amd` webhook events). */
  readonly carrierAmd?: boolean;
  /** Its AMD also reports the end of a machine's greeting (`machine_end_*`: Twilio, Telnyx, Vonage; not Plivo). */
  readonly amdMessageEnd?: boolean;
  /**
   * The carrier signs no webhooks (Exotel): every callback URL we hand it carries our own signed per-call token,
   * checked by the webhook routes instead of `verifyWebhook`.
   */
  readonly signedUrls?: boolean;
  /** Its webhooks (every carrier but Smartflo, which has none). */
  readonly hooks?: CarrierHooks;
  /** Extra fields of a configuration's responses (URLs to paste into the carrier's portal). */
  configFields?(config: Config, configId: number): Record<string, string>;
  /** Account reference stored with configurations and bindings (Twilio AccountSid), used to narrow inbound routing. */
  accountRef?(creds: Credentials): string | null;
  /**
   * The account reference (as `accountRef`) a webhook names, read before it is verified: the look-up key of the
   * configurations to verify it with, so that a forged webhook costs O(1) (never a try of every organization's keys).
   */
  accountOf?(req: WebhookRequest): string | null;
}
