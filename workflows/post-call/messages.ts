// Messages of the post-call workflow (`postCall-<callId>`), imported by callers (media signal-with-starts it).
import { defineSignal } from '@temporalio/workflow';

export interface PostCallInput {
  callId: string;
}

/** Sent by media when the call has ended and its row + spool recording are written. */
export const callEndedSignal = defineSignal<[{ callId: string }]>('callEnded');

export const POST_CALL_WORKFLOW_TYPE = 'postCallWorkflow';
export const postCallWorkflowId = (callId: string) => `postCall-${callId}`;
/** Where media leaves the mixed call recording for the workflow to publish. */
export const spoolRecordingKey = (callId: string) => `spool/recordings/${callId}.wav`;
