// Inbound phone calls: which agent answers a dialled number, the call-start gates, and the pending inbound row.
//  - Twilio: the number's VoiceUrl webhook (api) calls `admitTwilioInbound` and answers <Connect><Stream> or a
//    spoken refusal.
//  - Smartflo: the static signed stream (media) calls `resolveInboundStream`: a signed custom_identifier means a
//    call we originated; otherwise the binding for the dialled number, else the number's inbound agent.
// Routing order for a number: an inbound binding wins over the number's saved-agent attachment; across
// organizations the most recent assignment wins.
import { MEDIA_AT_CAPACITY, weightOf } from '../media-nodes.ts';
import { announceUnconnected, finishUnconnected } from './ended.ts';
import { z } from 'zod';
import { liveCallBuiltins, loadAgent, recordingRefs, webhookRef, resolveSnapshot, savedToolRefs, validateAgentConfig, type AgentConfig } from '../agent-config/index.ts';
import { admitCall } from '../calls/gates.ts';
import { insertRejectedCall, type CallAgentRef } from '../calls/rows.ts';
import { sql } from '../db/pool.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { checkAgentProviders } from '../providers.ts';
import type { PhoneEndDeps } from './ended.ts';
import { sameNumber, toE164 } from './numbers.ts';
import { parseCustomIdentifier } from './signing.ts';
import { bindingRow, BINDING_COLS, getConfigById, numberRow, readCredentials, type BindingRow, type ConfigRow, type NumberRow } from './store.ts';
import type { Credentials } from './types.ts';

export type InboundRoute =
  | { kind: 'binding'; orgId: string; binding: BindingRow; config: ConfigRow | null; credentials: Credentials | null }
  | { kind: 'number'; orgId: string; number: NumberRow; config: ConfigRow; credentials: Credentials | null };

/** `replay`: a retried webhook of a carrier call admitted (or refused) before — nothing new was created. */
export type InboundAdmission =
  | { ok: true; callId: string; orgId: string; direction: 'inbound' | 'outbound'; replay?: boolean }
  | { ok: false; reason: string; message: string; orgId: string | null; callId: string | null; replay?: boolean };

export const REFUSAL_MESSAGES: Record<string, string> = {
  concurrency_limit_reached: 'We are sorry, all of our lines are busy right now. Please call again later. Goodbye.',
  media_capacity: 'We are sorry, all of our lines are busy right now. Please call again later. Goodbye.',
  no_route: 'We are sorry, this number is not in service. Goodbye.',
  default: 'We are sorry, this service is not available right now. Goodbye.',
};
export const refusalMessage = (reason: string) => REFUSAL_MESSAGES[reason] ?? REFUSAL_MESSAGES.default!;

const NUMBER_WITH_CONFIG = sql.fragment`
  SELECT n.id, n.organization_id::text, n.telephony_config_id, n.address, n.address_normalized, n.address_type, n.label,
         n.inbound_agent_id, a.uuid::text AS inbound_agent_uuid, a.name AS inbound_agent_name, n.inbound_assigned_at,
         n.is_active, n.is_default_caller_id, n.extra_metadata, n.carrier_ref, n.created_at, n.updated_at
  FROM phone_numbers n
  JOIN telephony_configs c ON c.id = n.telephony_config_id
  JOIN agents a ON a.id = n.inbound_agent_id AND a.status = 'active'`;

function pickRoute(deps: PhoneEndDeps, bindings: readonly BindingRow[], numbers: ReadonlyArray<{ n: NumberRow; c: ConfigRow }>): Promise<InboundRoute | null> | InboundRoute | null {
  // The organization with the most recent assignment wins; inside it a binding beats a number attachment.
  const stamps: Array<{ org: string; at: string }> = [
    ...bindings.map((b) => ({ org: b.organization_id, at: b.updated_at })),
    ...numbers.map(({ n }) => ({ org: n.organization_id, at: n.inbound_assigned_at ?? n.updated_at })),
  ].sort((a, b) => b.at.localeCompare(a.at));
  const org = stamps[0]?.org;
  if (!org) return null;
  const b = bindings.filter((x) => x.organization_id === org).sort((x, y) => y.updated_at.localeCompare(x.updated_at))[0];
  if (b) return routeOfBinding(deps, b);
  const hit = numbers.filter(({ n }) => n.organization_id === org)[0]!;
  return { kind: 'number', orgId: org, number: hit.n, config: hit.c, credentials: routeCredentials(deps, hit.c.credentials) };
}

