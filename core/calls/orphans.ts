// No row left behind: calls still `active` whose pipeline is gone end as the spec's "pipeline crashes after connect"
// (status error, endedReason pipeline_error), which frees their concurrency slot, and get `call.ended` once, the
// post-call hand-off (→ call.completed, debit) and, for phone calls, the campaign's outcome signal.
// Two scopes, both one UPDATE … WHERE status = 'active' RETURNING (so with any number of media nodes and api
// replicas sweeping at once a row ends exactly once and exactly one process sends its call.ended):
//  - dead nodes: rows whose media node has no fresh heartbeat in media_nodes (MEDIA_NODE_DEAD_AFTER_S), and never
//    within MEDIA_NODE_DEAD_AFTER_S of a PostgreSQL (re)start (no node could heartbeat while it was down). Swept by
//    every media node (media/server.ts) and by the api (startOrphanSweeper in api/main.ts), so they end even when no
//    media node is left running;
//  - a live node's own rows that no session of that process owns any more (the node passes the ids it still owns;
//    a grace period covers the moment between a claim and the runner taking the call).
import type { Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { startSweeper } from '../sweeper.ts';
import { onPhoneCallEnded } from '../telephony/ended.ts';
import { recordWebhookResult, sendWebhook } from '../webhook.ts';

export const orphanRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  transport: z.string(),
  media_node: z.string().nullable(),
  ended_at: z.string(),
  duration_seconds: z.number().nullable(),
  webhook: z.unknown(),
});
export type OrphanedCall = z.infer<typeof orphanRow>;

/** Seconds a claimed row may go without a session of its node before the node's own reconcile ends it. */
export const OWN_ROW_GRACE_S = 30;

export type OrphanScope =
  /** rows of nodes with no heartbeat for deadAfterS (never the sweeping node's own: exceptNode) */
  | { deadAfterS: number; exceptNode?: string }
  /** rows of this node that none of its sessions owns */
  | { node: string; owned: readonly string[]; graceS?: number };

/** End the orphaned rows of a scope; returns them (already ended) for notifyOrphans. */
export async function endOrphanedCalls(db: Db, scope: OrphanScope): Promise<readonly OrphanedCall[]> {
  const where = 'node' in scope
    ? sql.fragment`media_node = ${scope.node} AND NOT (id::text = ANY(${sql.array([...scope.owned], 'text')}))
        AND started_at < now() - make_interval(secs => ${scope.graceS ?? OWN_ROW_GRACE_S})`
    : sql.fragment`media_node IS NOT NULL ${scope.exceptNode ? sql.fragment`AND media_node <> ${scope.exceptNode}` : sql.fragment``}
        AND media_node NOT IN (SELECT node_id FROM media_nodes WHERE heartbeat_at > now() - make_interval(secs => ${scope.deadAfterS}))
        AND pg_postmaster_start_time() < now() - make_interval(secs => ${scope.deadAfterS})`;
  return db.any(sql.type(orphanRow)`
    UPDATE calls SET status = 'error', ended_reason = 'pipeline_error', connection_status = 'completed', ended_at = now(),
      duration_seconds = round(EXTRACT(EPOCH FROM now() - COALESCE(started_at, now()))::numeric, 2),
      logs = logs || jsonb_build_object('reconciled', jsonb_build_object('media_node', media_node, 'at', now(),
        'why', ${'node' in scope ? 'no live session on its media node' : 'media node gone'}::text)),
      updated_at = now()
    WHERE status = 'active' AND ${where}
    RETURNING id::text, organization_id::text, agent_id, agent_uuid::text, transport, media_node, ended_at, duration_seconds,
      config_snapshot->'webhook' AS webhook`);
}

const webhookShape = z.union([
  z.string().min(1).transform((url) => ({ url, headers: {} as Record<string, string> })),
  z.object({ url: z.string().min(1), headers: z.record(z.string(), z.string()).nullish() }),
]);

export interface OrphanDeps {
  db: Db;
  config: Config;
  logger: Logger;
  temporal?: TemporalClient | null;
}

