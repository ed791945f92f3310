// Names and payloads of the campaign workflow's messages, shared by workflows/campaign/messages.ts (which defines the
// typed handles) and core/campaigns/signal.ts (which signals from the api and media). Pure: no I/O imports.
export const CAMPAIGN_WORKFLOW_TYPE = 'campaignWorkflow';
export const campaignWorkflowId = (campaignId: number | string) => `campaign-${campaignId}`;

export const CALL_OUTCOME_SIGNAL = 'campaignCallOutcome';

/** Payload of the call-outcome signal: the final state of one campaign call row. */
export interface CallOutcomeSignal {
  callId: string;
  status: string;
  connectionStatus: string | null;
  endedReason: string | null;
  durationSeconds: number | null;
}
