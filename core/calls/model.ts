// Call rows: the value sets of the spec ("Call list item", connectionStatus / endedReason tables), the row schema
// read back from PostgreSQL, and the camelCase shapes GET /calls and GET /calls/{callId} return.
import { z } from 'zod';

export const TRANSPORTS = ['outbound', 'inbound', 'webrtc', 'websocket', 'web'] as const;
export const STATUSES = ['pending', 'active', 'completed', 'error'] as const;
export const ENDED_REASONS = [
  'user_hangup', 'agent_hangup', 'silence_timeout', 'max_duration', 'voicemail', 'transferred', 'pipeline_error', 'cancelled', 'unknown',
] as const;
export const CALL_SOURCES = ['api_outbound', 'api_inbound', 'dashboard_outbound', 'dashboard_inbound', 'webrtc', 'websocket', 'unknown'] as const;

/** Every fixed connectionStatus value; `telephony_<raw>` passthroughs are accepted by pattern. */
export const CONNECTION_STATUSES = [
  'completed', 'no_answer', 'busy', 'rejected', 'invalid_number', 'unreachable', 'cancelled', 'connection_failed',
  'no_participant', 'dial_failed', 'initiation_failed', 'missing_credentials', 'concurrency_limit_reached',
  'insufficient_balance', 'wallet_rejected', 'org_not_found', 'user_not_found', 'no_org',
  'schema_validation', 'snapshot_validation', 'model_validation', 'agent_not_found', 'credentials_invalid',
  'inbound_invalid', 'provider_not_supported', 'media_capacity',
] as const;
export const TELEPHONY_PASSTHROUGH = /^telephony_[a-z0-9_]+$/;

export type Transport = (typeof TRANSPORTS)[number];
export type CallStatus = (typeof STATUSES)[number];
export type EndedReason = (typeof ENDED_REASONS)[number];
export type CallSource = (typeof CALL_SOURCES)[number];

/** Rejection reasons written to connectionStatus on rejected rows. */
export type RejectReason =
  | 'schema_validation' | 'snapshot_validation' | 'model_validation' | 'agent_not_found'
  | 'concurrency_limit_reached' | 'insufficient_balance' | 'wallet_rejected' | 'org_not_found'
  | 'credentials_invalid' | 'inbound_invalid' | 'provider_not_supported' | 'missing_credentials'
  /** beyond the spec's list: no live media node had room for the call (POST /call 503; inbound: the carrier's busy) */
  | 'media_capacity';

/**
 * Browser WebRTC calls, whichever endpoint created them (`POST /call` with transport=webrtc, the dashboard test
 * call), are stored with transport `webrtc` and callSource `webrtc`. Rows with the legacy transport `web` are the
 * same kind of call: the history filter treats `web` and `webrtc` as one value (see transportFilter).
 */
export const BROWSER_WEBRTC = { transport: 'webrtc', callSource: 'webrtc' } as const satisfies { transport: Transport; callSource: CallSource };
export const BROWSER_WEBRTC_LABELS: readonly Transport[] = ['webrtc', 'web'];

/** The stored transport values a `transport` filter matches: `web` and `webrtc` each match both. */
export function transportFilter(values: readonly string[]): string[] {
  const out = new Set(values);
  if (values.some((v) => (BROWSER_WEBRTC_LABELS as readonly string[]).includes(v))) for (const l of BROWSER_WEBRTC_LABELS) out.add(l);
  return [...out];
}

/** Values of `analysis.status` (the `analysis_status` filter of GET /calls). */
export const ANALYSIS_STATUSES = ['completed', 'failed', 'skipped'] as const;

/** Web transports whose pending rows expire when nobody joins. */
export const WEB_TRANSPORTS: readonly Transport[] = ['websocket', 'webrtc', 'web'];

/** Columns of the list view (kept narrow: the list never reads the big jsonb columns). */
export const listColumns = [
  'id', 'transport', 'pipeline_source', 'status', 'connection_status', 'ended_reason', 'agent_uuid', 'agent_name',
  'campaign_id', 'platform_number', 'customer_number', 'telephony_provider', 'call_source', 'started_at', 'ended_at',
  'duration_seconds', 'created_at', 'cost', 'tags',
] as const;

export const callListRow = z.object({
  id: z.string(),
  transport: z.string(),
  pipeline_source: z.string(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  agent_uuid: z.string().nullable(),
  agent_name: z.string().nullable(),
  campaign_id: z.number().nullable(),
  platform_number: z.string().nullable(),
  customer_number: z.string().nullable(),
  telephony_provider: z.string().nullable(),
  call_source: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  created_at: z.string(),
  cost: z.number().nullable(),
  tags: z.array(z.string()),
});
export type CallListRow = z.infer<typeof callListRow>;

export const callDetailRow = callListRow.extend({
  config_snapshot: z.unknown(),
  context_variables: z.unknown(),
  logs: z.unknown(),
  telephony_sim: z.boolean(),
  transcript: z.unknown(),
  transcript_url: z.string().nullable(),
  recording_url: z.string().nullable(),
  usage: z.unknown(),
  summary: z.string().nullable(),
  analysis: z.unknown(),
  updated_at: z.string(),
});
export type CallDetailRow = z.infer<typeof callDetailRow>;

/** One `items[]` entry of GET /calls, field for field as the "Call list item" table. */
export function toListItem(r: CallListRow) {
  return {
    callId: r.id,
    transport: r.transport,
    pipelineSource: r.pipeline_source,
    status: r.status,
    connectionStatus: r.connection_status,
    endedReason: r.ended_reason,
    agentId: r.agent_uuid,
    agentName: r.agent_name,
    campaignId: r.campaign_id,
    platformNumber: r.platform_number,
    customerNumber: r.customer_number,
    telephonyProvider: r.telephony_provider,
    callSource: r.call_source,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    durationSeconds: r.duration_seconds,
    createdAt: r.created_at,
    cost: r.cost,
    tags: r.tags,
  };
}

/** GET /calls/{callId}: the list item plus the stored snapshot, logs and post-call artefacts. */
export function toDetail(r: CallDetailRow) {
  return {
    ...toListItem(r),
    configSnapshot: r.config_snapshot ?? null,
    contextVariables: r.context_variables ?? {},
    logs: r.logs ?? {},
    telephonySim: r.telephony_sim,
    transcript: r.transcript ?? null,
    transcriptUrl: r.transcript_url,
    recordingUrl: r.recording_url,
    usage: r.usage ?? null,
    summary: r.summary,
    analysis: r.analysis && typeof r.analysis === 'object' ? r.analysis : null,
    updatedAt: r.updated_at,
  };
}