/** call.ended (once: only the process whose UPDATE ended the row gets it), post-call hand-off, campaign signal. */
export async function notifyOrphans(deps: OrphanDeps, rows: readonly OrphanedCall[], handOff: (row: OrphanedCall) => Promise<void>): Promise<void> {
  const policy = policyFromConfig(deps.config);
  await Promise.all(rows.map(async (row) => {
    deps.logger.warn({ callId: row.id, mediaNode: row.media_node }, 'reconciled a call left active without a live pipeline');
    const hook = webhookShape.safeParse(row.webhook);
    if (hook.success) {
      try {
        const secret = row.agent_id === null ? null : await deps.db.maybeOneFirst(sql.type(z.object({ webhook_secret: z.string().nullable() }))`
          SELECT webhook_secret FROM agents WHERE id = ${row.agent_id}`);
        const payload = {
          event: 'call.ended', callId: row.id, agentId: row.agent_uuid, endedReason: 'pipeline_error', connectionStatus: 'completed',
          duration: Math.round((row.duration_seconds ?? 0) * 100) / 100, endedAt: row.ended_at,
        };
        const result = await sendWebhook({ url: hook.data.url, headers: hook.data.headers ?? {}, secret, payload, policy, logger: deps.logger });
        await recordWebhookResult(deps.db, row.id, 'call.ended', result);
      } catch (err) {
        deps.logger.warn({ err, callId: row.id }, 'call.ended of a reconciled call failed');
      }
    }
    await handOff(row).catch((err: unknown) => deps.logger.error({ err, callId: row.id }, 'post-call hand-off of a reconciled call failed'));
    if (row.transport === 'outbound' || row.transport === 'inbound') {
      await onPhoneCallEnded(deps, row.id).catch((err: unknown) => deps.logger.warn({ err, callId: row.id }, 'phone-call end hook failed'));
    }
  }));
}

/**
 * Guard for dead-node sweeps after a database outage: while the database was unreachable no node could heartbeat, so
 * every node looks dead when it comes back. After anything of the sweep failed on the database, dead-node sweeps
 * are skipped for `quietMs` (MEDIA_NODE_DEAD_AFTER_S) from the last failure: the nodes still alive get the same
 * window to report again as they have in normal running. While skipping, `probe` (a cheap query, optional) notes a
 * database that is still away, so the window counts from the database's return, however long the outage.
 * (Skipping only the one run after a failure is not enough: during an outage runs alternate failed / skipped, and
 * a run landing just after the restart would end the calls of live nodes — `test/faults/postgres-kill.test.ts`.)
 */
export function afterOutageGuard(quietMs: number, now: () => number = Date.now) {
  let failedAt = Number.NEGATIVE_INFINITY;
  const fail = () => { failedAt = now(); };
  return {
    async run<T>(fn: () => Promise<T>, probe?: () => Promise<unknown>): Promise<T | null> {
      if (now() - failedAt < quietMs) {
        await probe?.().catch(fail);
        return null;
      }
      try {
        return await fn();
      } catch (err) {
        fail();
        throw err;
      }
    },
    /** Something else of the same periodic run failed on the database. */
    fail,
  };
}

/** The api's sweep of dead media nodes' rows (every replica may run it); stop() waits for a sweep in progress. */
export function startOrphanSweeper(deps: OrphanDeps, handOff: (row: OrphanedCall) => Promise<void>): { stop(): Promise<void> } {
  const deadAfterS = deps.config.MEDIA_NODE_DEAD_AFTER_S;
  const guard = afterOutageGuard(deadAfterS * 1000);
  const run = () => guard.run(async () => notifyOrphans(deps, await endOrphanedCalls(deps.db, { deadAfterS }), handOff),
    () => deps.db.query(sql.unsafe`SELECT 1`));
  return startSweeper(run, Math.min(30_000, (deadAfterS * 1000) / 2), deps.logger, 'orphaned-call sweep failed');
}
