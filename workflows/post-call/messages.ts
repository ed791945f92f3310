// Messages of the post-call workflow (`postCall-<callId>`), imported by callers (media signal-with-starts it).
import { defineSignal } from '@temporalio/workflow';
import { CALL_ENDED_SIGNAL } from '../../core/calls/post-call-names.ts';

export interface PostCallInput {
  callId: string;
}

/** Sent by media when the call has ended and its row + spool recording are written. */
export const callEndedSignal = defineSignal<[{ callId: string }]>(CALL_ENDED_SIGNAL);

/** Where media leaves the mixed call recording for the workflow to publish. */
export const spoolRecordingKey = (callId: string) => `spool/recordings/${callId}.wav`;

// The names (workflow type, id, search attributes) live in core so core/calls/unconnected.ts can use them too.
export { AgentIdKey, CallIdKey, callSearchAttributes, OrganizationIdKey, POST_CALL_WORKFLOW_TYPE, postCallWorkflowId } from '../../core/calls/post-call-names.ts';
