// Pending web calls that nobody joins expire. A WebSocket or WebRTC call still `pending` CALL_JOIN_TIMEOUT_S
// (default 60 s) after its row was created ends with status=error, connectionStatus=no_participant,
// endedReason=null, endedAt=now, tag not_connected — which frees its concurrency slot — and follows the
// never-connected rule of core/calls/unconnected.ts: `call.ended` (no `call.started` was ever sent), then
// `call.completed` from the post-call workflow.
// Two paths, both safe with any number of api replicas (each is one UPDATE ... WHERE status='pending', so a row
// expires exactly once and a call that the media side marks `active` first is never touched): a periodic sweep by
// every api process (startExpirySweeper), one transaction per organization under the concurrency gate's advisory
// lock; and a lazy check inside the concurrency gate, so an expired row never blocks the ceiling between sweeps.
import { z } from 'zod';
import { sql } from '../db/pool.ts';
import { startSweeper } from '../sweeper.ts';
import { announceNeverConnected, neverConnectedRow, UNCONNECTED_RETURNING, type NeverConnected, type UnconnectedDeps } from './unconnected.ts';

export type ExpiredCall = NeverConnected;

/** The UPDATE that expires abandoned pending web calls (of one organization, or all). */
export function expireSql(timeoutS: number, orgId?: string) {
  return sql.type(neverConnectedRow)`
    UPDATE calls
    SET status = 'error', connection_status = 'no_participant', ended_reason = NULL, ended_at = now(), updated_at = now(),
        tags = CASE WHEN 'not_connected' = ANY(tags) THEN tags ELSE array_append(tags, 'not_connected') END
    WHERE status = 'pending' AND transport IN ('websocket', 'webrtc', 'web')
      AND created_at < now() - make_interval(secs => ${timeoutS})
      ${orgId ? sql.fragment`AND organization_id = ${orgId}` : sql.fragment``}
    RETURNING ${UNCONNECTED_RETURNING}`;
}

/** The never-connected rule for expired calls: `call.ended`, then `call.completed` (core/calls/unconnected.ts). */
export async function notifyExpired(deps: UnconnectedDeps, calls: readonly ExpiredCall[]): Promise<void> {
  await announceNeverConnected(deps, calls);
}

/** The advisory lock the concurrency gate holds while it counts and inserts (one per organization). */
export function orgCallsLock(orgId: string) {
  return sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`calls.concurrency:${orgId}`}, 0))`;
}

/**
 * Expire abandoned pending web calls now (of one organization, or of all); returns the expired rows. Each
 * organization is handled in its own transaction under the same lock the concurrency gate takes, so the sweep and
 * call starts of an organization never interleave their counter updates.
 */
export async function expirePendingCalls(deps: UnconnectedDeps, orgId?: string): Promise<readonly ExpiredCall[]> {
  const timeoutS = deps.config.CALL_JOIN_TIMEOUT_S;
  const orgs = orgId ? [orgId] : await deps.db.anyFirst(sql.type(z.object({ organization_id: z.string() }))`
    SELECT DISTINCT organization_id FROM calls
    WHERE status = 'pending' AND transport IN ('websocket', 'webrtc', 'web') AND created_at < now() - make_interval(secs => ${timeoutS})`);
  const expired: ExpiredCall[] = [];
  for (const org of orgs) {
    const rows = await deps.db.transaction(async (tx) => {
      await tx.query(orgCallsLock(org));
      return tx.any(expireSql(timeoutS, org));
    });
    expired.push(...rows);
  }
  if (expired.length) {
    deps.logger.info({ count: expired.length }, 'pending calls expired (no participant joined)');
    await notifyExpired(deps, expired);
  }
  return expired;
}

/** Sweep interval: a quarter of the join timeout, between 1 and 15 seconds. */
export function sweepIntervalMs(timeoutS: number): number {
  return Math.min(15_000, Math.max(1_000, Math.round((timeoutS * 1000) / 4)));
}

/** Start the periodic sweep; stop() waits for a sweep in progress. */
export function startExpirySweeper(deps: UnconnectedDeps): { stop(): Promise<void> } {
  return startSweeper(() => expirePendingCalls(deps), sweepIntervalMs(deps.config.CALL_JOIN_TIMEOUT_S), deps.logger, 'pending-call expiry sweep failed');
}
