// Every ended call gets its post-call workflow (recording, transcript, cost, debit, `call.completed`), even when the
// process that ended the row died before handing it off: media writes the row, sends `call.ended` and then
// signal-with-starts postCall-<callId>; the api does the same for calls that never connected. A SIGKILL between the
// row write and the hand-off would leave the row ended with no post-call at all: no debit, no `call.completed`, no
// recording, for good.
// The sweep: ended rows (not pre-pipeline refusals, tag `rejected`) without post_call_completed_at, ended more than
// MISSED_GRACE_S ago and less than an hour ago, whose ending process is gone or was the api (media_node null or with
// no fresh heartbeat), and whose postCall-<callId> workflow does not exist → handed off now. A hand-off that
// duplicates one still under way is harmless (same workflow id; every post-call activity is idempotent), so no
// claim is needed. `call.ended` is not sent again: the dead process may have sent it (at-most-once delivery).
import { WorkflowNotFoundError, type Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { startSweeper } from '../sweeper.ts';
import { postCallWorkflowId } from './post-call-names.ts';
import { handOffPostCall } from './unconnected.ts';

/** A hand-off normally follows the row write within milliseconds (media retries it for about a minute when Temporal is away). */
export const MISSED_GRACE_S = 30;

const missedRow = z.object({ id: z.string(), organization_id: z.string(), agent_uuid: z.string().nullable() });

export interface MissedDeps {
  db: Db;
  config: Config;
  logger: Logger;
  temporal?: TemporalClient | null;
}

/** Hand off the post-call of ended calls whose hand-off never happened; returns how many. */
export async function handOffMissedPostCalls(deps: MissedDeps, graceS = MISSED_GRACE_S): Promise<number> {
  const temporal = deps.temporal;
  if (!temporal) return 0;
  const rows = await deps.db.any(sql.type(missedRow)`
    SELECT id::text, organization_id::text, agent_uuid::text FROM calls
    WHERE post_call_completed_at IS NULL AND status IN ('completed', 'error') AND NOT ('rejected' = ANY(COALESCE(tags, '{}')))
      AND ended_at < now() - make_interval(secs => ${graceS}) AND ended_at > now() - interval '1 hour'
      AND (media_node IS NULL OR media_node NOT IN (
        SELECT node_id FROM media_nodes WHERE heartbeat_at > now() - make_interval(secs => ${deps.config.MEDIA_NODE_DEAD_AFTER_S})))
    ORDER BY ended_at LIMIT 100`);
  let n = 0;
  for (const row of rows) {
    try {
      await temporal.workflow.getHandle(postCallWorkflowId(row.id)).describe();
      continue; // started (running, or ended without marking the row): not ours to redo
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    deps.logger.warn({ callId: row.id }, 'ended call without a post-call workflow (its process died before the hand-off): handing it off');
    await handOffPostCall({ config: deps.config, logger: deps.logger, temporal }, row, 'call whose hand-off was lost');
    n += 1;
  }
  return n;
}

/** Run handOffMissedPostCalls every 15 s (api process; safe on every replica); stop() waits for a sweep in progress. */
export function startMissedPostCallSweeper(deps: MissedDeps): { stop(): Promise<void> } {
  return startSweeper(() => handOffMissedPostCalls(deps), 15_000, deps.logger, 'missed post-call sweep failed');
}
