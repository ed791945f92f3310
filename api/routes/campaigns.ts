// Campaigns (spec "Campaign", "States and transitions", "Campaigns"): create from a validated CSV, list, get, edit,
// start/pause/resume (updates of the `campaign-<id>` workflow, whose validators refuse illegal transitions), the
// campaign's call rows and a per-contact CSV report. Cross-organization ids → 404 'Campaign not found'.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import { CsvError } from '../../core/campaigns/csv.ts';
import {
  createCampaignBody,
  DEFAULT_CIRCUIT_BREAKER,
  DEFAULT_MAX_CONCURRENCY,
  DEFAULT_RETRY_CONFIG,
  updateCampaignBody,
  type CampaignState,
  type EditableSettings,
} from '../../core/campaigns/schemas.ts';
import { readContacts, resolveSourceKey, SourceError } from '../../core/campaigns/source.ts';
import {
  CAMPAIGN_NOT_FOUND,
  callerIdCount,
  campaignResponse,
  findTelephonyConfig,
  getCampaign,
  listCampaigns,
  orgCeiling,
  settingsOf,
  type CampaignRow,
} from '../../core/campaigns/store.ts';
import { listCalls } from '../../core/calls/history.ts';
import { toListItem } from '../../core/calls/model.ts';
import { isUuid } from '../../core/calls/history.ts';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import {
  CAMPAIGN_WORKFLOW_TYPE,
  campaignSearchAttributes,
  campaignWorkflowId,
  editUpdate,
  ILLEGAL_TRANSITION,
  pauseUpdate,
  resumeUpdate,
  startUpdate,
} from '../../workflows/campaign/messages.ts';
import type { AgentConfig } from '../../core/agent-config/index.ts';
import { checkAgentProviders } from '../../core/providers.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import type { ApiDeps } from '../deps.ts';
import { AGENT_NOT_FOUND } from './agents.ts';
import { parseHistoryQuery } from './calls.ts';
import { carrierName } from './telephony/carriers.ts';
import { agentCarrierProblems, problemsText } from '../../core/telephony/fit.ts';
import { carrierFor } from '../../core/telephony/registry.ts';

export const NO_TELEPHONY_CONFIG = 'no telephony configuration available for organization';
export const TELEPHONY_CONFIG_NOT_FOUND = 'telephony_configuration_not_found';
export const COMPLETED_CAMPAIGN = 'Cannot update a completed campaign';
const TEMPORAL_UNAVAILABLE = 'Campaign dialing is unavailable: Temporal is not configured';

export const callerLimitMessage = (x: number, n: number, configName: string) =>
  `max_concurrency (${x}) cannot exceed ${n}. You have ${n} phone number(s) in telephony configuration '${configName}' to call from; add numbers to dial more calls at once.`;
export const orgLimitMessage = (x: number, y: number) => `max_concurrency (${x}) cannot exceed organization limit (${y})`;

const idParam = z.object({ id: z.coerce.number({ error: 'Input should be a valid integer' }).int().min(1) });

function campaignId(ctx: ParameterizedContext & { params: Record<string, string> }): number {
  // Ids that cannot exist are simply not found (like another organization's).
  const parsed = idParam.safeParse(ctx.params);
  if (!parsed.success || !Number.isSafeInteger(parsed.data.id)) throw new HttpError(404, CAMPAIGN_NOT_FOUND);
  return parsed.data.id;
}

