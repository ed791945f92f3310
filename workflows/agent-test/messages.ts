// Messages of the agent-test workflow (`agentTest-<runId>`), imported by callers (the api starts it; the CLI and the
// console read the run row, and operators can query the phase in Temporal UI).
import { defineQuery } from '@temporalio/workflow';

export { AGENT_TEST_TAG, AGENT_TEST_WORKFLOW_TYPE, agentTestSearchAttributes, agentTestWorkflowId } from '../../core/agent-tests/names.ts';
export { CallIdKey } from '../../core/calls/post-call-names.ts';

export interface AgentTestInput {
  runId: string;
}

export type AgentTestPhase = 'starting' | 'conversation' | 'judging' | 'finishing' | 'done';

export interface AgentTestResult {
  runId: string;
  status: 'passed' | 'failed' | 'error';
  callId: string | null;
  error: string | null;
  /** false when the run had been ended already (a repeated workflow for the same run) */
  ended: boolean;
  testCompleted: 'sent' | 'failed' | 'no_webhook' | 'already_sent';
}

export const phaseQuery = defineQuery<AgentTestPhase>('phase');

/** Error types the activities throw for failures that retrying cannot fix (the run ends `error` with the message). */
export const PERMANENT_FAILURES = ['RunNotFound', 'CallRefused', 'AgentDidNotAnswer', 'CallerEngineFailed', 'JudgeFailed'] as const;
