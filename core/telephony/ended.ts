// The end of a phone call that never connected (busy, no-answer, failed, canceled, or answered and gone before the
// media stream connected): status error, the reason in connectionStatus, endedReason null, tags not_connected and
// telephony_<reason>, then the never-connected rule of core/calls/unconnected.ts (`call.ended` without
// `call.started`, then `call.completed` from the post-call workflow), as for web calls nobody joined.
// `onPhoneCallEnded` is the hook every phone call passes through once its row is final.
import type { Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { startSweeper } from '../sweeper.ts';
import { announceNeverConnected, neverConnectedRow, UNCONNECTED_RETURNING } from '../calls/unconnected.ts';
import { notifyCampaignOfCall } from '../campaigns/signal.ts';

export interface PhoneEndDeps {
  db: Db;
  config: Config;
  logger: Logger;
  temporal?: TemporalClient | null;
}

const endedRow = neverConnectedRow.extend({ campaign_id: z.number().nullable() });
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
    RETURNING ${UNCONNECTED_RETURNING}, campaign_id`);
}

/** The never-connected rule (core/calls/unconnected.ts): `call.ended`, then `call.completed` via the post-call workflow. */
export async function announceUnconnected(deps: PhoneEndDeps, row: UnconnectedEnd): Promise<void> {
  await announceNeverConnected(deps, [row]);
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
    await announceUnconnected(deps, ended);
    await onPhoneCallEnded(deps, ended.id).catch((err: unknown) => deps.logger.warn({ err, callId: ended.id }, 'phone-call end hook failed'));
  }
  if (n) deps.logger.info({ count: n }, 'stale pending phone calls ended');
  return n;
}

/** Run expireStalePhoneCalls every 15 s (api process); stop() waits for a sweep in progress. */
export function startStalePhoneCallSweeper(deps: PhoneEndDeps): { stop(): Promise<void> } {
  return startSweeper(() => expireStalePhoneCalls(deps), 15_000, deps.logger, 'stale phone-call sweep failed');
}
