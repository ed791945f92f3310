// Carrier webhooks (no API key, not rate limited): Twilio answer / status / AMD / recording callbacks of our calls and
// the VoiceUrl of inbound numbers. Every request is verified with X-Twilio-Signature against the URL Twilio was
// given (built from PUBLIC_URL, so it holds behind a proxy); a forged or missing signature answers 403 and changes
// nothing.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { assignedNodeUrl } from '../../core/media-nodes.ts';
import { admitInbound, refusalMessage, twilioRoutes } from '../../core/telephony/inbound.ts';
import { toE164 } from '../../core/telephony/numbers.ts';
import { streamToken } from '../../core/telephony/signing.ts';
import { TERMINAL_STATUSES } from '../../core/telephony/status.ts';
import { callCarrier, configRow, openCredentials, type CallCarrier } from '../../core/telephony/store.ts';
import { hangupTwiml, refusalTwiml, streamTwiml, twilioBasicAuth, verifyTwilioSignature } from '../../core/telephony/twilio.ts';
import { twilioStreamUrl } from '../../core/telephony/urls.ts';
import type { ApiDeps } from '../deps.ts';
import { rawFormBody } from '../middleware/body.ts';
import { startTransferRecording } from './transfer-recording-start.ts';
import { endUnconnectedCall } from './unconnected-end.ts';

/** Notifications the media side listens to (LISTEN telephony_call_events): JSON {callId, type, ...}. */
export const CALL_EVENTS_CHANNEL = 'telephony_call_events';

async function formOf(ctx: ParameterizedContext): Promise<Record<string, string>> {
  if (!ctx.is('application/x-www-form-urlencoded')) return {};
  const raw = await rawFormBody(ctx);
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) out[k] = v;
  return out;
}

function twiml(ctx: ParameterizedContext, xml: string): void {
  ctx.type = 'text/xml';
  ctx.body = xml;
}

