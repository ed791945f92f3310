// The end of a phone call that never connected (busy, no-answer, failed, canceled, or answered and gone before the
// media stream connected): status error, the reason in connectionStatus, endedReason null, tags not_connected and
// telephony_<reason>, and `call.ended` without `call.started` (as core/calls/expiry.ts does for web calls).
// `onPhoneCallEnded` is the hook every phone call passes through once its row is final.
import type { Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { startSweeper } from '../sweeper.ts';
import { recordWebhookResult, sendWebhook } from '../webhook.ts';
import { notifyCampaignOfCall } from '../campaigns/signal.ts';

export interface PhoneEndDeps {
  db: Db;
  config: Config;
  logger: Logger;
  temporal?: TemporalClient | null;
}

const endedRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  campaign_id: z.number().nullable(),
  connection_status: z.string().nullable(),
  ended_at: z.string(),
  webhook: z.unknown(),
});
export type UnconnectedEnd = z.infer<typeof endedRow>;

/**
 * Finish a still-pending phone call as never connected. Returns null when the row is not pending any more (the
 * media stream connected first, or another callback already ended it): exactly one caller wins.
 */
export async function finishUnconnected(
  db: Db,
  callId: string,
  connectionStatus: string,
  logs: Record<string, unknown> = {},
): Promise<UnconnectedEnd | null> {
  const tag = connectionStatus.startsWith('telephony_') ? connectionStatus : `telephony_${connectionStatus}`;
  return db.maybeOne(sql.type(endedRow)`
    UPDATE calls SET status = 'error', connection_status = ${connectionStatus}, ended_reason = NULL, started_at = NULL,
      ended_at = now(), duration_seconds = NULL, updated_at = now(),
      tags = (SELECT array_agg(DISTINCT t) FROM unnest(tags || ARRAY['not_connected', ${tag}]::text[]) AS t),
      logs = logs || ${JSON.stringify(logs)}::jsonb
    WHERE id = ${callId} AND status = 'pending' AND transport IN ('outbound', 'inbound')
    RETURNING id::text, organization_id::text, agent_id, agent_uuid::text, campaign_id, connection_status, ended_at, config_snapshot->'webhook' AS webhook`);
}

const webhookShape = z.object({ url: z.string().min(1), headers: z.record(z.string(), z.string()).nullish() });

/** `call.ended` of a never-connected call: endedReason null, the reason in connectionStatus, duration 0. */
export async function sendUnconnectedEnded(deps: PhoneEndDeps, row: UnconnectedEnd): Promise<void> {
  const hook = webhookShape.safeParse(row.webhook);
  if (!hook.success) return;
  try {
    const secret = row.agent_id === null ? null : await deps.db.maybeOneFirst(sql.type(z.object({ webhook_secret: z.string().nullable() }))`
      SELECT webhook_secret FROM agents WHERE id = ${row.agent_id}`);
    const payload = {
      event: 'call.ended', callId: row.id, agentId: row.agent_uuid, endedReason: null,
      connectionStatus: row.connection_status, duration: 0, endedAt: row.ended_at,
    };
    const result = await sendWebhook({ url: hook.data.url, headers: hook.data.headers ?? {}, secret, payload, policy: policyFromConfig(deps.config), logger: deps.logger });
    await recordWebhookResult(deps.db, row.id, 'call.ended', result);
  } catch (err) {
    deps.logger.warn({ err, callId: row.id }, 'call.ended for an unconnected phone call failed');
  }
}

/**
 * Called once for every phone call whose row is final (connected calls: by the media side after finishing the row;
 * never-connected and dial-failed calls: by the api). Hook point: campaigns signal their workflow from here.
 */
export async function onPhoneCallEnded(deps: PhoneEndDeps, callId: string): Promise<void> {
  deps.logger.debug({ callId }, 'phone call ended');
  // A campaign call: its workflow learns the outcome (duplicates are dropped there by call id).
  await notifyCampaignOfCall({ db: deps.db, temporal: deps.temporal ?? null, logger: deps.logger }, callId)
    .catch((err: unknown) => deps.logger.warn({ err, callId }, 'campaign outcome signal failed'));
}

const staleRow = z.object({ id: z.string(), telephony_provider: z.string().nullable(), transport: z.string() });

/**
 * Phone calls still `pending` PHONE_PENDING_TIMEOUT_S after creation never connected and no carrier status will
 * end them (Smartflo reports nothing for an unanswered click-to-call; a Twilio callback may be lost when PUBLIC_URL
 * is unreachable). They end like any never-connected call: Smartflo outbound as `no_answer`, others as
 * `telephony_no_status`. Each row is finished by one UPDATE … WHERE status='pending', so replicas never double up.
 */
export async function expireStalePhoneCalls(deps: PhoneEndDeps): Promise<number> {
  const stale = await deps.db.any(sql.type(staleRow)`
    SELECT id::text, telephony_provider, transport FROM calls
    WHERE status = 'pending' AND transport IN ('outbound', 'inbound')
      AND created_at < now() - make_interval(secs => ${deps.config.PHONE_PENDING_TIMEOUT_S})
    LIMIT 500`);
  let n = 0;
  for (const c of stale) {
    const reason = c.telephony_provider === 'smartflo' && c.transport === 'outbound' ? 'no_answer' : 'telephony_no_status';
    const ended = await finishUnconnected(deps.db, c.id, reason, { not_started: `no media stream within ${deps.config.PHONE_PENDING_TIMEOUT_S} s` });
    if (!ended) continue;
    n += 1;
    await sendUnconnectedEnded(deps, ended);
    await onPhoneCallEnded(deps, ended.id).catch((err: unknown) => deps.logger.warn({ err, callId: ended.id }, 'phone-call end hook failed'));
  }
  if (n) deps.logger.info({ count: n }, 'stale pending phone calls ended');
  return n;
}

/** Run expireStalePhoneCalls every 15 s (api process); stop() waits for a sweep in progress. */
export function startStalePhoneCallSweeper(deps: PhoneEndDeps): { stop(): Promise<void> } {
  return startSweeper(() => expireStalePhoneCalls(deps), 15_000, deps.logger, 'stale phone-call sweep failed');
}
