// Names of the post-call workflow's messages, shared by workflows/post-call/messages.ts (which defines the typed
// handles) and core/calls/unconnected.ts (which hands never-connected calls to it from any process), like
// core/campaigns/names.ts for campaigns. Pure: no I/O imports.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export const POST_CALL_WORKFLOW_TYPE = 'postCallWorkflow';
export const postCallWorkflowId = (callId: string) => `postCall-${callId}`;
/** Name of the signal media (or the never-connected rule) sends when the call has ended and its row is written. */
export const CALL_ENDED_SIGNAL = 'callEnded';

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
