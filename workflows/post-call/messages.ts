// Messages of the post-call workflow (`postCall-<callId>`), imported by callers (media signal-with-starts it).
import { defineSignal } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export interface PostCallInput {
  callId: string;
}

/** Sent by media when the call has ended and its row + spool recording are written. */
export const callEndedSignal = defineSignal<[{ callId: string }]>('callEnded');

export const POST_CALL_WORKFLOW_TYPE = 'postCallWorkflow';
export const postCallWorkflowId = (callId: string) => `postCall-${callId}`;
/** Where media leaves the mixed call recording for the workflow to publish. */
export const spoolRecordingKey = (callId: string) => `spool/recordings/${callId}.wav`;

/** Search attributes registered on the dev server (scripts/infra.ts): set them when starting the workflow. */
export const OrganizationIdKey = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const AgentIdKey = defineSearchAttributeKey('AgentId', SearchAttributeType.KEYWORD);
export const CallIdKey = defineSearchAttributeKey('CallId', SearchAttributeType.KEYWORD);

/** `typedSearchAttributes` for signalWithStart/start of postCall and transferRecording. agentId null for inline agents. */
export function callSearchAttributes(a: { organizationId: string; agentId: string | null; callId: string }): SearchAttributePair[] {
  return [
    { key: OrganizationIdKey, value: a.organizationId },
    ...(a.agentId ? [{ key: AgentIdKey, value: a.agentId }] : []),
    { key: CallIdKey, value: a.callId },
  ];
}
