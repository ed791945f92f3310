// postCall-<callId>: after a call ends, publish its recording, store the transcript, price it, optionally summarise
// and analyse it, debit the wallet, then send call.completed. Recording, transcript, cost, summary and analysis run
// in parallel and fail independently (a failed part leaves its field null and is noted on
// calls.logs.post_call_errors; a failed analysis also stores its reason on the call); the cost waits for the
// analysis, whose tokens it prices; the debit and the event come after all of them, so call.completed carries the
// analysis (bounded by the analysis activity's schedule-to-close timeout). Deterministic: only activity calls and
// handlers here.
//
// Calls whose agent asks for an analysis take the `post-call-analysis` patch (histories recorded before it, and
// calls without an analysis, keep the earlier command sequence).
import { ActivityFailure, ApplicationFailure, log, patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { AnalysisActivities } from '../../activities/analysis.ts';
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
const analysis = proxyActivities<AnalysisActivities>({
  startToCloseTimeout: '3 minutes',
  // the bound call.completed waits for: every attempt and backoff together
  scheduleToCloseTimeout: '6 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 4, nonRetryableErrorTypes: ['AnalysisRejected', 'AnalysisUnavailable', 'CallNotFound'] },
});
const analysisFailure = proxyActivities<AnalysisActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});
export const ANALYSIS_PATCH = 'post-call-analysis';
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
  /** The analysis' status; null when the agent asks for none. */
  analysis?: 'completed' | 'failed' | 'skipped' | null;
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
  const lastError = new Map<string, string>();
  const attempt = async <T>(step: string, run: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'CallNotFound') throw err;
      failedSteps.push(step);
      lastError.set(step, reason(err));
      log.warn(`post-call step ${step} failed`, { callId, error: reason(err) });
      await db.recordPostCallIssue({ callId, step, error: reason(err) });
      return fallback;
    }
  };

  const withAnalysis = call.analysis === true && patched(ANALYSIS_PATCH);
  let analysed: { status: 'completed' | 'failed' | 'skipped' | null } = { status: null };
  const [recording, transcript, cost, summary] = await Promise.all([
    attempt('recording', () => upload.publishRecording({ callId }), { recordingUrl: null, durationSeconds: null }),
    attempt('transcript', () => db.storeTranscript({ callId }), { transcriptUrl: null }),
    withAnalysis
      ? (async () => {
          analysed = await attempt('analysis', () => analysis.analyzeCall({ callId }), null) ?? { status: 'failed' };
          if (failedSteps.includes('analysis')) {
            const error = lastError.get('analysis') ?? 'analysis failed';
            await analysisFailure.recordAnalysisFailure({ callId, error }).catch((err: unknown) => {
              log.warn('could not store the analysis failure', { callId, error: reason(err) });
            });
          }
          return attempt('cost', () => db.computeUsageCost({ callId }), null);
        })()
      : attempt('cost', () => db.computeUsageCost({ callId }), null),
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
    ...(withAnalysis ? { analysis: analysed.status } : {}),
    debited: debit.debited,
    callCompleted: sent.outcome,
    failedSteps,
  };
}