async function routeOfBinding(deps: PhoneEndDeps, b: BindingRow): Promise<InboundRoute> {
  const config = b.telephony_config_id !== null ? await getConfigById(deps.db, b.telephony_config_id) : null;
  const blob = b.credentials ?? config?.credentials ?? null;
  return { kind: 'binding', orgId: b.organization_id, binding: b, config, credentials: blob ? routeCredentials(deps, blob) : null };
}

/**
 * A route's credentials, or null when the current key cannot open them (TELEPHONY_ENCRYPTION_KEY changed): such a
 * route verifies no webhook and the carrier hears a refusal, never a 500; the operator gets the error in the logs.
 */
function routeCredentials(deps: PhoneEndDeps, blob: Buffer): Credentials | null {
  const creds = readCredentials(deps.config, blob);
  if (!creds) deps.logger.error('the credentials of an inbound route cannot be decrypted with the current TELEPHONY_ENCRYPTION_KEY: save them again');
  return creds;
}

/**
 * Every route of a carrier's webhooks for a dialled E.164 number, the winner first (most recent
 * assignment; a binding beats a number attachment). The caller verifies the webhook with each route's credentials
 * and uses the first that verifies.
 */
export async function carrierRoutes(deps: PhoneEndDeps, provider: string, to: string): Promise<InboundRoute[]> {
  const bindings = await deps.db.any(sql.type(bindingRow)`
    SELECT ${BINDING_COLS} FROM inbound_bindings WHERE provider = ${provider} AND address_normalized = ${to}
    ORDER BY updated_at DESC`);
  const rows = await deps.db.any(sql.type(numberRow)`${NUMBER_WITH_CONFIG}
    WHERE c.provider = ${provider} AND n.address_normalized = ${to} AND n.is_active`);
  const pairs: Array<{ n: NumberRow; c: ConfigRow }> = [];
  for (const n of rows) {
    const c = await getConfigById(deps.db, n.telephony_config_id);
    if (c) pairs.push({ n, c });
  }
  const first = await pickRoute(deps, bindings, pairs);
  const all: InboundRoute[] = first ? [first] : [];
  for (const b of bindings) if (!(first?.kind === 'binding' && first.binding.id === b.id)) all.push(await routeOfBinding(deps, b));
  for (const { n, c } of pairs) if (!(first?.kind === 'number' && first.number.id === n.id)) all.push({ kind: 'number', orgId: n.organization_id, number: n, config: c, credentials: routeCredentials(deps, c.credentials) });
  return all;
}

/** Smartflo routes of one configuration's organization for a dialled number (format-tolerant). */
async function smartfloRoute(deps: PhoneEndDeps, cfg: ConfigRow, to: string): Promise<InboundRoute | null> {
  const bindings = (await deps.db.any(sql.type(bindingRow)`
    SELECT ${BINDING_COLS} FROM inbound_bindings WHERE provider = 'smartflo' AND organization_id = ${cfg.organization_id}
    ORDER BY updated_at DESC`)).filter((b) => sameNumber(to, b.address_normalized));
  const numbers = (await deps.db.any(sql.type(numberRow)`${NUMBER_WITH_CONFIG}
    WHERE c.provider = 'smartflo' AND n.organization_id = ${cfg.organization_id} AND n.is_active`)).filter((n) => sameNumber(to, n.address_normalized));
  const pairs: Array<{ n: NumberRow; c: ConfigRow }> = [];
  for (const n of numbers) {
    const c = n.telephony_config_id === cfg.id ? cfg : await getConfigById(deps.db, n.telephony_config_id);
    if (c) pairs.push({ n, c });
  }
  return pickRoute(deps, bindings, pairs);
}