const csvCell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function campaignsRoutes(router: Router, deps: ApiDeps): void {
  const { db, storage, config } = deps;

  const requireTemporal = () => {
    if (!deps.temporal) throw new HttpError(503, TEMPORAL_UNAVAILABLE);
    return deps.temporal;
  };

  async function load(orgId: string, id: number): Promise<CampaignRow> {
    const row = await getCampaign(db, orgId, id);
    if (!row) throw new HttpError(404, CAMPAIGN_NOT_FOUND);
    return row;
  }

  /** Checks max_concurrency against the caller-number count of the config and the organization ceiling. */
  async function checkConcurrency(q: Pick<typeof db, 'oneFirst' | 'maybeOneFirst'>, orgId: string, configId: number, configName: string, x: number) {
    const numbers = await callerIdCount(q, orgId, configId);
    const ceiling = await orgCeiling(q, config, orgId);
    if (x > numbers) throw new HttpError(400, callerLimitMessage(x, numbers, configName));
    if (x > ceiling) throw new HttpError(400, orgLimitMessage(x, ceiling));
  }

  /**
   * The campaign's agent can run on this install, checked as POST /call does (core/providers.ts): an engine without
   * an adapter → 501 provider_not_supported, a vendor key missing → 400 naming the variable. At create and at start.
   */
  async function checkAgentRunnable(orgId: string, agentId: number, provider: string | null) {
    const agentConfig = await db.maybeOneFirst(sql.type(z.object({ config: z.record(z.string(), z.unknown()) }))`SELECT config FROM agents WHERE id = ${agentId}`);
    if (!agentConfig || !['llm', 'stt', 'tts'].every((f) => typeof (agentConfig[f] as { provider?: unknown } | undefined)?.provider === 'string')) return;
    const runnable = checkAgentProviders(config, agentConfig as unknown as AgentConfig);
    if (!runnable.ok) throw new HttpError(runnable.status, runnable.detail);
    // what the campaign's carrier cannot do for the agent on outbound calls (core/telephony/fit.ts)
    const adapter = provider ? carrierFor(provider) : null;
    const problems = adapter ? await agentCarrierProblems(db, orgId, adapter, 'outbound', agentConfig) : [];
    if (problems.length) throw new HttpError(400, `The campaign's agent cannot place ${carrierName(adapter!.id)} calls: ${problemsText(problems)}`);
  }

  /** Runs a workflow update; an illegal transition (validator) or a closed workflow is a 400 naming the state. */
  async function update(row: CampaignRow, run: (handle: ReturnType<NonNullable<ApiDeps['temporal']>['workflow']['getHandle']>) => Promise<unknown>, action: string) {
    const temporal = requireTemporal();
    try {
      await run(temporal.workflow.getHandle(campaignWorkflowId(row.id)));
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause as { type?: string; message?: string } | undefined;
        if (cause?.type === ILLEGAL_TRANSITION && cause.message) throw new HttpError(400, cause.message);
        throw err;
      }
      if (err instanceof WorkflowNotFoundError) {
        const now = await load(row.organization_id, row.id);
        throw new HttpError(400, `Cannot ${action} a campaign in state '${now.state}'`);
      }
      throw err;
    }
  }

  router.post('/campaign/create', async (ctx) => {
    const orgId = requireOrg(ctx);
    const body = parseOr422(createCampaignBody, ctx.request.body ?? {});

    if (!isUuid(body.agent_uuid)) throw new HttpError(404, AGENT_NOT_FOUND);
    const agent = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM agents WHERE uuid = ${body.agent_uuid} AND organization_id = ${orgId} AND status = 'active'`);
    if (!agent) throw new HttpError(404, AGENT_NOT_FOUND);
    await checkAgentRunnable(orgId, agent.id, null);

    const configId = body.telephony_configuration_id ?? null;
    const tconf = await findTelephonyConfig(db, orgId, configId);
    if (!tconf) {
      if (configId !== null) throw new HttpError(400, TELEPHONY_CONFIG_NOT_FOUND);
      throw new HttpError(409, NO_TELEPHONY_CONFIG);
    }
    await checkAgentRunnable(orgId, agent.id, tconf.provider);
    const maxConcurrency = body.max_concurrency ?? DEFAULT_MAX_CONCURRENCY;
    await checkConcurrency(db, orgId, tconf.id, tconf.name, maxConcurrency);

    // The CSV is validated before anything is saved.
    let sourceKey: string;
    try {
      sourceKey = await resolveSourceKey(db, storage, orgId, body.source_id);
      await readContacts(storage, sourceKey);
    } catch (err) {
      if (err instanceof SourceError || err instanceof CsvError) throw new HttpError(400, err.message);
      throw err;
    }

    // The configuration row is key-share locked by the insert: a concurrent DELETE of the configuration either waits
    // for this campaign (and then refuses, 409) or has removed it first (nothing inserted: its 400).
    const id = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      INSERT INTO campaigns (organization_id, name, agent_id, source_type, source_id, source_key, telephony_configuration_id,
                             max_concurrency, retry_config, schedule_config, circuit_breaker, logs)
      SELECT ${orgId}, ${body.name}, ${agent.id}, ${body.source_type}, ${body.source_id}, ${sourceKey}, t.id,
             ${maxConcurrency}, ${JSON.stringify(body.retry_config ?? DEFAULT_RETRY_CONFIG)}::jsonb,
             ${body.schedule_config ? JSON.stringify(body.schedule_config) : null}::jsonb,
             ${JSON.stringify(body.circuit_breaker ?? DEFAULT_CIRCUIT_BREAKER)}::jsonb,
             ${JSON.stringify([{ ts: new Date().toISOString(), level: 'info', event: 'created', message: 'Campaign created', details: { telephony_configuration_id: tconf.id } }])}::jsonb
      FROM (SELECT id FROM telephony_configs WHERE id = ${tconf.id} AND organization_id = ${orgId} FOR KEY SHARE) t
      RETURNING id`);
    if (id === null) throw new HttpError(400, TELEPHONY_CONFIG_NOT_FOUND);
    ctx.body = campaignResponse(await load(orgId, id));
  });

  router.get('/campaign', async (ctx) => {
    const orgId = requireOrg(ctx);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { rows, total } = await listCampaigns(db, orgId, pageWindow(page));
    ctx.body = envelope(rows.map(campaignResponse), total, page);
  });

  router.get('/campaign/:id', async (ctx) => {
    const orgId = requireOrg(ctx);
    ctx.body = campaignResponse(await load(orgId, campaignId(ctx)));
  });

  router.patch('/campaign/:id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const id = campaignId(ctx);
    const body = parseOr422(updateCampaignBody, ctx.request.body ?? {});
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    // Read, then write the same fields, under a row lock (spec: PATCH reads then writes).
    const row = await db.transaction(async (tx) => {
      const locked = await tx.maybeOne(sql.type(z.object({ state: z.string(), telephony_configuration_id: z.number() }))`
        SELECT state, telephony_configuration_id FROM campaigns WHERE id = ${id} AND organization_id = ${orgId} FOR UPDATE`);
      if (!locked) throw new HttpError(404, CAMPAIGN_NOT_FOUND);
      if (locked.state === 'completed' || locked.state === 'failed') throw new HttpError(400, COMPLETED_CAMPAIGN);
      if (body.max_concurrency !== undefined) {
        const tconf = await findTelephonyConfig(tx, orgId, locked.telephony_configuration_id);
        await checkConcurrency(tx, orgId, locked.telephony_configuration_id, tconf?.name ?? String(locked.telephony_configuration_id), body.max_concurrency);
      }
      const sets = [sql.fragment`updated_at = now()`];
      if (body.name !== undefined) sets.push(sql.fragment`name = ${body.name}`);
      if (body.max_concurrency !== undefined) sets.push(sql.fragment`max_concurrency = ${body.max_concurrency}`);
      if (body.retry_config !== undefined) sets.push(sql.fragment`retry_config = ${JSON.stringify(body.retry_config)}::jsonb`);
      if ('schedule_config' in raw && body.schedule_config !== undefined) {
        sets.push(sql.fragment`schedule_config = ${body.schedule_config ? JSON.stringify(body.schedule_config) : null}::jsonb`);
      }
      if (body.circuit_breaker !== undefined) sets.push(sql.fragment`circuit_breaker = ${JSON.stringify(body.circuit_breaker)}::jsonb`);
      await tx.query(sql.unsafe`UPDATE campaigns SET ${sql.join(sets, sql.fragment`, `)} WHERE id = ${id} AND organization_id = ${orgId}`);
      return getCampaign(tx, orgId, id);
    });
    if (!row) throw new HttpError(404, CAMPAIGN_NOT_FOUND);
    // A live campaign follows the new settings at once (its workflow holds them).
    const edit: EditableSettings = {};
    if (body.max_concurrency !== undefined || body.retry_config !== undefined || body.schedule_config !== undefined || body.circuit_breaker !== undefined) {
      const s = settingsOf(row);
      if (body.max_concurrency !== undefined) edit.maxConcurrency = s.maxConcurrency;
      if (body.retry_config !== undefined) edit.retry = s.retry;
      if ('schedule_config' in raw && body.schedule_config !== undefined) edit.schedule = s.schedule;
      if (body.circuit_breaker !== undefined) edit.breaker = s.breaker;
    }
    if (Object.keys(edit).length && (['syncing', 'running', 'paused'] as string[]).includes(row.state)) {
      await update(row, (h) => h.executeUpdate(editUpdate, { args: [edit] }), 'update').catch((err: unknown) => {
        // The campaign finished between the write and the update: nothing left to apply the edit to.
        if (err instanceof HttpError) return;
        throw err;
      });
    }
    ctx.body = campaignResponse(await load(orgId, id));
  });

  router.post('/campaign/:id/start', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await load(orgId, campaignId(ctx));
    if (row.state !== 'created') throw new HttpError(400, `Cannot start a campaign in state '${row.state}'`);
    const tconf = await findTelephonyConfig(db, orgId, row.telephony_configuration_id);
    await checkAgentRunnable(orgId, row.agent_id, tconf?.provider ?? null);
    const temporal = requireTemporal();
    const op = new WithStartWorkflowOperation(CAMPAIGN_WORKFLOW_TYPE, {
      workflowId: campaignWorkflowId(row.id),
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ campaignId: row.id, organizationId: orgId }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: campaignSearchAttributes({ campaignId: row.id, organizationId: orgId, state: 'created' }),
    });
    try {
      await temporal.workflow.executeUpdateWithStart(startUpdate, { startWorkflowOperation: op });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause as { type?: string; message?: string } | undefined;
        if (cause?.type === ILLEGAL_TRANSITION && cause.message) throw new HttpError(400, cause.message);
      }
      throw err;
    }
    ctx.body = campaignResponse(await load(orgId, row.id));
  });

  const transition = (action: 'pause' | 'resume', allowed: CampaignState[]) => async (ctx: ParameterizedContext & { params: Record<string, string> }) => {
    const orgId = requireOrg(ctx);
    const row = await load(orgId, campaignId(ctx));
    if (!allowed.includes(row.state as CampaignState)) throw new HttpError(400, `Cannot ${action} a campaign in state '${row.state}'`);
    await update(row, (h) => h.executeUpdate(action === 'pause' ? pauseUpdate : resumeUpdate), action);
    ctx.body = campaignResponse(await load(orgId, row.id));
  };
  router.post('/campaign/:id/pause', transition('pause', ['running', 'syncing']));
  router.post('/campaign/:id/resume', transition('resume', ['paused']));

  router.get('/campaign/:id/calls', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await load(orgId, campaignId(ctx));
    const { filter, sort, page } = parseHistoryQuery(ctx.query as Record<string, unknown>);
    const { rows, total } = await listCalls(db, orgId, { ...filter, campaignId: row.id }, sort, pageWindow(page));
    ctx.body = envelope(rows.map(toListItem), total, page);
  });

  // One line per contact with its last call's analysis: status, verdict, and one column per top-level property of
  // the structured data (the properties of the agent's current schema and of every exported call's frozen schema,
  // sorted by name: stored objects keep no key order); a column named like a fixed one gets a `data.` prefix.
  router.get('/campaign/:id/report', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await load(orgId, campaignId(ctx));
    const contacts = await db.any(sql.type(z.object({
      row_number: z.number(), phone_number: z.string(), status: z.string(), attempts: z.number(), last_status: z.string().nullable(),
      last_ended_reason: z.string().nullable(), last_duration_seconds: z.number().nullable(), last_call_id: z.string().nullable(),
      next_attempt_at: z.string().nullable(), voicemail_left: z.boolean().nullable(), analysis: z.unknown(), analysis_success: z.boolean().nullable(),
      schema_properties: z.unknown(),
    }))`
      SELECT cc.row_number, cc.phone_number, cc.status, cc.attempts, cc.last_status, cc.last_ended_reason, cc.last_duration_seconds,
             cc.last_call_id::text, cc.next_attempt_at,
             CASE WHEN cl.id IS NULL THEN NULL ELSE 'voicemail_left' = ANY(cl.tags) END AS voicemail_left, cl.analysis, cl.analysis_success,
             cl.config_snapshot #> '{analysis,structuredData,schema,properties}' AS schema_properties
      FROM campaign_contacts cc
      LEFT JOIN calls cl ON cl.id = cc.last_call_id AND cl.organization_id = ${orgId}
      WHERE cc.campaign_id = ${row.id} ORDER BY cc.row_number`);
    const agentSchema = await db.maybeOneFirst(sql.type(z.object({ p: z.unknown() }))`
      SELECT config #> '{analysis,structuredData,schema,properties}' AS p FROM agents WHERE id = ${row.agent_id} AND organization_id = ${orgId}`);
    const properties: string[] = [];
    for (const p of [agentSchema, ...contacts.map((c) => c.schema_properties)]) {
      if (p && typeof p === 'object' && !Array.isArray(p)) for (const k of Object.keys(p)) if (!properties.includes(k)) properties.push(k);
    }
    properties.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const fixed = ['row_number', 'phone_number', 'contact_status', 'attempts', 'last_status', 'ended_reason', 'duration_seconds', 'last_call_id', 'next_attempt_at',
      'voicemail_left', 'analysis_status', 'success', 'success_score', 'success_reason'];
    const header = [...fixed, ...properties.map((p) => (fixed.includes(p) ? `data.${p}` : p))];
    const lines = [header.map(csvCell).join(',')];
    const cellOf = (v: unknown) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v);
    for (const c of contacts) {
      const a = (c.analysis && typeof c.analysis === 'object' ? c.analysis : {}) as { status?: string; structuredData?: unknown; successEvaluation?: { score?: unknown; reason?: unknown } | null };
      const data = (a.structuredData && typeof a.structuredData === 'object' ? a.structuredData : {}) as Record<string, unknown>;
      lines.push([c.row_number, c.phone_number, c.status, c.attempts, c.last_status, c.last_ended_reason, c.last_duration_seconds,
        c.last_call_id, c.next_attempt_at ? new Date(c.next_attempt_at).toISOString() : null, c.voicemail_left,
        a.status ?? null, c.analysis_success, a.successEvaluation?.score ?? null, a.successEvaluation?.reason ?? null,
        ...properties.map((p) => cellOf(data[p]))].map(csvCell).join(','));
    }
    ctx.set('content-disposition', `attachment; filename="campaign-${row.id}-report.csv"`);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.body = `${lines.join('\r\n')}\r\n`;
  });
}