export function carrierWebhookRoutes(router: Router, deps: ApiDeps): void {
  const { db, config, logger } = deps;
  /** The URL Twilio requested, as we gave it (PUBLIC_URL + path + query). */
  const signedUrl = (ctx: ParameterizedContext) => `${config.publicUrl}${ctx.originalUrl}`;

  async function verified(ctx: ParameterizedContext, callId: string): Promise<{ call: CallCarrier; params: Record<string, string> }> {
    const params = await formOf(ctx);
    const call = await callCarrier(db, config, callId);
    if (!call || call.adapter.id !== 'twilio') throw new HttpError(404, 'Call not found');
    if (!call.adapter.verifyWebhook(call.creds, { url: signedUrl(ctx), headers: ctx.headers, params })) {
      logger.warn({ callId }, 'twilio webhook with a missing or invalid signature refused');
      throw new HttpError(403, 'Invalid Twilio signature');
    }
    return { call, params };
  }

  /** A carrier status for one of our calls: record it; a terminal one before the stream connected ends the row. */
  async function onStatus(call: CallCarrier, params: Record<string, string>): Promise<void> {
    const raw = (params.CallStatus ?? '').toLowerCase();
    if (!raw) return;
    await db.query(sql.unsafe`
      UPDATE calls SET carrier_status = ${raw}, carrier_call_id = COALESCE(carrier_call_id, ${params.CallSid ?? null}), updated_at = now()
      WHERE id = ${call.callId} AND status IN ('pending', 'active')`);
    if (!TERMINAL_STATUSES.has(raw)) return;
    // Answered and gone before the media stream connected: the pipeline never started → cancelled.
    const connectionStatus = raw === 'completed' ? 'cancelled' : call.adapter.mapStatus(raw);
    await endUnconnectedCall(deps, call.callId, connectionStatus, { status: raw, duration: params.CallDuration ?? null });
  }

  // Outbound answer webhook: bridge the audio to our media stream (or hang up a call that is no longer pending).
  router.post('/telephony/twilio/answer/:callId', async (ctx) => {
    const { call, params } = await verified(ctx, ctx.params.callId ?? '');
    if (params.CallSid) {
      await db.query(sql.unsafe`UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${params.CallSid}), updated_at = now() WHERE id = ${call.callId}`);
    }
    if (call.status !== 'pending') return twiml(ctx, hangupTwiml());
    // the media node the dial assigned the call to, when it has its own address (core/telephony/outbound.ts)
    const own = await assignedNodeUrl(db, call.callId).catch(() => null);
    twiml(ctx, streamTwiml(twilioStreamUrl(own ? { baseUrl: `${own}/api/v1` } : config, call.callId), { token: streamToken(config, call.callId), callId: call.callId }));
  });

  router.post('/telephony/twilio/status/:callId', async (ctx) => {
    const { call, params } = await verified(ctx, ctx.params.callId ?? '');
    await onStatus(call, params);
    ctx.status = 204;
  });

  // Async AMD result: stored on the row and announced to the media side (machine_* / fax = voicemail).
  router.post('/telephony/twilio/amd/:callId', async (ctx) => {
    const { call, params } = await verified(ctx, ctx.params.callId ?? '');
    const answeredBy = (params.AnsweredBy ?? '').toLowerCase();
    if (answeredBy) {
      await db.query(sql.unsafe`UPDATE calls SET answered_by = ${answeredBy}, updated_at = now() WHERE id = ${call.callId}`);
      await db.query(sql.unsafe`SELECT pg_notify(${CALL_EVENTS_CHANNEL}, ${JSON.stringify({ callId: call.callId, type: 'amd', answeredBy })})`);
    }
    ctx.status = 204;
  });

  // Recording status of a transferred leg: start the transfer-recording workflow (exactly once per call).
  router.post('/telephony/twilio/recording/:callId', async (ctx) => {
    const { call, params } = await verified(ctx, ctx.params.callId ?? '');
    const status = (params.RecordingStatus ?? '').toLowerCase();
    if (status === 'in-progress' || !status) {
      ctx.status = 204;
      return;
    }
    const url = params.RecordingUrl;
    await startTransferRecording(deps, call, {
      carrierCallId: params.DialCallSid ?? params.CallSid ?? null,
      recording: status === 'completed' && url
        ? { url: /\.(wav|mp3)$/i.test(url) ? url : `${url}.wav`, headers: { authorization: twilioBasicAuth(call.creds) }, durationSeconds: params.RecordingDuration ? Number(params.RecordingDuration) : null }
        : null,
    });
    ctx.status = 204;
  });

  // A number's VoiceUrl: an inbound call. Route, verify with the route's credentials, gates, then TwiML.
  router.post('/telephony/twilio/voice', async (ctx) => {
    const params = await formOf(ctx);
    const req = { url: signedUrl(ctx), headers: ctx.headers, params };
    const to = toE164(params.To ?? params.Called ?? '') ?? '';
    const from = params.From ?? params.Caller ?? '';
    const accountSid = params.AccountSid ?? '';
    const routes = to && accountSid ? await twilioRoutes(deps, accountSid, to) : [];
    const route = routes.find((r) => r.credentials && verifyTwilioSignature(String(r.credentials.auth_token ?? ''), req));
    if (!route) {
      // No route verified: answer a refusal only to a genuine Twilio request of a known account.
      const configs = accountSid ? await db.any(sql.type(configRow)`
        SELECT id, organization_id::text, name, provider, credentials, account_ref, amd_enabled, is_default_outbound, created_at, updated_at
        FROM telephony_configs WHERE provider = 'twilio' AND account_ref = ${accountSid}`) : [];
      const genuine = configs.some((c) => verifyTwilioSignature(String(openCredentials(config, c.credentials).auth_token ?? ''), req));
      if (!genuine) throw new HttpError(403, 'Invalid Twilio signature');
      return twiml(ctx, refusalTwiml(refusalMessage('no_route')));
    }
    // Twilio retries a VoiceUrl that timed out: the same CallSid gets the same call (admitInbound's replay), never a
    // second row — the same <Stream> while it is pending, the same refusal when refused, a hang-up once it has run.
    const sid = params.CallSid ?? null;
    const admission = await admitInbound(deps, route, { provider: 'twilio', from, to, carrierCallId: sid });
    if (!admission.ok && admission.replay && admission.reason === 'call_not_pending') return twiml(ctx, hangupTwiml());
    if (!admission.ok) {
      logger.info({ orgId: admission.orgId, reason: admission.reason }, 'inbound call refused');
      return twiml(ctx, refusalTwiml(admission.message));
    }
    twiml(ctx, streamTwiml(twilioStreamUrl(config, admission.callId), { token: streamToken(config, admission.callId), callId: admission.callId }));
  });

  // StatusCallback of inbound numbers: find our call by CallSid.
  router.post('/telephony/twilio/voice-status', async (ctx) => {
    const params = await formOf(ctx);
    const sid = params.CallSid ?? '';
    const callId = sid ? await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id::text FROM calls WHERE telephony_provider = 'twilio' AND carrier_call_id = ${sid} ORDER BY created_at DESC LIMIT 1`) : null;
    const call = callId ? await callCarrier(db, config, callId) : null;
    if (!call || !call.adapter.verifyWebhook(call.creds, { url: signedUrl(ctx), headers: ctx.headers, params })) {
      throw new HttpError(call ? 403 : 404, call ? 'Invalid Twilio signature' : 'Call not found');
    }
    await onStatus(call, params);
    ctx.status = 204;
  });
}
