// Carrier webhooks (no API key, not rate limited), one set of routes for every carrier with webhooks:
//   {base}/telephony/{carrier}/{answer|status|amd|transfer|recording}/{callId}   callbacks of one of our calls
//                                                                      (recording: a transferred leg's recording)
//   {base}/telephony/{carrier}/voice                                   a number's inbound answer webhook (and, for
//                                                                      call-control carriers, its call events)
//   {base}/telephony/{carrier}/voice-status                            a number's status webhook
// The adapter (core/telephony/<carrier>.ts `hooks`) parses each webhook into carrier-neutral events
// (core/telephony/types.ts CarrierEvent) and writes the carrier's answer document; this file verifies, routes and
// applies them. Verification: the carrier's own signature (`adapter.verifyWebhook` with the call's or the route's
// credentials) or, for carriers that sign nothing (`adapter.signedUrls`), our signed per-call token in the URL.
// A forged or missing one → 403, nothing changes. Smartflo has no webhooks (its audio stream is the whole contract).
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import { announceUnconnected, finishUnconnected, onPhoneCallEnded } from '../../../core/telephony/ended.ts';
import { admitInbound, carrierRoutes, refusalMessage, type InboundAdmission, type InboundRoute } from '../../../core/telephony/inbound.ts';
import { assignedNodeUrl } from '../../../core/media-nodes.ts';
import { isMessageEnd, notifyCallEvent } from '../../../core/telephony/call-events.ts';
import { toE164 } from '../../../core/telephony/numbers.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { verifyConfigUrlSig, verifyStreamToken } from '../../../core/telephony/signing.ts';
import { callCarrier, getConfigById, readCredentials, type CallCarrier } from '../../../core/telephony/store.ts';
import type { CarrierAdapter, CarrierEvent, CarrierReply, Credentials, WebhookRequest } from '../../../core/telephony/types.ts';
import { carrierHookUrl, carrierStreamUrl } from '../../../core/telephony/urls.ts';
import type { ApiDeps } from '../../deps.ts';
import { rawFormBody } from '../../middleware/body.ts';
import { startTransferRecording } from './transfer-recording.ts';

/**
 * A carrier status that ends one of our calls before its media stream connected (busy, no-answer, failed, canceled,
 * or answered and gone): the row is finished as never connected only while still pending (exactly one caller wins),
 * then the never-connected rule (core/calls/unconnected.ts: `call.ended`, then `call.completed` from the post-call
 * workflow) and the phone-call end hook follow.
 */
async function endUnconnectedCall(deps: ApiDeps, callId: string, connectionStatus: string, carrierStatus: { status: string; duration: unknown }): Promise<void> {
  const ended = await finishUnconnected(deps.db, callId, connectionStatus, { carrier_status: carrierStatus });
  if (!ended) return;
  void announceUnconnected(deps, ended);
  await onPhoneCallEnded(deps, ended.id).catch((err: unknown) => deps.logger.warn({ err, callId: ended.id }, 'phone-call end hook failed'));
}

const CALL_HOOKS = new Set(['answer', 'status', 'amd', 'transfer', 'recording']);

/** The webhook as the adapter sees it: form fields or query parameters, and the raw JSON body when there is one. */
async function requestOf(ctx: ParameterizedContext, publicUrl: string): Promise<WebhookRequest> {
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.query)) if (typeof v === 'string') params[k] = v;
  let rawBody: Buffer | undefined;
  let json: unknown;
  if (ctx.method !== 'GET') {
    if (ctx.is('application/x-www-form-urlencoded')) {
      rawBody = await rawFormBody(ctx);
      const form: Record<string, string> = {};
      for (const [k, v] of new URLSearchParams(rawBody.toString('utf8'))) form[k] = v;
      // the signature covers the form fields, not the query: keep them apart for the adapter
      return { url: `${publicUrl}${ctx.originalUrl}`, headers: ctx.headers, params: form, method: ctx.method, rawBody };
    }
    rawBody = (ctx.state as { rawBody?: Buffer }).rawBody;
    json = (ctx.request as { body?: unknown }).body;
  }
  return { url: `${publicUrl}${ctx.originalUrl}`, headers: ctx.headers, params: ctx.method === 'GET' ? params : {}, method: ctx.method, rawBody, json };
}

