// Calls: POST /call (WebSocket and WebRTC; telephony body rules), GET /calls (history), GET /calls/{callId},
// POST /agents/{uuid}/test-call. Every call start runs the gates of core/calls/gates.ts; every authenticated
// request rejected before the pipeline starts leaves a rejected call row (core/calls/rows.ts), including a call on
// a provider this install cannot run (core/providers.ts: 501 provider_not_supported / 400 missing_credentials).
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { liveCallBuiltins, loadAgent, recordingRefs, webhookRef, resolveSnapshot, savedToolRefs, scrubCredentials, validateAgentConfig, type AgentConfig } from '../../core/agent-config/index.ts';
import { preCheck } from '../../core/agent-config/issues.ts';
import { admitCall, gateError, type Admission, type GateDeps } from '../../core/calls/gates.ts';
import { getCall, isUuid, listCalls, SORT_COLUMNS, type CallFilter } from '../../core/calls/history.ts';
import {
  ANALYSIS_STATUSES, BROWSER_WEBRTC, CALL_SOURCES, CONNECTION_STATUSES, ENDED_REASONS, STATUSES, TELEPHONY_PASSTHROUGH, TRANSPORTS, toDetail, toListItem,
  type RejectReason,
} from '../../core/calls/model.ts';
import {
  audioUrl, CALL_VALIDATION_ERROR, classifyRequest, contextVariablesSchema, offerUrl, parseEnvelope,
} from '../../core/calls/request.ts';
import { insertRejectedCall, type CallAgentRef, type NewCall } from '../../core/calls/rows.ts';
import { HttpError, type ErrorDetail } from '../../core/http-error.ts';
import { parseIsoInstant } from '../../core/iso-date.ts';
import { checkAgentProviders } from '../../core/providers.ts';
import { weightOf, type WeightTransport } from '../../core/media-nodes.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { to422, toCallDetails, zodToItems, type ValidationItem } from '../../core/validation.ts';
import type { ApiDeps } from '../deps.ts';
import { telephonyCall } from './telephony/calls.ts';
import { requireOrg } from '../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';

const callValidationError = (items: ValidationItem[]) => ({ error: CALL_VALIDATION_ERROR, details: toCallDetails(items) });
const prefixed = (prefix: string, items: ValidationItem[]): ValidationItem[] => items.map((i) => ({ ...i, path: [prefix, ...i.path] }));

// ---------------------------------------------------------------------------------------------------------------
// GET /calls query

function csvValues(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const joined = Array.isArray(v) ? v.join(',') : String(v);
  const parts = joined.split(',').filter((p) => p.length > 0);
  return parts.length ? parts : undefined;
}

const quote = (vs: readonly string[]) => `${vs.slice(0, -1).map((v) => `'${v}'`).join(', ')} or '${vs[vs.length - 1]}'`;

/** A csv parameter whose every value must be one of a set (or match a pattern): one 422 item per bad value. */
function checkCsv(
  items: ValidationItem[],
  name: string,
  values: string[] | undefined,
  allowed: readonly string[],
  pattern?: RegExp,
): string[] | undefined {
  if (!values) return undefined;
  for (const v of values) {
    if (allowed.includes(v) || pattern?.test(v)) continue;
    items.push({ type: 'enum', path: [name], msg: `Input should be ${quote(allowed)}${pattern ? ` or match '${pattern.source}'` : ''}`, input: v, ctx: { expected: quote(allowed) } });
  }
  return values;
}

/** ISO 8601 date or date-time (UTC when no offset; core/iso-date.ts). A date-only `to_date` covers that whole day. */
function parseDateParam(items: ValidationItem[], name: string, v: unknown, endOfDay: boolean): string | undefined {
  if (v === undefined || v === '') return undefined;
  const r = parseIsoInstant(String(v), { endOfDay });
  if (!r.ok) {
    items.push({ type: 'datetime_from_date_parsing', path: [name], msg: r.message, input: v });
    return undefined;
  }
  return r.value.text;
}

const scalarQuery = paginationQuery().extend({
  sort_by: z.enum(SORT_COLUMNS).default('ended_at'),
  sort_order: z.enum(['asc', 'desc']).default('desc'),
  agent_id: z.guid().optional(),
  campaign_id: z.coerce.number({ error: 'Input should be a valid integer' }).int().min(1).max(2 ** 53).optional(),
});

function one(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? String(v[v.length - 1]) : String(v);
}

