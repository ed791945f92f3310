// agentTest-<runId>: one run of an agent test. The run goes running; a simulated caller talks with the agent on a
// real call (its conversation activity places the call through the public API and plays the caller: audio over the
// WebSocket protocol, or text in text mode); a judge scores the transcript per criterion with Structured Outputs;
// the run ends passed / failed / error exactly once (finishRun moves only a run that has not ended); then
// test.completed goes to the agent's webhook (claimed on the row: at most once). A worker lost in the middle of the
// conversation is found by the heartbeat timeout and the conversation starts over on another worker (a new call;
// the run's `attempts` counts them). Deterministic: only activity calls and handlers here.
import { ActivityFailure, log, proxyActivities, setHandler, TimeoutFailure, upsertSearchAttributes } from '@temporalio/workflow';
import type { AgentTestActivities } from '../../activities/agent-test.ts';
import { CallIdKey, PERMANENT_FAILURES, phaseQuery, type AgentTestInput, type AgentTestPhase, type AgentTestResult } from './messages.ts';

const db = proxyActivities<AgentTestActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10, nonRetryableErrorTypes: ['RunNotFound'] },
});
const judge = proxyActivities<AgentTestActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 3, nonRetryableErrorTypes: [...PERMANENT_FAILURES] },
});
const notify = proxyActivities<AgentTestActivities>({
  // the webhook times out after 10 s; one attempt is made, retries only re-check the claim
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 5 },
});

/** Time the conversation activity may take beyond the conversation's own cap: waiting for a call slot, engines loading. */
const CONVERSE_MARGIN_S = 15 * 60;

function reason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) {
    // the last attempt timed out: its worker was lost (no heartbeat) or it overran its time
    if (err.cause instanceof TimeoutFailure) return `${err.activityType} did not finish: ${err.cause.message} (its worker was lost or it overran)`;
    return err.cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export async function agentTestWorkflow(input: AgentTestInput): Promise<AgentTestResult> {
  const { runId } = input;
  let phase: AgentTestPhase = 'starting';
  setHandler(phaseQuery, () => phase);

  const run = await db.startRun({ runId });
  if (run.ended) {
    log.info('the run has ended already', { runId });
    phase = 'done';
    const sent = await notify.sendTestCompleted({ runId });
    return { runId, status: run.status as AgentTestResult['status'], callId: run.callId, error: null, ended: false, testCompleted: sent.outcome };
  }

  const converse = proxyActivities<AgentTestActivities>({
    startToCloseTimeout: (run.maxDurationS + CONVERSE_MARGIN_S) * 1000,
    heartbeatTimeout: '20 seconds',
    retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3, nonRetryableErrorTypes: [...PERMANENT_FAILURES] },
  });

  let status: AgentTestResult['status'];
  let error: string | null = null;
  let callId: string | null = null;
  let verdicts: Awaited<ReturnType<AgentTestActivities['judgeRun']>>['verdicts'] = [];
  let endedBy: Awaited<ReturnType<AgentTestActivities['converse']>>['endedBy'] | null = null;
  try {
    phase = 'conversation';
    const talk = await converse.converse({ runId });
    callId = talk.callId;
    endedBy = talk.endedBy;
    upsertSearchAttributes([{ key: CallIdKey, value: talk.callId }]);
    phase = 'judging';
    const judged = await judge.judgeRun({ runId });
    verdicts = judged.verdicts;
    status = verdicts.every((v) => v.passed) ? 'passed' : 'failed';
  } catch (err) {
    status = 'error';
    error = reason(err);
    log.warn('agent test run failed', { runId, error });
  } finally {
    // the run's key for the public API is gone whatever happened (a lost worker could not remove its own)
    await db.revokeRunKey({ runId });
  }

  phase = 'finishing';
  const ended = await db.finishRun({ runId, status, verdicts, error, endedBy });
  const sent = await notify.sendTestCompleted({ runId });
  phase = 'done';
  const row = ended ? null : await db.startRun({ runId });
  return { runId, status: row ? (row.status as AgentTestResult['status']) : status, callId: callId ?? row?.callId ?? null, error, ended, testCompleted: sent.outcome };
}
