// The end of one of our phone calls that a carrier status callback reports before the media stream connected
// (busy, no-answer, failed, canceled, or answered and gone): shared by the Twilio callbacks (carrier-webhooks.ts)
// and the generic carrier hooks (carrier-hooks.ts). The row is finished as never connected (only if still pending:
// exactly one caller wins), then `call.ended`, the post-call hand-off and the phone-call end hook follow.
import { finishUnconnected, onPhoneCallEnded, sendUnconnectedEnded } from '../../core/telephony/ended.ts';
import { callEndedSignal, callSearchAttributes, POST_CALL_WORKFLOW_TYPE, postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import type { ApiDeps } from '../deps.ts';

/** signal-with-start postCall-<callId> (also the api's orphan sweeper, api/main.ts). */
export async function handOffPostCall(deps: Pick<ApiDeps, 'temporal' | 'config' | 'logger'>, callId: string, orgId: string, agentId: string | null): Promise<void> {
  if (!deps.temporal) return;
  try {
    await deps.temporal.workflow.signalWithStart(POST_CALL_WORKFLOW_TYPE, {
      workflowId: postCallWorkflowId(callId),
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [{ callId }],
      signal: callEndedSignal,
      signalArgs: [{ callId }],
      typedSearchAttributes: callSearchAttributes({ organizationId: orgId, agentId, callId }),
    });
  } catch (err) {
    deps.logger.error({ err, callId }, 'post-call hand-off failed');
  }
}

/** Finish a still-pending call as never connected with `connectionStatus`, recording the carrier's status. */
export async function endUnconnectedCall(deps: ApiDeps, callId: string, connectionStatus: string, carrierStatus: { status: string; duration: unknown }): Promise<void> {
  const ended = await finishUnconnected(deps.db, callId, connectionStatus, { carrier_status: carrierStatus });
  if (!ended) return;
  void sendUnconnectedEnded(deps, ended).then(() => handOffPostCall(deps, ended.id, ended.organization_id, ended.agent_uuid));
  await onPhoneCallEnded(deps, ended.id).catch((err: unknown) => deps.logger.warn({ err, callId: ended.id }, 'phone-call end hook failed'));
}