/** The agent config and reference a route runs with (null when the attached agent is gone). */
async function agentOf(deps: PhoneEndDeps, route: InboundRoute): Promise<{ config: AgentConfig; ref: CallAgentRef } | null> {
  if (route.kind === 'binding') {
    const b = route.binding;
    if (b.agent_uuid === null) {
      // an inline agent: the snapshot taken when the binding was made is the agent
      return { config: b.agent_snapshot as unknown as AgentConfig, ref: { id: b.agent_id, uuid: b.agent_uuid, name: b.agent_name } };
    }
    // A binding made with agentId follows the saved agent (spec: "PATCH mutates the saved agent permanently and
    // affects bound inbound numbers"): its current config, with the binding's contextVariables over the agent's.
    // A deleted agent no longer answers (agent_not_found), as for a number attachment.
    const agent = await loadAgent(deps.db, route.orgId, b.agent_uuid);
    if (!agent) return null;
    const vars: Record<string, string> = { ...(agent.config.contextVariables ?? {}) };
    for (const [k, v] of Object.entries(b.context_variables)) if (v.trim().length > 0) vars[k] = v;
    return { config: { ...agent.config, contextVariables: vars }, ref: { id: agent.id, uuid: agent.uuid, name: agent.name } };
  }
  const uuid = route.number.inbound_agent_uuid;
  const agent = uuid ? await loadAgent(deps.db, route.orgId, uuid) : null;
  return agent ? { config: agent.config, ref: { id: agent.id, uuid: agent.uuid, name: agent.name } } : null;
}

const knownRow = z.object({ id: z.string(), organization_id: z.string(), status: z.string(), transport: z.string(), connection_status: z.string().nullable() });

/** The call a carrier call id already has (migration 0090: at most one per carrier). */
async function callOfCarrierId(deps: PhoneEndDeps, provider: string, carrierCallId: string) {
  return deps.db.maybeOne(sql.type(knownRow)`
    SELECT id::text, organization_id::text, status, transport, connection_status FROM calls
    WHERE telephony_provider = ${provider} AND carrier_call_id = ${carrierCallId}`);
}

/** What a retried webhook of an already admitted (or refused) carrier call is answered with. */
function replayOf(row: z.infer<typeof knownRow>): InboundAdmission {
  if (row.status === 'pending' && row.transport === 'inbound') return { ok: true, callId: row.id, orgId: row.organization_id, direction: 'inbound', replay: true };
  const reason = row.status === 'error' && row.connection_status ? row.connection_status : 'call_not_pending';
  return { ok: false, reason, message: refusalMessage(reason), orgId: row.organization_id, callId: row.id, replay: true };
}

const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } };
  return (e.code ?? e.cause?.code) === '23505';
};

/**
 * Gates + the pending inbound row for a routed call (or a rejected row), exactly once per carrier call: a carrier
 * retrying its webhook (same carrier call id) gets the call it already has (`replay: true`: the same stream
 * instruction while it is pending, the same refusal when it was refused), never a second row or slot. Parallel
 * retries race on the unique (provider, carrier_call_id) index: the loser's gate transaction rolls back.
 */
export async function admitInbound(
  deps: PhoneEndDeps,
  route: InboundRoute,
  call: InboundCall,
): Promise<InboundAdmission> {
  const id = call.carrierCallId;
  if (!id) return admitInboundOnce(deps, route, call);
  const known = await callOfCarrierId(deps, call.provider, id);
  if (known) return replayOf(known);
  try {
    return await admitInboundOnce(deps, route, call);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const raced = await callOfCarrierId(deps, call.provider, id);
    if (!raced) throw err;
    return replayOf(raced);
  }
}

/**
 * `onNode`: the call's media already arrived on a media node, which admitted it (Smartflo's static stream): no room
 * is reserved for it elsewhere.
 */
type InboundCall = { provider: string; from: string; to: string; carrierCallId: string | null; onNode?: boolean };

