// Start of the transfer-recording workflow (`transferRecording-<callId>`) from a carrier's recording callback of a
// transferred leg (the `recording` webhook, webhooks.ts). One workflow per call: a repeated callback (a carrier retry, a second
// recording event) finds it started and changes nothing, so exactly one call.transfer_recording.* event is sent.
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import type { CallCarrier } from '../../../core/telephony/store.ts';
import { callSearchAttributes } from '../../../workflows/post-call/messages.ts';
import {
  TRANSFER_RECORDING_WORKFLOW_TYPE, transferRecordingWorkflowId, type TransferRecordingInput,
} from '../../../workflows/transfer-recording/messages.ts';
import type { ApiDeps } from '../../deps.ts';

export async function startTransferRecording(
  deps: ApiDeps,
  call: CallCarrier,
  leg: { carrierCallId: string | null; recording: TransferRecordingInput['recording'] },
): Promise<void> {
  const { db, config } = deps;
  if (!deps.temporal) throw new HttpError(503, 'Temporal is not configured');
  const info = await db.maybeOne(sql.type(z.object({ transfer: z.unknown(), agent_uuid: z.string().nullable() }))`
    SELECT logs->'transfer' AS transfer, agent_uuid::text FROM calls WHERE id = ${call.callId}`);
  const t = (info?.transfer ?? {}) as { transferId?: unknown; destination?: unknown };
  const input: TransferRecordingInput = {
    callId: call.callId,
    telephonyProvider: call.adapter.id,
    transfer: {
      transferId: typeof t.transferId === 'string' ? t.transferId : null,
      destination: typeof t.destination === 'string' ? t.destination : null,
      carrierCallId: leg.carrierCallId,
    },
    recording: leg.recording,
  };
  try {
    await deps.temporal.workflow.start(TRANSFER_RECORDING_WORKFLOW_TYPE, {
      workflowId: transferRecordingWorkflowId(call.callId),
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [input],
      typedSearchAttributes: callSearchAttributes({ organizationId: call.orgId, agentId: info?.agent_uuid ?? null, callId: call.callId }),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
