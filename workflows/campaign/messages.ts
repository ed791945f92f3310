// Messages of the campaign workflow (`campaign-<id>`), imported by callers (api: start/pause/resume/edit updates and
// the progress query; media/telephony: the call-outcome signal through core/campaigns/signal.ts).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { CALL_OUTCOME_SIGNAL, type CallOutcomeSignal } from '../../core/campaigns/names.ts';
import type { BreakerEvent } from '../../core/campaigns/policy.ts';
import type { CampaignSettings, CampaignState } from '../../core/campaigns/schemas.ts';

export { CAMPAIGN_WORKFLOW_TYPE, campaignWorkflowId } from '../../core/campaigns/names.ts';
export type { CallOutcomeSignal };

/** One dial the workflow is waiting on: the contact, its attempt number and (once dialed) the call id. */
export interface InFlight {
  contactId: number;
  attempt: number;
  callId: string | null;
}

/** Carried across continue-as-new (small: bounded by max_concurrency, not by the number of contacts). */
export interface CampaignCarry {
  state: CampaignState;
  cursor: number;
  inFlight: InFlight[];
  window: BreakerEvent[];
  /** Outcome signals that arrived before their dial activity returned (by call id). */
  early: CallOutcomeSignal[];
  /** Contacts refused for want of a slot / caller ID / wallet, dialed again first. */
  held: Array<{ contactId: number; attempt: number }>;
  settings: CampaignSettings;
  imported: boolean;
  dialed: number;
  runs: number;
}

export interface CampaignInput {
  campaignId: number;
  organizationId: string;
  carry?: CampaignCarry;
  /** Continue as new once the history has this many events, besides the server's suggestion (tests, tuning). */
  continueAfterEvents?: number;
}

export interface CampaignProgress {
  campaignId: number;
  state: CampaignState;
  inFlight: number;
  capacity: number;
  cursor: number;
  dialed: number;
  waitingUntil: string | null;
  waitingFor: string | null;
  settings: CampaignSettings;
  breaker: { calls: number; failures: number };
  runs: number;
}

export type EditInput = Partial<CampaignSettings>;

export const callOutcomeSignal = defineSignal<[CallOutcomeSignal]>(CALL_OUTCOME_SIGNAL);
/** created → syncing → running (the api sends it with update-with-start). */
export const startUpdate = defineUpdate<CampaignState, []>('start');
/** running|syncing → paused. */
export const pauseUpdate = defineUpdate<CampaignState, []>('pause');
/** paused → running. */
export const resumeUpdate = defineUpdate<CampaignState, []>('resume');
/** New settings for a live campaign (name is a row-only field and does not reach the workflow). */
export const editUpdate = defineUpdate<CampaignState, [EditInput]>('edit');
export const progressQuery = defineQuery<CampaignProgress>('progress');

/** Search attributes registered on the dev server (scripts/infra.ts). */
export const CampaignIdKey = defineSearchAttributeKey('CampaignId', SearchAttributeType.KEYWORD);
export const CampaignStateKey = defineSearchAttributeKey('CampaignState', SearchAttributeType.KEYWORD);
export const OrganizationIdKey = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);

export function campaignSearchAttributes(a: { campaignId: number; organizationId: string; state: CampaignState }): SearchAttributePair[] {
  return [
    { key: CampaignIdKey, value: String(a.campaignId) },
    { key: CampaignStateKey, value: a.state },
    { key: OrganizationIdKey, value: a.organizationId },
  ];
}

/** The error type the update validators throw (the api turns it into a 400 naming the state). */
export const ILLEGAL_TRANSITION = 'IllegalCampaignTransition';