async function admitInboundOnce(
  deps: PhoneEndDeps,
  route: InboundRoute,
  call: InboundCall,
): Promise<InboundAdmission> {
  const agent = await agentOf(deps, route);
  const attempt = { type: 'inbound', provider: call.provider, from: call.from, to: call.to, carrierCallId: call.carrierCallId };
  const telephony = { carrierCallId: call.carrierCallId };
  if (!agent) {
    const callId = await insertRejectedCall(deps.db, {
      organizationId: route.orgId, transport: 'inbound', callSource: 'api_inbound', tags: ['api', 'inbound'], agent: null,
      configSnapshot: attempt, platformNumber: call.to, customerNumber: call.from, telephonyProvider: call.provider,
      reason: 'agent_not_found', payload: 'agent_not_found', telephony,
    });
    return { ok: false, reason: 'agent_not_found', message: refusalMessage('no_route'), orgId: route.orgId, callId };
  }
  // The platform number as stored on the route; the caller in E.164 when it can be read as one.
  const platform = route.kind === 'binding' ? route.binding.address_normalized : route.number.address_normalized;
  const customer = toE164(call.from) ?? (/^\d{8,15}$/.test(call.from) ? toE164(`+${call.from}`) : null) ?? call.from;
  const savedVariables = agent.config.contextVariables ?? {};
  const resolved = resolveSnapshot(agent.config, { savedVariables, callVariables: null, builtins: liveCallBuiltins({ customerNumber: customer, platformNumber: platform }) });
  // the saved agent keeps the archived tools and recordings it referenced
  const kept = { referencedTools: savedToolRefs(agent.config), referencedRecordings: recordingRefs(agent.config), referencedWebhook: webhookRef(agent.config) };
  const checked = await validateAgentConfig(resolved, { db: deps.db, orgId: route.orgId, policy: policyFromConfig(deps.config), partialModelCheck: true, ...kept });
  const base = {
    organizationId: route.orgId,
    transport: 'inbound' as const,
    callSource: 'api_inbound' as const,
    tags: ['api', 'inbound'],
    agent: agent.ref,
    contextVariables: null,
    platformNumber: platform,
    customerNumber: customer,
    telephonyProvider: call.provider,
  };
  if (!checked.ok) {
    deps.logger.warn({ orgId: route.orgId, to: call.to }, 'inbound call refused: the agent snapshot does not validate');
    const payload = checked.kind === 'schema' ? { error: 'Agent configuration validation failed', details: checked.items.map((i) => ({ path: i.path.join('.'), message: i.msg, type: i.type })) } : checked.message;
    const callId = await insertRejectedCall(deps.db, { ...base, configSnapshot: attempt, reason: 'snapshot_validation', payload, telephony });
    return { ok: false, reason: 'snapshot_validation', message: refusalMessage('default'), orgId: route.orgId, callId };
  }
  // Up front, as POST /call: an agent whose engines cannot run here (no adapter, or a vendor key missing) is refused
  // with a row before the call is answered, instead of answering and dying with pipeline_error.
  const runnable = checkAgentProviders(deps.config, checked.config);
  if (!runnable.ok) {
    deps.logger.warn({ orgId: route.orgId, to: call.to, reason: runnable.reason }, `inbound call refused: ${runnable.detail}`);
    const callId = await insertRejectedCall(deps.db, { ...base, configSnapshot: attempt, reason: runnable.reason, payload: runnable.detail, telephony });
    return { ok: false, reason: runnable.reason, message: refusalMessage('default'), orgId: route.orgId, callId };
  }
  const bindingCreds = route.kind === 'binding' && route.binding.credentials ? route.binding.credentials : null;
  const admission = await admitCall(deps, {
    ...base,
    configSnapshot: checked.config,
    telephony: {
      configId: route.kind === 'number' ? route.config.id : (route.binding.telephony_config_id ?? null),
      credentials: bindingCreds,
      bindingId: route.kind === 'binding' ? route.binding.id : null,
      carrierCallId: call.carrierCallId,
    },
  }, { configSnapshot: attempt }, call.onNode ? undefined : { weight: weightOf(checked.config, 'carrier'), deadAfterS: deps.config.MEDIA_NODE_DEAD_AFTER_S });
  if (!admission.ok) {
    return { ok: false, reason: admission.rejection.reason, message: refusalMessage(admission.rejection.reason), orgId: route.orgId, callId: null };
  }
  return { ok: true, callId: admission.callId, orgId: route.orgId, direction: 'inbound' };
}