function reply(ctx: ParameterizedContext, r: CarrierReply): void {
  ctx.status = r.status;
  if (r.body !== undefined) {
    ctx.type = r.contentType ?? 'text/plain';
    ctx.body = r.body;
  }
}

export function carrierWebhookRoutes(router: Router, deps: ApiDeps): void {
  const { db, config, logger } = deps;
  const cx = { config, logger };

  /** The carrier of the path when it has webhooks; null lets other routes handle the path. */
  function adapterOf(id: string | undefined): (CarrierAdapter & { hooks: NonNullable<CarrierAdapter['hooks']> }) | null {
    const adapter = id ? carrierFor(id) : null;
    return adapter?.hooks ? (adapter as CarrierAdapter & { hooks: NonNullable<CarrierAdapter['hooks']> }) : null;
  }

  const genuine = (adapter: CarrierAdapter, creds: Credentials | null, req: WebhookRequest, callId: string | null) => {
    if (adapter.signedUrls) {
      const token = new URL(req.url).searchParams.get('token');
      return callId !== null && verifyStreamToken(config, callId, token);
    }
    return creds !== null && adapter.verifyWebhook(creds, req);
  };

  /** The call's agent asks for the carrier's own whole-call recording (recordInProviderConsole). */
  const wantsRecording = async (callId: string) =>
    (await db.maybeOneFirst(sql.type(z.object({ r: z.boolean().nullable() }))`
      SELECT (config_snapshot->>'recordInProviderConsole')::boolean AS r FROM calls WHERE id = ${callId}`)) === true;

  /** Status / AMD events of one of our calls (the same row rules as the Twilio callbacks). */
  async function apply(call: CallCarrier, ev: CarrierEvent): Promise<void> {
    if (ev.type === 'amd') {
      await db.query(sql.unsafe`UPDATE calls SET answered_by = ${ev.answeredBy}, updated_at = now() WHERE id = ${call.callId}`);
      await notifyCallEvent(db, { callId: call.callId, type: 'amd', answeredBy: ev.answeredBy, messageEnd: isMessageEnd(ev.answeredBy) });
      return;
    }
    if (ev.type !== 'status' || !ev.raw) return;
    await db.query(sql.unsafe`
      UPDATE calls SET carrier_status = ${ev.raw}, carrier_call_id = COALESCE(carrier_call_id, ${ev.carrierCallId}), updated_at = now()
      WHERE id = ${call.callId} AND status IN ('pending', 'active')`);
    if (!ev.terminal) return;
    // Answered and gone before the media stream connected: the pipeline never started → cancelled.
    const mapped = call.adapter.mapStatus(ev.raw);
    const connectionStatus = mapped === 'completed' ? 'cancelled' : mapped;
    await endUnconnectedCall(deps, call.callId, connectionStatus, { status: ev.raw, duration: ev.durationS });
  }

  /**
   * The media stream of a call: on the media node the dial assigned it to when that node has its own address
   * (media_nodes.public_url), else through the shared PUBLIC_URL.
   */
  async function streamUrlOf(adapter: CarrierAdapter, callId: string): Promise<string> {
    const own = await assignedNodeUrl(db, callId).catch(() => null);
    return carrierStreamUrl(own ? { ...config, baseUrl: `${own}/api/v1` } : config, adapter.id, callId);
  }

  // ── callbacks of one of our calls ──────────────────────────────────────────────────────────────────────────
  const perCall = async (ctx: ParameterizedContext, next: () => Promise<unknown>) => {
    const adapter = adapterOf(ctx.params.carrier);
    const hook = ctx.params.hook ?? '';
    if (!adapter || !CALL_HOOKS.has(hook)) return next();
    const req = await requestOf(ctx, config.publicUrl);
    const call = await callCarrier(db, config, ctx.params.callId ?? '');
    if (!call || call.adapter.id !== adapter.id) throw new HttpError(404, 'Call not found');
    if (!genuine(adapter, call.creds, req, call.callId)) {
      logger.warn({ callId: call.callId, carrier: adapter.id }, 'carrier webhook with a missing or invalid signature refused');
      throw new HttpError(403, `Invalid ${adapter.id} signature`);
    }
    let answer: CarrierReply | null = null;
    for (const ev of adapter.hooks.parse(hook, req)) {
      if (ev.type === 'answer') {
        if (ev.carrierCallId) {
          await db.query(sql.unsafe`UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${ev.carrierCallId}), updated_at = now() WHERE id = ${call.callId}`);
        }
        const current = await db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${call.callId}`);
        answer = current === 'pending'
          ? await adapter.hooks.bridge(cx, call.creds, { callId: call.callId, carrierCallId: ev.carrierCallId ?? call.carrierCallId, streamUrl: await streamUrlOf(adapter, call.callId), inbound: false, record: await wantsRecording(call.callId) })
          : await adapter.hooks.refuse(cx, call.creds, ev.carrierCallId ?? call.carrierCallId, '');
      } else if (ev.type === 'transfer_leg') {
        const t = await db.maybeOneFirst(sql.type(z.object({ t: z.unknown() }))`SELECT logs->'transfer' AS t FROM calls WHERE id = ${call.callId}`);
        const transfer = (t ?? {}) as { destination?: unknown; timeoutS?: unknown; record?: unknown };
        if (typeof transfer.destination !== 'string' || !adapter.hooks.transferDocument) throw new HttpError(404, 'No transfer for this call');
        answer = adapter.hooks.transferDocument({
          destination: transfer.destination,
          timeoutS: typeof transfer.timeoutS === 'number' ? transfer.timeoutS : 30,
          recordingCallbackUrl: transfer.record === true ? carrierHookUrl(config, adapter.id, 'recording', call.callId) : null,
          callerId: call.platformNumber,
        });
      } else if (ev.type === 'recording') {
        // the carrier's recording of the transferred leg: the transfer-recording workflow re-hosts it (once per call)
        await startTransferRecording(deps, call, {
          carrierCallId: ev.carrierCallId,
          recording: ev.url ? { url: ev.url, headers: adapter.hooks.recordingHeaders?.(call.creds) ?? {}, durationSeconds: ev.durationS } : null,
        });
      } else {
        await apply(call, ev);
      }
    }
    reply(ctx, answer ?? adapter.hooks.ack?.(hook) ?? { status: 204 });
  };
  router.post('/telephony/:carrier/:hook/:callId', perCall);
  router.get('/telephony/:carrier/:hook/:callId', perCall);

  /** Our call by the carrier's call id (events of inbound calls). */
  async function callByCarrierId(adapter: CarrierAdapter, carrierCallId: string | null): Promise<CallCarrier | null> {
    if (!carrierCallId) return null;
    const id = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id::text FROM calls WHERE telephony_provider = ${adapter.id} AND carrier_call_id = ${carrierCallId} ORDER BY created_at DESC LIMIT 1`);
    return id ? callCarrier(db, config, id) : null;
  }

  // ── a number's inbound webhook ─────────────────────────────────────────────────────────────────────────────
  const voice = async (ctx: ParameterizedContext, next: () => Promise<unknown>) => {
    const adapter = adapterOf(ctx.params.carrier);
    if (!adapter) return next();
    const req = await requestOf(ctx, config.publicUrl);
    const events = adapter.hooks.parse(ctx.path.endsWith('/voice-status') ? 'voice-status' : 'voice', req);
    let answer: CarrierReply | null = null;
    for (const ev of events) {
      if (ev.type === 'inbound') {
        answer = await inbound(adapter, req, ev);
        continue;
      }
      if (ev.type !== 'status' && ev.type !== 'amd') continue;
      const call = await callByCarrierId(adapter, ev.carrierCallId);
      if (!call) {
        // a genuine event of a call we never admitted (refused, or not ours): acknowledge it
        if (!(await anyConfigVerifies(adapter, req))) throw new HttpError(403, `Invalid ${adapter.id} signature`);
        continue;
      }
      if (!genuine(adapter, call.creds, req, call.callId)) throw new HttpError(403, `Invalid ${adapter.id} signature`);
      await apply(call, ev);
    }
    if (!events.length && !(await anyConfigVerifies(adapter, req))) throw new HttpError(403, `Invalid ${adapter.id} signature`);
    reply(ctx, answer ?? adapter.hooks.ack?.('voice') ?? { status: 204 });
  };
  for (const path of ['/telephony/:carrier/voice', '/telephony/:carrier/voice-status']) {
    router.post(path, voice);
    router.get(path, voice);
  }

  /**
   * The credentials of a configuration (or inbound binding) of the account the webhook names that verifies it, or
   * null. O(1) in the number of organizations: only the configurations and bindings of the account reference the
   * carrier sends (`adapter.accountOf`: Telnyx connection_id, Vonage application_id, the `account` of our Plivo answer
   * URL) are tried; a webhook naming no account is refused without a look-up.
   */
  async function verifyingConfig(adapter: CarrierAdapter, req: WebhookRequest): Promise<Credentials | null> {
    if (adapter.signedUrls) return null;
    const ref = adapter.accountOf?.(req) ?? null;
    if (!ref) return null;
    const configs = await db.anyFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
      SELECT credentials FROM telephony_configs WHERE provider = ${adapter.id} AND account_ref = ${ref} LIMIT 20`);
    // accounts registered only through POST /call type=inbound keep their credentials on the binding
    const bound = await db.anyFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
      SELECT credentials FROM inbound_bindings WHERE provider = ${adapter.id} AND account_ref = ${ref} AND credentials IS NOT NULL LIMIT 20`);
    for (const blob of [...configs, ...bound]) {
      const creds = readCredentials(config, blob); // unreadable with the current key: verifies nothing
      if (creds && adapter.verifyWebhook(creds, req)) return creds;
    }
    return null;
  }
  const anyConfigVerifies = async (adapter: CarrierAdapter, req: WebhookRequest) => (await verifyingConfig(adapter, req)) !== null;

  type HookAdapter = CarrierAdapter & { hooks: NonNullable<CarrierAdapter['hooks']> };

  /**
   * The answer to an admitted (or replayed) inbound call: the bridge to its stream. When the bridge cannot be made
   * (the carrier refused the call-control command, …) the call is finished as never connected (`connection_failed`)
   * and the carrier gets its refusal form — never a 500, which carriers retry.
   */
  async function answerInbound(adapter: HookAdapter, creds: Credentials, ev: Extract<CarrierEvent, { type: 'inbound' }>, admission: InboundAdmission): Promise<CarrierReply> {
    // a late retry of a call that is already on its stream (or over): nothing to change — call-control carriers get
    // their acknowledgement (no second command), document carriers an empty refusal (their first answer is running)
    if (!admission.ok && admission.replay && admission.reason === 'call_not_pending') return adapter.hooks.ack?.('voice') ?? refuseSafely(adapter, creds, ev.carrierCallId, '');
    if (!admission.ok) {
      logger.info({ orgId: admission.orgId, reason: admission.reason, replay: admission.replay ?? false }, 'inbound call refused');
      // no media node has room: the carrier's busy signal where it has one (the call is not answered)
      if (admission.reason === 'media_capacity' && adapter.hooks.busy) {
        return adapter.hooks.busy(cx, creds, ev.carrierCallId).catch(() => refuseSafely(adapter, creds, ev.carrierCallId, admission.message));
      }
      return refuseSafely(adapter, creds, ev.carrierCallId, admission.message);
    }
    try {
      return await adapter.hooks.bridge(cx, creds, {
        callId: admission.callId, carrierCallId: ev.carrierCallId, streamUrl: carrierStreamUrl(config, adapter.id, admission.callId), inbound: true,
        replay: admission.replay ?? false, record: await wantsRecording(admission.callId),
      });
    } catch (err) {
      logger.warn({ err, callId: admission.callId, carrier: adapter.id }, 'inbound call could not be bridged to its stream');
      await endUnconnectedCall(deps, admission.callId, 'connection_failed', { status: 'bridge_failed', duration: null }).catch((e: unknown) => logger.warn({ err: e }, 'ending the unbridged call failed'));
      return refuseSafely(adapter, creds, ev.carrierCallId, refusalMessage('default'));
    }
  }

  /** The carrier's refusal form; when even that fails (a call-control command), an empty acknowledgement. */
  async function refuseSafely(adapter: HookAdapter, creds: Credentials | null, carrierCallId: string | null, message: string): Promise<CarrierReply> {
    try {
      return await adapter.hooks.refuse(cx, creds, carrierCallId, message);
    } catch (err) {
      logger.warn({ err, carrier: adapter.id }, 'carrier refusal failed');
      return adapter.hooks.ack?.('voice') ?? { status: 204 };
    }
  }

  /**
   * An inbound call of a carrier that signs nothing (Exotel): the webhook URL pasted in its portal names our
   * configuration and carries its signature (`?config={id}&sig=…`); routes are the dialled number's in that
   * configuration's organization.
   */
  async function inboundSigned(adapter: HookAdapter, req: WebhookRequest, ev: Extract<CarrierEvent, { type: 'inbound' }>, to: string): Promise<CarrierReply> {
    const q = new URL(req.url).searchParams;
    const id = q.get('config') ?? '';
    if (!/^\d{1,15}$/.test(id) || !verifyConfigUrlSig(config, adapter.id, id, q.get('sig'))) throw new HttpError(403, `Invalid ${adapter.id} signature`);
    const cfg = await getConfigById(db, Number(id));
    if (!cfg || cfg.provider !== adapter.id) throw new HttpError(404, 'Telephony configuration not found');
    const route = to ? (await carrierRoutes(deps, adapter.id, to)).find((r) => r.orgId === cfg.organization_id) : undefined;
    // the configuration's credentials are not needed to answer a signed-URL carrier (Exotel's Voicebot answer is our
    // stream URL); unreadable ones (a changed TELEPHONY_ENCRYPTION_KEY) still get the call answered
    const creds = readCredentials(config, cfg.credentials) ?? {};
    if (!route) return refuseSafely(adapter, creds, ev.carrierCallId, refusalMessage('no_route'));
    const admission = await admitInbound(deps, route, { provider: adapter.id, from: ev.from, to, carrierCallId: ev.carrierCallId });
    return answerInbound(adapter, route.credentials ?? creds, ev, admission);
  }

  /** The account reference a route's webhooks carry (the binding's or its configuration's). */
  const routeAccount = (r: InboundRoute) => (r.kind === 'binding' ? r.binding.account_ref ?? r.config?.account_ref ?? null : r.config.account_ref);

  /**
   * An inbound call: the route of the dialled number (of the account the webhook names, when the carrier names one)
   * that verifies the webhook, the gates (once per carrier call id), then the bridge.
   */
  async function inbound(adapter: HookAdapter, req: WebhookRequest, ev: Extract<CarrierEvent, { type: 'inbound' }>): Promise<CarrierReply> {
    const to = toE164(ev.to) ?? (/^\d{8,15}$/.test(ev.to) ? toE164(`+${ev.to}`) : null) ?? '';
    if (adapter.signedUrls) return inboundSigned(adapter, req, ev, to);
    const ref = adapter.accountOf?.(req) ?? null;
    const routes = to ? (await carrierRoutes(deps, adapter.id, to)).filter((r) => !ref || routeAccount(r) === null || routeAccount(r) === ref) : [];
    const route = routes.find((r) => r.credentials && adapter.verifyWebhook(r.credentials, req));
    if (!route) {
      // No route verified: a refusal only for a genuine request of a known account.
      const known = await verifyingConfig(adapter, req);
      if (!known) throw new HttpError(403, `Invalid ${adapter.id} signature`);
      return refuseSafely(adapter, known, ev.carrierCallId, refusalMessage('no_route'));
    }
    const admission = await admitInbound(deps, route, { provider: adapter.id, from: ev.from, to, carrierCallId: ev.carrierCallId });
    return answerInbound(adapter, route.credentials!, ev, admission);
  }
}
