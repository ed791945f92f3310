// How the rest of the service tells a campaign workflow that one of its calls ended. The message names and payload
// types are the ones workflows/campaign/messages.ts defines its handlers with (core cannot import workflows/).
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';

import { CALL_OUTCOME_SIGNAL, campaignWorkflowId, type CallOutcomeSignal } from './names.ts';

export { CALL_OUTCOME_SIGNAL, campaignWorkflowId, type CallOutcomeSignal };

/** Signals `campaign-<id>` that a call ended. A workflow that is gone (completed, never started) is not an error. */
export async function signalCampaignOutcome(temporal: Client | null, o: CallOutcomeSignal & { campaignId: number }, logger?: Logger): Promise<boolean> {
  if (!temporal) return false;
  const { campaignId, ...payload } = o;
  try {
    await temporal.workflow.getHandle(campaignWorkflowId(campaignId)).signal(CALL_OUTCOME_SIGNAL, payload);
    return true;
  } catch (err) {
    const name = (err as { name?: string }).name;
    if (name === 'WorkflowNotFoundError') return false;
    logger?.warn({ err, campaignId, callId: o.callId }, 'campaign outcome signal failed');
    return false;
  }
}

const endedRow = z.object({
  campaign_id: z.number().nullable(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  duration_seconds: z.number().nullable(),
});

/**
 * Reads a finished call row and, when it belongs to a campaign, signals the campaign's workflow. Called wherever a
 * call row becomes final (never-connected phone calls in core/telephony, connected calls on the media side).
 */
export async function notifyCampaignOfCall(deps: { db: Db; temporal: Client | null; logger?: Logger }, callId: string): Promise<boolean> {
  const row = await deps.db.maybeOne(sql.type(endedRow)`
    SELECT campaign_id, status, connection_status, ended_reason, duration_seconds FROM calls WHERE id = ${callId}`);
  if (!row || row.campaign_id === null || (row.status !== 'completed' && row.status !== 'error')) return false;
  return signalCampaignOutcome(deps.temporal, {
    campaignId: row.campaign_id,
    callId,
    status: row.status,
    connectionStatus: row.connection_status,
    endedReason: row.ended_reason,
    durationSeconds: row.duration_seconds,
  }, deps.logger);
}
