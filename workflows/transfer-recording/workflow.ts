// transferRecording-<callId>: fetch the carrier's recording of a transferred leg with retries over a window
// (default ~45 minutes, exponential backoff, heartbeats), re-host it, and send call.transfer_recording.completed
// or .failed (no_recording | download_failed | storage_failed), always after call.completed.
import { ActivityFailure, ApplicationFailure, proxyActivities, log } from '@temporalio/workflow';
import type { TransferRecordingActivities } from '../../activities/transfer-recording.ts';
import { DEFAULT_TRANSFER_RETRY, type TransferRecordingInput, type TransferRecordingOutcome } from './messages.ts';

const control = proxyActivities<TransferRecordingActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});

export async function transferRecordingWorkflow(input: TransferRecordingInput): Promise<TransferRecordingOutcome> {
  const retry = { ...DEFAULT_TRANSFER_RETRY, ...input.retry };
  const waitS = input.waitForCompletedS ?? 3600;
  let outcome: TransferRecordingOutcome;

  if (!input.recording?.url) {
    outcome = { event: 'call.transfer_recording.failed', reason: 'no_recording' };
  } else {
    const download = proxyActivities<TransferRecordingActivities>({
      scheduleToCloseTimeout: retry.windowS * 1000,
      startToCloseTimeout: Math.min(retry.windowS, 15 * 60) * 1000,
      heartbeatTimeout: 60_000,
      retry: {
        initialInterval: retry.initialIntervalS * 1000,
        backoffCoefficient: 2,
        maximumInterval: retry.maximumIntervalS * 1000,
        nonRetryableErrorTypes: ['NoRecording', 'StorageFailed', 'DownloadRejected', 'CallNotFound'],
      },
    });
    try {
      const stored = await download.rehostTransferRecording({
        callId: input.callId,
        url: input.recording.url,
        headers: input.recording.headers,
        durationSeconds: input.recording.durationSeconds ?? null,
      });
      outcome = { event: 'call.transfer_recording.completed', recordingUrl: stored.recordingUrl, durationSeconds: stored.durationSeconds };
    } catch (err) {
      const type = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.type : null;
      if (type === 'CallNotFound') throw err;
      const reason = type === 'NoRecording' ? 'no_recording' : type === 'StorageFailed' ? 'storage_failed' : 'download_failed';
      log.warn('transfer recording not re-hosted', { callId: input.callId, reason, error: err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err) });
      outcome = { event: 'call.transfer_recording.failed', reason };
    }
  }

  await proxyActivities<TransferRecordingActivities>({
    startToCloseTimeout: (waitS + 60) * 1000,
    heartbeatTimeout: 30_000,
    retry: { maximumAttempts: 5 },
  }).awaitCallCompleted({ callId: input.callId, timeoutS: waitS });
  await control.sendTransferRecordingEvent({ callId: input.callId, telephonyProvider: input.telephonyProvider, transfer: input.transfer, outcome });
  return outcome;
}
