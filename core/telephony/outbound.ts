// Placing an outbound phone call — the one path POST /call type=outbound and campaign dials share:
// resolve the agent and freeze its snapshot (built-ins user_number / agent_number known), run the call-start gates,
// insert the pending row (exactly once per dialKey), dial the carrier with answer / status / stream URLs built from
// PUBLIC_URL (the stream's from the assigned media node's own address when it has one), store the carrier call id. A carrier refusal leaves a `dial_failed` row and throws ProviderRejected.
import { z } from 'zod';
import { liveCallBuiltins, loadAgent, recordingRefs, webhookRef, resolveSnapshot, savedToolRefs, validateAgentConfig, type AgentConfig } from '../agent-config/index.ts';
import { admitCall } from '../calls/gates.ts';
import type { CallSource } from '../calls/model.ts';
import { insertRejectedCall, type CallAgentRef, type NewCall } from '../calls/rows.ts';
import { neverConnectedRow, UNCONNECTED_RETURNING } from '../calls/unconnected.ts';
import { sql } from '../db/pool.ts';
import { MEDIA_AT_CAPACITY, reserveMediaNode, weightOf, type AssignedNode } from '../media-nodes.ts';
import { checkAgentProviders } from '../providers.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { announceUnconnected, onPhoneCallEnded, type PhoneEndDeps } from './ended.ts';
import { GateRefused, OutboundInvalid, ProviderRejected } from './errors.ts';
import { carrierFor } from './registry.ts';
import { customIdentifier } from './signing.ts';
import { configUnreadable, getConfig, readCredentials, sealCredentials } from './store.ts';
import { CarrierHttpError, type CarrierAdapter, type Credentials } from './types.ts';
import { carrierHookUrl, carrierStreamUrl, smartfloStreamUrl } from './urls.ts';

export type OutboundDeps = PhoneEndDeps;

export interface OutboundRequest {
  orgId: string;
  /** Saved agent (public uuid), or an already validated config with its reference (inline agents). */
  agentUuid?: string;
  agent?: { config: AgentConfig; ref: CallAgentRef };
  /** A saved configuration of the organization, or inline credentials of `provider`. */
  telephonyConfigId?: number;
  inline?: { provider: string; credentials: Credentials };
  fromNumber: string;
  toNumber: string;
  contextVariables?: Record<string, string> | null;
  campaignId?: number | null;
  /** Business key: a second request with the same key returns the first call instead of dialling again. */
  dialKey?: string | null;
  callSource?: CallSource;
  tags?: string[];
  /** What a rejected row stores as configSnapshot (the redacted request). */
  rejectedSnapshot?: unknown;
  /** Twilio ring timeout (seconds, default 30). */
  ringTimeoutS?: number;
}

export interface PlacedCall {
  callId: string;
  carrierCallId: string | null;
  provider: string;
  /** true when dialKey matched an earlier call: nothing was dialled. */
  existing: boolean;
  status: string;
}

const existingRow = z.object({ id: z.string(), carrier_call_id: z.string().nullable(), telephony_provider: z.string().nullable(), status: z.string(), placed: z.boolean() });

/**
 * A call row under a dial key is placed unless it is pending, its dial never claimed and no carrier call id: then
 * the try that wrote it stopped before sending the dial, and a retry sends it (placeOutboundCall below; the campaign's
 * dial activity reads the same rule).
 */
export const DIAL_PLACED = sql.fragment`(dial_started_at IS NOT NULL OR status <> 'pending' OR carrier_call_id IS NOT NULL)`;

async function byDialKey(deps: OutboundDeps, orgId: string, dialKey: string) {
  return deps.db.maybeOne(sql.type(existingRow)`
    SELECT id::text, carrier_call_id, telephony_provider, status, ${DIAL_PLACED} AS placed FROM calls WHERE dial_key = ${dialKey} AND organization_id = ${orgId}`);
}