export function parseHistoryQuery(q: Record<string, unknown>) {
  const items: ValidationItem[] = [];
  const scalars = { page: one(q.page), per_page: one(q.per_page), sort_by: one(q.sort_by) || undefined, sort_order: one(q.sort_order) || undefined, agent_id: one(q.agent_id) || undefined, campaign_id: one(q.campaign_id) || undefined };
  const parsed = scalarQuery.safeParse(scalars);
  if (!parsed.success) items.push(...zodToItems(parsed.error, scalars));
  const filter: CallFilter = {
    transport: checkCsv(items, 'transport', csvValues(q.transport), TRANSPORTS),
    status: checkCsv(items, 'status', csvValues(q.status), STATUSES),
    connectionStatus: checkCsv(items, 'connection_status', csvValues(q.connection_status), CONNECTION_STATUSES, TELEPHONY_PASSTHROUGH),
    endedReason: checkCsv(items, 'ended_reason', csvValues(q.ended_reason), ENDED_REASONS),
    callSource: checkCsv(items, 'call_source', csvValues(q.call_source), CALL_SOURCES),
    analysisStatus: checkCsv(items, 'analysis_status', csvValues(q.analysis_status), ANALYSIS_STATUSES),
    tag: csvValues(q.tag),
    fromDate: parseDateParam(items, 'from_date', one(q.from_date), false),
    toDate: parseDateParam(items, 'to_date', one(q.to_date), true),
  };
  const callId = one(q.call_id);
  if (callId) filter.callId = callId.trim();
  const agentName = one(q.agent_name);
  if (agentName) filter.agentName = agentName;
  let phone = one(q.phone_number);
  // An unencoded '+' arrives as a space: '+14155550100' → ' 14155550100'.
  if (phone && /^ \d+$/.test(phone)) phone = `+${phone.slice(1)}`;
  if (phone) filter.phoneNumber = phone.trim();
  const success = one(q.success);
  if (success === 'true' || success === 'false') filter.success = success === 'true';
  else if (success !== undefined && success !== '') items.push({ type: 'bool_parsing', path: ['success'], msg: "Input should be 'true' or 'false'", input: success });
  const provider = one(q.telephony_provider);
  if (provider) filter.telephonyProvider = provider;
  if (items.length || !parsed.success) throw new HttpError(422, to422(items, 'query'));
  const p = parsed.data;
  if (p.agent_id) filter.agentId = p.agent_id.toLowerCase();
  if (p.campaign_id !== undefined) filter.campaignId = p.campaign_id;
  return { filter, sort: { by: p.sort_by, order: p.sort_order }, page: { page: p.page, per_page: p.per_page } };
}

// ---------------------------------------------------------------------------------------------------------------

const testCallBody = z.object({
  contextVariables: contextVariablesSchema.nullish(),
  telephonySim: z.boolean().optional(),
});

