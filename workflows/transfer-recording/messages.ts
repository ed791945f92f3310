// Input and ids of the transfer-recording workflow (`transferRecording-<callId>`), started by the telephony side
// when a transferred leg was recorded by the carrier.

export interface TransferInfo {
  transferId: string | null;
  /** Number or SIP address. */
  destination: string | null;
  /** The transferred leg's carrier id. */
  carrierCallId: string | null;
}

export interface TransferRecordingInput {
  callId: string;
  telephonyProvider: string | null;
  transfer: TransferInfo;
  /**
   * Where the carrier's file is. null (or url null) = the carrier produced no recording → `no_recording`.
   * `headers` go with the download (e.g. a carrier Basic auth); note they are stored in the workflow history.
   */
  recording: { url: string | null; headers?: Record<string, string>; durationSeconds?: number | null } | null;
  /** Download retry window; defaults: 45 minutes, 10 s first retry, 5 minutes between retries at most. */
  retry?: { windowS?: number; initialIntervalS?: number; maximumIntervalS?: number };
  /** How long to wait for call.completed before sending the transfer event anyway (default 1 hour). */
  waitForCompletedS?: number;
}

export type TransferRecordingOutcome =
  | { event: 'call.transfer_recording.completed'; recordingUrl: string; durationSeconds: number | null }
  | { event: 'call.transfer_recording.failed'; reason: 'no_recording' | 'download_failed' | 'storage_failed' };

export const TRANSFER_RECORDING_WORKFLOW_TYPE = 'transferRecordingWorkflow';
export const transferRecordingWorkflowId = (callId: string) => `transferRecording-${callId}`;
export const DEFAULT_TRANSFER_RETRY = { windowS: 45 * 60, initialIntervalS: 10, maximumIntervalS: 300 };
