// postCall-<callId>: after a call ends, publish its recording, store the transcript, price it, optionally summarise
// it, debit the wallet, then send call.completed. Recording, transcript, cost and summary run in parallel and fail
// independently (a failed part leaves its field null and is noted on calls.logs.post_call_errors); the debit and
// the event come after all four. Deterministic: only activity calls and handlers here.
import { ActivityFailure, ApplicationFailure, log, proxyActivities, setHandler } from '@temporalio/workflow';
import type { PostCallActivities } from '../../activities/post-call.ts';
import { callEndedSignal, type PostCallInput } from './messages.ts';

const db = proxyActivities<PostCallActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});
const upload = proxyActivities<PostCallActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 4, nonRetryableErrorTypes: ['InvalidRecording', 'CallNotFound'] },
});
const llm = proxyActivities<PostCallActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 3, nonRetryableErrorTypes: ['SummaryRejected', 'SummaryUnavailable', 'CallNotFound'] },
});
const notify = proxyActivities<PostCallActivities>({
  // The webhook itself times out after 10 s; one attempt is made, retries only re-check the claim.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

export interface PostCallResult {
  callId: string;
  recordingUrl: string | null;
  transcriptUrl: string | null;
  cost: number | null;
  summary: string | null;
  debited: boolean;
  callCompleted: 'sent' | 'failed' | 'no_webhook' | 'already_sent';
  failedSteps: string[];
}

function reason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

export async function postCallWorkflow(input: PostCallInput): Promise<PostCallResult> {
  const { callId } = input;
  // The signal only triggers the start (signal-with-start); its payload repeats the input.
  setHandler(callEndedSignal, () => undefined);

  const call = await db.checkCallEnded({ callId });
  if (call.alreadyCompleted) log.info('post-processing already completed for this call', { callId });

  const failedSteps: string[] = [];
  const attempt = async <T>(step: string, run: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'CallNotFound') throw err;
      failedSteps.push(step);
      log.warn(`post-call step ${step} failed`, { callId, error: reason(err) });
      await db.recordPostCallIssue({ callId, step, error: reason(err) });
      return fallback;
    }
  };

  const [recording, transcript, cost, summary] = await Promise.all([
    attempt('recording', () => upload.publishRecording({ callId }), { recordingUrl: null, durationSeconds: null }),
    attempt('transcript', () => db.storeTranscript({ callId }), { transcriptUrl: null }),
    attempt('cost', () => db.computeUsageCost({ callId }), null),
    attempt('summary', () => llm.summarizeCall({ callId }), { summary: null }),
  ]);

  const debit = cost ? await db.debitWallet({ callId }) : { debited: false };
  const sent = await notify.sendCallCompleted({ callId });
  // Keep the spool copy when publishing failed, so an operator can inspect or re-publish it.
  await db.finishPostCall({ callId, dropSpool: !failedSteps.includes('recording') || recording.recordingUrl !== null });

  return {
    callId,
    recordingUrl: recording.recordingUrl,
    transcriptUrl: transcript.transcriptUrl,
    cost: cost?.cost ?? null,
    summary: summary.summary,
    debited: debit.debited,
    callCompleted: sent.outcome,
    failedSteps,
  };
}
