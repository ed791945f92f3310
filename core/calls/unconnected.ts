// The one rule for a call that ended without ever connecting (busy, no-answer, rejected, canceled, dial failed,
// stale pending phone call, no participant on a web call), taken from the spec's lifecycle-webhook table:
//   1. `call.ended` directly (no `call.started`), endedReason null, the reason in connectionStatus, duration 0;
//   2. then the post-call workflow (postCall-<callId>), which sends `call.completed` like for any ended call, with
//      endedReason null, the same connectionStatus, recordingUrl/transcript/transcriptUrl/summary/usage null.
// Every path that finishes a row as never connected calls announceNeverConnected once, after its UPDATE … WHERE
// status=<live> won (so exactly one caller announces). Pre-pipeline refusals (rejected rows) are not calls that
// ended: they get no webhook at all, the HTTP error is their answer.
import type { Client as TemporalClient } from '@temporalio/client';
import pRetry from 'p-retry';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { isTemporalUnreachable } from '../temporal.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { recordWebhookResult, sendWebhook } from '../webhook.ts';
import { CALL_ENDED_SIGNAL, callSearchAttributes, POST_CALL_WORKFLOW_TYPE, postCallWorkflowId } from './post-call-names.ts';

export interface UnconnectedDeps {
  db: Db;
  config: Config;
  logger: Logger;
  /** Absent or null: no post-call workflow, so no `call.completed` (logged). */
  temporal?: TemporalClient | null;
}

/** The columns every never-connected UPDATE returns (`UNCONNECTED_RETURNING`). */
export const neverConnectedRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  connection_status: z.string().nullable(),
  ended_at: z.string(),
  webhook: z.unknown(),
});
export type NeverConnected = z.infer<typeof neverConnectedRow>;
export const UNCONNECTED_RETURNING = sql.fragment`id::text, organization_id::text, agent_id, agent_uuid::text, connection_status, ended_at, config_snapshot->'webhook' AS webhook`;

const webhookShape = z.object({ url: z.string().min(1), headers: z.record(z.string(), z.string()).nullish() });

/** Step 1: `call.ended` of a never-connected call (only when the call's agent has a webhook). */
export async function sendNeverConnectedEnded(deps: UnconnectedDeps, row: NeverConnected): Promise<void> {
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
    deps.logger.warn({ err, callId: row.id }, 'call.ended for a never-connected call failed');
  }
}

/** signal-with-start postCall-<callId> (it sends `call.completed`); also the api's orphan sweeper (api/main.ts). */
export async function handOffPostCall(
  deps: Pick<UnconnectedDeps, 'temporal' | 'config' | 'logger'>,
  row: Pick<NeverConnected, 'id' | 'organization_id' | 'agent_uuid'>,
  what = 'call',
  /** how to run the signal (media retries it with backoff while Temporal is unreachable) */
  attempt: <T>(signal: () => Promise<T>) => Promise<T> = (signal) => signal(),
): Promise<void> {
  if (!deps.temporal) {
    deps.logger.warn({ callId: row.id }, `no Temporal client: call.completed of a ${what} skipped`);
    return;
  }
  const temporal = deps.temporal;
  const signal = () => temporal.workflow.signalWithStart(POST_CALL_WORKFLOW_TYPE, {
    workflowId: postCallWorkflowId(row.id),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [{ callId: row.id }],
    signal: CALL_ENDED_SIGNAL,
    signalArgs: [{ callId: row.id }],
    typedSearchAttributes: callSearchAttributes({ organizationId: row.organization_id, agentId: row.agent_uuid, callId: row.id }),
  });
  try {
    await attempt(signal);
  } catch (err) {
    if (isTemporalUnreachable(err)) {
      // Temporal down or restarting: the hand-off goes on in the background (the caller — a carrier webhook, a
      // sweeper — is not held up) until the server answers, so the call still gets its post-call once it is back.
      deps.logger.warn({ err, callId: row.id }, `post-call hand-off of a ${what}: Temporal unreachable, retrying until it is back`);
      void pRetry(signal, { ...UNREACHABLE_RETRY, shouldRetry: ({ error }) => isTemporalUnreachable(error) })
        .catch((e: unknown) => deps.logger.error({ err: e, callId: row.id }, `post-call hand-off of a ${what} failed`));
      return;
    }
    deps.logger.error({ err, callId: row.id }, `post-call hand-off of a ${what} failed`);
  }
}

/** Backoff of a hand-off while Temporal is unreachable: 1 s doubling to 15 s, for as long as the process lives. */
const UNREACHABLE_RETRY = { retries: Number.POSITIVE_INFINITY, factor: 2, minTimeout: 1000, maxTimeout: 15_000, randomize: true } as const;

/** Step 2 of the rule: the post-call hand-off of a never-connected call. */
export const handOffNeverConnected = (deps: UnconnectedDeps, row: Pick<NeverConnected, 'id' | 'organization_id' | 'agent_uuid'>) =>
  handOffPostCall(deps, row, 'never-connected call');

/** The whole rule: `call.ended`, then the hand-off that produces `call.completed` (in that order). */
export async function announceNeverConnected(deps: UnconnectedDeps, rows: readonly NeverConnected[]): Promise<void> {
  await Promise.all(rows.map(async (row) => {
    await sendNeverConnectedEnded(deps, row);
    await handOffNeverConnected(deps, row);
  }));
}
