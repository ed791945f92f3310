// Names of the agent-test workflow, shared by workflows/agent-test/messages.ts and the api that starts it. Pure: no
// I/O imports.
import type { SearchAttributePair } from '@temporalio/common';
import { AgentIdKey, OrganizationIdKey } from '../calls/post-call-names.ts';

export const AGENT_TEST_WORKFLOW_TYPE = 'agentTestWorkflow';
export const agentTestWorkflowId = (runId: string) => `agentTest-${runId}`;

/** The tag on a test run's call row (GET /calls?tag=agent_test finds them; usage reports can leave them out). */
export const AGENT_TEST_TAG = 'agent_test';

/** Search attributes set when the api starts the run (registered on the dev server by scripts/infra.ts). */
export function agentTestSearchAttributes(a: { organizationId: string; agentId: string }): SearchAttributePair[] {
  return [
    { key: OrganizationIdKey, value: a.organizationId },
    { key: AgentIdKey, value: a.agentId },
  ];
}