const outboundRow = z.object({ id: z.string(), organization_id: z.string(), status: z.string(), telephony_config_id: z.number().nullable() });

/**
 * A Smartflo media stream arrived on the static URL of configuration `configId` (its signature already checked by
 * the caller with verifySmartfloStreamSig). Resolution order: signed custom_identifier → our outbound call (still
 * pending); else the inbound binding of the dialled number; else the number's inbound agent. Runs the gates and
 * creates the pending inbound row (or a rejected row).
 */
export async function resolveInboundStream(
  deps: PhoneEndDeps,
  s: {
    configId: number; customParameters: Record<string, unknown>; from: string; to: string; carrierCallId: string | null;
    /** the media node has no room for the stream: the call is resolved only to leave its refused row */
    atCapacity?: boolean;
  },
): Promise<InboundAdmission> {
  const signed = Object.entries(s.customParameters)
    .filter(([k]) => /custom_?identifier/i.test(k))
    .map(([, v]) => parseCustomIdentifier(deps.config, v))
    .find((v): v is string => v !== null)
    ?? Object.values(s.customParameters).map((v) => parseCustomIdentifier(deps.config, v)).find((v): v is string => v !== null);
  if (signed) {
    const row = await deps.db.maybeOne(sql.type(outboundRow)`
      UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${s.carrierCallId}), updated_at = now()
      WHERE id = ${signed} AND transport = 'outbound' AND telephony_provider = 'smartflo'
      RETURNING id::text, organization_id::text, status, telephony_config_id`);
    if (!row) return { ok: false, reason: 'call_not_found', message: refusalMessage('default'), orgId: null, callId: null };
    if (row.status !== 'pending') return { ok: false, reason: 'call_not_pending', message: refusalMessage('default'), orgId: row.organization_id, callId: row.id };
    if (s.atCapacity) {
      const ended = await finishUnconnected(deps.db, row.id, 'media_capacity', { carrier_status: { status: 'refused_at_capacity', duration: null } });
      if (ended) void announceUnconnected(deps, ended);
      return { ok: false, reason: 'media_capacity', message: refusalMessage('media_capacity'), orgId: row.organization_id, callId: row.id };
    }
    return { ok: true, callId: row.id, orgId: row.organization_id, direction: 'outbound' };
  }
  const cfg = await getConfigById(deps.db, s.configId);
  if (!cfg || cfg.provider !== 'smartflo') return { ok: false, reason: 'config_not_found', message: refusalMessage('no_route'), orgId: null, callId: null };
  const route = await smartfloRoute(deps, cfg, s.to);
  if (!route) return { ok: false, reason: 'no_route', message: refusalMessage('no_route'), orgId: cfg.organization_id, callId: null };
  if (s.atCapacity) {
    const callId = await insertRejectedCall(deps.db, {
      organizationId: route.orgId, transport: 'inbound', callSource: 'api_inbound', tags: ['api', 'inbound'], agent: null,
      configSnapshot: { type: 'inbound', provider: 'smartflo', from: s.from, to: s.to, carrierCallId: s.carrierCallId },
      platformNumber: s.to, customerNumber: s.from, telephonyProvider: 'smartflo',
      reason: 'media_capacity', payload: MEDIA_AT_CAPACITY, telephony: { carrierCallId: s.carrierCallId },
    });
    return { ok: false, reason: 'media_capacity', message: refusalMessage('media_capacity'), orgId: route.orgId, callId };
  }
  return admitInbound(deps, route, { provider: 'smartflo', from: s.from, to: s.to, carrierCallId: s.carrierCallId, onNode: true });
}