const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } };
  return (e.code ?? e.cause?.code) === '23505';
};

const placed = (prior: z.infer<typeof existingRow>): PlacedCall => ({ callId: prior.id, carrierCallId: prior.carrier_call_id, provider: prior.telephony_provider ?? '', existing: true, status: prior.status });

/**
 * Exactly once per dialKey. The row is written first, then the dial is claimed (calls.dial_started_at, atomically,
 * just before the carrier request leaves), then sent. A retry that finds the row:
 * - claimed (the request may have reached the carrier, whatever the carrier said): returns it, nothing is dialed;
 * - pending and never claimed (the earlier try stopped in between: a worker SIGKILLed mid-dial): sends the dial
 *   now with that same row, so the contact is not lost and still dialed once. Two retries racing claim one winner.
 */
export async function placeOutboundCall(deps: OutboundDeps, req: OutboundRequest): Promise<PlacedCall> {
  const { db, config } = deps;
  let resume: string | null = null;
  if (req.dialKey) {
    const prior = await byDialKey(deps, req.orgId, req.dialKey);
    if (prior && !prior.placed) resume = prior.id;
    else if (prior) return placed(prior);
  }

  // Carrier and credentials.
  let adapter: CarrierAdapter | null;
  let creds: Credentials;
  let configId: number | null = null;
  let amdEnabled = false;
  if (req.telephonyConfigId !== undefined) {
    const row = await getConfig(db, req.orgId, req.telephonyConfigId);
    if (!row) throw new OutboundInvalid(400, 'telephony_configuration_not_found', 'missing_credentials');
    adapter = carrierFor(row.provider);
    if (!adapter) throw new OutboundInvalid(501, `Outbound calls with provider '${row.provider}' are not implemented yet`, 'provider_not_supported');
    const opened = readCredentials(config, row.credentials);
    // a changed TELEPHONY_ENCRYPTION_KEY: refused naming the configuration (campaigns: initiation_failed)
    if (!opened) throw new OutboundInvalid(409, configUnreadable(row).message, 'missing_credentials');
    creds = opened;
    configId = row.id;
    amdEnabled = row.amd_enabled;
  } else if (req.inline) {
    adapter = carrierFor(req.inline.provider);
    if (!adapter) throw new OutboundInvalid(501, `Outbound calls with provider '${req.inline.provider}' are not implemented yet`, 'provider_not_supported');
    creds = req.inline.credentials;
  } else {
    throw new OutboundInvalid(400, 'missing_credentials: no telephony configuration or inline credentials given', 'missing_credentials');
  }
  if (!adapter.canDial(creds)) {
    throw new OutboundInvalid(400, `phone_number_not_configured: the ${adapter.id} configuration has no outbound (click-to-call) credentials`, 'missing_credentials');
  }

  // The agent and its frozen snapshot.
  let agentRef: CallAgentRef;
  let agentConfig: AgentConfig;
  if (req.agent) {
    agentRef = req.agent.ref;
    agentConfig = req.agent.config;
  } else {
    const agent = req.agentUuid ? await loadAgent(db, req.orgId, req.agentUuid.toLowerCase()) : null;
    if (!agent) throw new OutboundInvalid(400, 'agent_not_found', 'agent_not_found');
    agentRef = { id: agent.id, uuid: agent.uuid, name: agent.name };
    agentConfig = agent.config;
  }
  const callVariables = req.contextVariables ?? null;
  const resolved = resolveSnapshot(agentConfig, {
    savedVariables: agentConfig.contextVariables ?? {},
    callVariables,
    builtins: liveCallBuiltins({ customerNumber: req.toNumber, platformNumber: req.fromNumber }),
  });
  // a saved agent (or one the api already validated) keeps the archived tools and recordings it referenced
  const kept = { referencedTools: savedToolRefs(agentConfig), referencedRecordings: recordingRefs(agentConfig), referencedWebhook: webhookRef(agentConfig) };
  const checked = await validateAgentConfig(resolved, { db, orgId: req.orgId, policy: policyFromConfig(config), partialModelCheck: true, ...kept });

  const base: Omit<NewCall, 'configSnapshot'> = {
    organizationId: req.orgId,
    transport: 'outbound',
    callSource: req.callSource ?? 'api_outbound',
    tags: req.tags ?? ['api', 'outbound'],
    agent: agentRef,
    contextVariables: callVariables,
    campaignId: req.campaignId ?? null,
    platformNumber: req.fromNumber,
    customerNumber: req.toNumber,
    telephonyProvider: adapter.id,
  };
  if (!checked.ok) {
    const items = checked.kind === 'schema' ? checked.items : [{ type: 'value_error', path: checked.path, msg: checked.message, input: null }];
    const detail = { error: 'Agent configuration validation failed', details: items.map((i) => ({ path: i.path.join('.'), message: i.msg, type: i.type })) };
    await insertRejectedCall(db, { ...base, configSnapshot: req.rejectedSnapshot ?? null, reason: 'snapshot_validation', payload: detail });
    throw new OutboundInvalid(400, detail, 'snapshot_validation');
  }
  // Engines this install cannot run (no adapter, a vendor key missing): refused before dialling, as POST /call does
  // (campaign dials reach this with an agent that was PATCHed after the campaign started).
  const runnable = checkAgentProviders(config, checked.config);
  if (!runnable.ok) {
    await insertRejectedCall(db, { ...base, configSnapshot: req.rejectedSnapshot ?? null, reason: runnable.reason, payload: runnable.detail });
    throw new OutboundInvalid(runnable.status, runnable.detail, runnable.reason);
  }

  // Gates + the pending row (exactly once per dialKey) + room on a media node, before anything rings: no room → 503,
  // no row, no dial (a campaign waits and dials later). A resumed dial has its row already and reserves for it.
  const want = { weight: weightOf(checked.config, 'carrier'), deadAfterS: config.MEDIA_NODE_DEAD_AFTER_S };
  let callId: string;
  let node: AssignedNode | null;
  if (resume) {
    callId = resume;
    const r = await db.transaction((tx) => reserveMediaNode(tx, resume!, want.weight, want.deadAfterS));
    if (r.full) throw new GateRefused(503, MEDIA_AT_CAPACITY, 'media_capacity');
    node = r.node;
  } else {
    let admission;
    try {
      admission = await admitCall(deps, {
        ...base,
        configSnapshot: checked.config,
        telephony: {
          configId,
          credentials: configId === null ? sealCredentials(config, creds) : null,
          dialKey: req.dialKey ?? null,
        },
      }, { configSnapshot: req.rejectedSnapshot ?? null }, want);
    } catch (err) {
      if (req.dialKey && isUniqueViolation(err)) {
        const prior = await byDialKey(deps, req.orgId, req.dialKey);
        if (prior) return placed(prior); // another try of the same dial wrote the row first: it dials
      }
      throw err;
    }
    if (!admission.ok) throw new GateRefused(admission.rejection.status, admission.rejection.detail, admission.rejection.reason);
    callId = admission.callId;
    node = admission.node;
  }

  // Steering: the media stream goes to the node the room was reserved on when that node has its own address
  // (MEDIA_PUBLIC_URL), else to the shared PUBLIC_URL (the proxy picks). Smartflo's stream URL is the static one
  // pasted into its portal: not steerable. Carriers whose answer webhook returns the stream (Twilio's TwiML) read the
  // same assignment there (api/routes/telephony/webhooks.ts).
  const media = node?.public_url ? { ...config, baseUrl: `${node.public_url}/api/v1` } : config;

  // Dial.
  const amd = adapter.carrierAmd === true && (amdEnabled || agentWantsVoicemailDetection(checked.config));
  // /telephony/{id}/… webhook URLs, signed with our per-call token when the carrier signs nothing
  const hook = (name: string) => carrierHookUrl(config, adapter.id, name, callId, adapter.signedUrls === true);
  // Claim the dial right before it leaves: once claimed it is never sent again (the request may reach the carrier
  // whatever happens to this process after this line); a dial key's row that lost the claim to another try is that
  // try's to dial.
  if (req.dialKey) {
    const claimed = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
      UPDATE calls SET dial_started_at = now() WHERE id = ${callId} AND dial_started_at IS NULL RETURNING id::text`);
    if (!claimed) {
      const prior = await byDialKey(deps, req.orgId, req.dialKey);
      if (prior) return placed(prior);
    }
  }
  try {
    const result = await adapter.dial({ config, logger: deps.logger }, creds, {
      callId,
      from: req.fromNumber,
      to: req.toNumber,
      answerUrl: hook('answer'),
      statusCallbackUrl: hook('status'),
      streamUrl: adapter.id === 'smartflo' && configId !== null ? smartfloStreamUrl(config, configId) : carrierStreamUrl(media, adapter.id, callId),
      amd: amd ? { callbackUrl: hook('amd') } : null,
      timeoutS: req.ringTimeoutS ?? 30,
      customIdentifier: customIdentifier(config, callId),
      record: checked.config.recordInProviderConsole === true,
    });
    if (result.carrierCallId) {
      await db.query(sql.unsafe`UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${result.carrierCallId}), updated_at = now() WHERE id = ${callId}`);
    }
    return { callId, carrierCallId: result.carrierCallId, provider: adapter.id, existing: false, status: 'pending' };
  } catch (err) {
    if (!(err instanceof CarrierHttpError)) {
      await markDialFailed(deps, callId, 0, (err as Error).message);
      throw err;
    }
    const providerStatus = err.status === 0 ? 502 : err.status;
    await markDialFailed(deps, callId, providerStatus, err.message, err.carrierCode);
    throw new ProviderRejected({ code: 'provider_rejected', provider: adapter.id, providerStatus, callId, message: err.message });
  }
}

/** The agent asks for voicemail detection (AgentConfig.voicemailDetection, when the schema has it). */
function agentWantsVoicemailDetection(config: AgentConfig): boolean {
  const v = (config as unknown as { voicemailDetection?: unknown }).voicemailDetection;
  if (v === true) return true;
  return !!v && typeof v === 'object' && (v as { enabled?: unknown }).enabled === true;
}

const failedRow = neverConnectedRow.extend({ campaign_id: z.number().nullable() });

/** The dial never left: status error, connectionStatus dial_failed, logs.dial_error; call.ended then call.completed (core/calls/unconnected.ts); the end hook. */
/** The config whose URLs name the media node this call is assigned to (its own address), or the shared one. The row
 * exists by now: a failed assignment (database hiccup) must not fail the dial, the shared URL works. */
async function markDialFailed(deps: OutboundDeps, callId: string, providerStatus: number, message: string, carrierCode?: number | string): Promise<void> {
  const dialError = { message, providerStatus, ...(carrierCode !== undefined ? { carrierCode } : {}) };
  const row = await deps.db.maybeOne(sql.type(failedRow)`
    UPDATE calls SET status = 'error', connection_status = 'dial_failed', ended_reason = NULL, ended_at = now(), updated_at = now(),
      tags = (SELECT array_agg(DISTINCT t) FROM unnest(tags || ARRAY['not_connected']::text[]) AS t),
      logs = logs || jsonb_build_object('dial_error', ${JSON.stringify(dialError)}::jsonb)
    WHERE id = ${callId} AND status = 'pending'
    RETURNING ${UNCONNECTED_RETURNING}, campaign_id`);
  if (!row) return;
  void announceUnconnected(deps, row);
  await onPhoneCallEnded(deps, callId).catch((err: unknown) => deps.logger.warn({ err, callId }, 'phone-call end hook failed'));
}