export function callsRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;
  const gateDeps: GateDeps = { db, config, logger: deps.logger, temporal: deps.temporal };
  const policy = policyFromConfig(config);
  // The URL base a new browser/WebSocket call is handed: the media node its room was reserved on, when that node has
  // its own address (MEDIA_PUBLIC_URL), else the shared PUBLIC_URL behind the proxy. A call that connects to another
  // node than its assigned one is served there under that node's own admission.
  const baseOf = (a: Extract<Admission, { ok: true }>) => (a.node?.public_url ? `${a.node.public_url}/api/v1` : config.baseUrl);
  const media = (snapshot: AgentConfig, t: WeightTransport) => ({ weight: weightOf(snapshot, t), deadAfterS: config.MEDIA_NODE_DEAD_AFTER_S });

  /**
   * The config a call runs with, frozen on its row: context variables merged (saved < call-time non-blank <
   * built-ins; a web call has no phone leg, so {{user_number}}/{{agent_number}} are '' — liveCallBuiltins, the
   * rule media applies too), placeholders substituted, then validated again, so that a
   * substituted value cannot smuggle in what validation refuses (e.g. a tool URL whose host was a placeholder).
   * Models are not re-checked (a saved agent's model may have left the catalog since it was saved).
   */
  async function frozenSnapshot(orgId: string, config: AgentConfig, callVariables: Record<string, string> | null) {
    const resolved = resolveSnapshot(config, {
      savedVariables: config.contextVariables ?? {},
      callVariables,
      builtins: liveCallBuiltins({ customerNumber: null, platformNumber: null }),
    });
    // The config was accepted already (saved, or validated moments ago): its saved tools stay usable if archived.
    const checked = await validateAgentConfig(resolved, { db, orgId, policy, partialModelCheck: true, referencedTools: savedToolRefs(config), referencedRecordings: recordingRefs(config), referencedWebhook: webhookRef(config) });
    if (!checked.ok) {
      return { ok: false as const, items: checked.kind === 'schema' ? checked.items : [{ type: 'value_error', path: checked.path, msg: checked.message, input: null }] };
    }
    return { ok: true as const, config: resolved };
  }

  /** Persist the rejected attempt and answer with the spec's error. */
  async function reject(
    ctx: ParameterizedContext,
    row: Omit<NewCall, 'logs'>,
    reason: RejectReason,
    status: number,
    detail: ErrorDetail,
  ): Promise<never> {
    try {
      await insertRejectedCall(db, { ...row, reason, payload: detail });
    } catch (err) {
      ctx.state.log.error({ err, reason }, 'could not record rejected call');
    }
    throw new HttpError(status, detail);
  }

  router.post('/call', async (ctx) => {
    const orgId = requireOrg(ctx);
    const raw: unknown = ctx.request.body;
    const redacted = scrubCredentials(raw);
    const kind = classifyRequest(raw);
    const rawObj = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
    const rawAgent = rawObj.agent;
    const inlineName = rawAgent && typeof rawAgent === 'object' && typeof (rawAgent as { name?: unknown }).name === 'string'
      ? (rawAgent as { name: string }).name.slice(0, 255) : null;
    const rawVars = contextVariablesSchema.safeParse(rawObj.contextVariables);
    let agentRef: CallAgentRef | null = inlineName ? { id: null, uuid: null, name: inlineName } : null;
    const rejectedRow = (): Omit<NewCall, 'logs'> => ({
      organizationId: orgId,
      ...kind,
      agent: agentRef,
      configSnapshot: redacted,
      contextVariables: rawVars.success ? rawVars.data : null,
    });

    // A body that is not JSON at all (api/middleware/body.ts left the refusal to this route): its row, then the 400.
    if (ctx.state.malformedJson instanceof HttpError) return reject(ctx, rejectedRow(), 'schema_validation', 400, ctx.state.malformedJson.detail);
    // Values jsonb cannot hold (NUL, unpaired surrogates), `__proto__` keys, absurd nesting: found by the input guard
    // (api/middleware/guard.ts), which leaves the answer here because a rejected call is recorded as a call row.
    const unstorable = ctx.state.unstorable;
    if (unstorable?.length) return reject(ctx, rejectedRow(), 'schema_validation', 400, callValidationError(unstorable));

    const env = parseEnvelope(raw);
    if (!env.ok) {
      if (env.kind === 'string') return reject(ctx, rejectedRow(), 'schema_validation', 400, env.detail);
      // Report the inline agent's own failures in the same answer.
      const items = [...env.items];
      if (rawAgent !== undefined && rawAgent !== null && (rawObj.agentId === undefined || rawObj.agentId === null)) {
        const checked = await validateAgentConfig(rawAgent, { db, orgId, policy });
        if (!checked.ok && checked.kind === 'schema') items.push(...prefixed('agent', checked.items));
      }
      return reject(ctx, rejectedRow(), 'schema_validation', 400, callValidationError(items));
    }
    const body = env.body;

    // The agent: saved (by UUID, in this organization) or inline (validated, models checked against the catalog).
    let agentConfig: AgentConfig;
    if (body.agentId) {
      const agent = await loadAgent(db, orgId, body.agentId.toLowerCase());
      if (!agent) return reject(ctx, rejectedRow(), 'agent_not_found', 400, 'agent_not_found');
      agentRef = { id: agent.id, uuid: agent.uuid, name: agent.name };
      agentConfig = agent.config;
    } else {
      const checked = await validateAgentConfig(body.agent, { db, orgId, policy });
      if (!checked.ok) {
        if (checked.kind === 'model') return reject(ctx, rejectedRow(), 'model_validation', 422, checked.message);
        return reject(ctx, rejectedRow(), 'schema_validation', 400, callValidationError(prefixed('agent', checked.items)));
      }
      agentRef = { id: null, uuid: null, name: checked.config.name };
      agentConfig = checked.config;
    }

    // A provider this install cannot run (no adapter: 501; credential unset: 400) is refused here, before a pending
    // row could take a concurrency slot, on every transport.
    const runnable = checkAgentProviders(config, agentConfig);
    if (!runnable.ok) return reject(ctx, rejectedRow(), runnable.reason, runnable.status, runnable.detail);

    if (body.type) {
      // Phone calls: outbound dial / inbound registration (api/routes/telephony/calls.ts).
      return telephonyCall({
        ctx, deps, orgId, body, agentConfig, agentRef: agentRef!, redacted,
        reject: (reason, status, detail) => reject(ctx, rejectedRow(), reason, status, detail),
      });
    }

    const callVariables = body.contextVariables ?? null;
    const snapshot = await frozenSnapshot(orgId, agentConfig, callVariables);
    if (!snapshot.ok) {
      const items = body.agentId ? snapshot.items : prefixed('agent', snapshot.items);
      return reject(ctx, rejectedRow(), 'snapshot_validation', 400, callValidationError(items));
    }

    // room on a media node is reserved with the row: no node with room → 503, nothing handed out
    const webrtc = body.transport === 'webrtc';
    const admission = await admitCall(gateDeps, {
      organizationId: orgId,
      ...(webrtc ? BROWSER_WEBRTC : { transport: 'websocket', callSource: 'websocket' }),
      tags: ['api', 'webcall'],
      agent: agentRef,
      configSnapshot: snapshot.config,
      contextVariables: callVariables,
    }, { configSnapshot: redacted }, media(snapshot.config, webrtc ? 'webrtc' : 'websocket'));
    if (!admission.ok) throw gateError(admission.rejection);
    const base = baseOf(admission);
    if (webrtc) {
      ctx.status = 201;
      ctx.body = { callId: admission.callId, offerUrl: offerUrl(base, admission.callId), transport: 'webrtc', status: 'pending' };
    } else {
      ctx.body = { callId: admission.callId, audioUrl: audioUrl(base, admission.callId), transport: 'websocket', status: 'pending' };
    }
  });

  router.post('/agents/:agent_uuid/test-call', async (ctx) => {
    const orgId = requireOrg(ctx);
    const uuid = ctx.params.agent_uuid ?? '';
    const raw: unknown = ctx.request.body ?? {};
    const parsed = testCallBody.safeParse(raw);
    const body = parsed.success ? parsed.data : {};
    // Values jsonb cannot hold (NUL, unpaired surrogates) are not copied onto the rejected row's snapshot.
    const storable = typeof raw === 'object' && raw && !Array.isArray(raw) && preCheck(raw).length === 0 ? raw : {};
    const row = (agent: CallAgentRef | null): Omit<NewCall, 'logs'> => ({
      organizationId: orgId,
      ...BROWSER_WEBRTC,
      tags: ['webcall', 'test_call'],
      agent,
      configSnapshot: scrubCredentials({ agentId: uuid, ...storable }),
      contextVariables: body.contextVariables ?? null,
      telephonySim: body.telephonySim ?? false,
    });
    const agent = isUuid(uuid) ? await loadAgent(db, orgId, uuid.toLowerCase()) : null;
    if (ctx.state.malformedJson instanceof HttpError) return reject(ctx, row(agent ? { id: agent.id, uuid: agent.uuid, name: agent.name } : null), 'schema_validation', 400, ctx.state.malformedJson.detail);
    // Values jsonb cannot hold, found by the input guard (api/middleware/guard.ts), which left the answer here.
    if (ctx.state.refusedBody instanceof HttpError) return reject(ctx, row(agent ? { id: agent.id, uuid: agent.uuid, name: agent.name } : null), 'schema_validation', ctx.state.refusedBody.status, ctx.state.refusedBody.detail);
    // A body that fails validation is a refused attempt like any other: its rejected row, then the 422.
    if (!parsed.success) {
      return reject(ctx, row(agent ? { id: agent.id, uuid: agent.uuid, name: agent.name } : null), 'schema_validation', 422, to422(zodToItems(parsed.error, raw)));
    }
    if (!agent) return reject(ctx, row(null), 'agent_not_found', 404, 'Agent not found');
    const ref = { id: agent.id, uuid: agent.uuid, name: agent.name };
    const runnable = checkAgentProviders(config, agent.config);
    if (!runnable.ok) return reject(ctx, row(ref), runnable.reason, runnable.status, runnable.detail);
    const snapshot = await frozenSnapshot(orgId, agent.config, body.contextVariables ?? null);
    if (!snapshot.ok) return reject(ctx, row(ref), 'snapshot_validation', 400, callValidationError(snapshot.items));
    const admission = await admitCall(gateDeps, { ...row(ref), configSnapshot: snapshot.config }, { configSnapshot: row(ref).configSnapshot }, media(snapshot.config, 'webrtc'));
    if (!admission.ok) throw gateError(admission.rejection);
    ctx.body = { callId: admission.callId, offerUrl: offerUrl(baseOf(admission), admission.callId), status: 'pending', agentName: agent.name };
  });

  router.get('/calls', async (ctx) => {
    const orgId = requireOrg(ctx);
    const { filter, sort, page } = parseHistoryQuery(ctx.query as Record<string, unknown>);
    const { rows, total } = await listCalls(db, orgId, filter, sort, pageWindow(page));
    ctx.body = envelope(rows.map(toListItem), total, page);
  });

  router.get('/calls/:callId', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await getCall(db, orgId, ctx.params.callId ?? '');
    if (!row) throw new HttpError(404, 'Call not found');
    // The stored snapshot keeps the headers the pipeline sends (webhook, tools); the API shows them scrubbed.
    ctx.body = toDetail({ ...row, config_snapshot: scrubCredentials(row.config_snapshot) });
  });
}
