// Agents API (spec "Agents"): create, list, get, PATCH (deep merge under a row lock), archive, duplicate, preview.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { policyFromConfig, type OutboundPolicy } from '../../core/net/ssrf.ts';
import { toAgentConfigDetails, toCallDetails, type ValidationItem } from '../../core/validation.ts';
import {
  agentRow,
  isUuid,
  loadAgent,
  mergePatch,
  resolveSnapshot,
  savedToolRefs,
  recordingRefs,
  validateAgentConfig,
  webhookRef,
  type AgentRow,
  type ValidateResult,
} from '../../core/agent-config/index.ts';
import { agentUseProblems } from '../../core/telephony/fit.ts';
import { contextVariablesSchema } from '../../core/agent-config/schema.ts';
import { issuesToItems } from '../../core/agent-config/issues.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import type { ApiDeps } from '../deps.ts';

export const AGENT_NOT_FOUND = 'Agent not found';
export const INVALID_AGENT_CONFIG = 'invalid_agent_config';
export const CALL_VALIDATION_FAILED = 'Agent configuration validation failed';

export function agentEnvelope(r: Pick<AgentRow, 'uuid' | 'status' | 'created_at' | 'updated_at' | 'config'>) {
  return { uuid: r.uuid, status: r.status, createdAt: r.created_at, updatedAt: r.updated_at, config: r.config };
}

const AGENT_COLUMNS = sql.fragment`id, uuid::text AS uuid, name, config, webhook_secret, status, created_at, updated_at`;

/** Create/update failures: 400 {error: 'invalid_agent_config', details: [{loc, msg, type}]}. */
function invalidConfig(items: ValidationItem[]): HttpError {
  return new HttpError(400, { error: INVALID_AGENT_CONFIG, details: toAgentConfigDetails(items) });
}

function resultItems(r: Exclude<ValidateResult, { ok: true }>): ValidationItem[] {
  return r.kind === 'schema' ? r.items : [{ type: 'value_error', path: r.path, msg: r.message, input: undefined }];
}

const webhookSecretSchema = z.string().min(1).max(512).nullable();

/** Splits `webhookSecret` (write-only sibling of the config fields) off a create/PATCH body. */
function popWebhookSecret(body: unknown): { rest: Record<string, unknown>; secret: string | null | undefined } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidConfig([{ type: 'dict_type', path: [], msg: 'Input should be a valid dictionary or object', input: body }]);
  }
  const { webhookSecret, ...rest } = body as Record<string, unknown>;
  if (webhookSecret === undefined) return { rest, secret: undefined };
  const parsed = webhookSecretSchema.safeParse(webhookSecret);
  if (!parsed.success) throw invalidConfig(issuesToItems(parsed.error, { webhookSecret }, ['webhookSecret']));
  return { rest, secret: parsed.data };
}

const listQuery = paginationQuery().extend({
  status: z.enum(['active', 'archived', 'all']).default('active'),
  include_archived: z.enum(['true', 'false']).optional(),
  name: z.string().max(120).optional(),
});

const previewBody = z.strictObject({
  agentId: z.string().max(100).nullable().optional(),
  agent: z.unknown().optional(),
  contextVariables: contextVariablesSchema.nullable().optional(),
});

export function agentsRoutes(router: Router, deps: ApiDeps): void {
  const { db } = deps;
  const policy: OutboundPolicy = policyFromConfig(deps.config);

  const fetchRow = async (ctx: ParameterizedContext, org: string) => {
    const uuid = ctx.params.agent_uuid;
    if (!isUuid(uuid)) throw new HttpError(404, AGENT_NOT_FOUND);
    const row = await db.maybeOne(sql.type(agentRow)`
      SELECT ${AGENT_COLUMNS} FROM agents WHERE uuid = ${uuid} AND organization_id = ${org} AND status = 'active'`);
    if (!row) throw new HttpError(404, AGENT_NOT_FOUND);
    return row;
  };

  router.post('/agents/preview-snapshot', async (ctx) => {
    const org = requireOrg(ctx);
    const body = ctx.request.body ?? {};
    const parsed = previewBody.safeParse(body);
    if (!parsed.success) throw new HttpError(400, { error: CALL_VALIDATION_FAILED, details: toCallDetails(issuesToItems(parsed.error, body)) });
    const { agentId, agent, contextVariables } = parsed.data;
    const hasId = agentId !== undefined && agentId !== null;
    const hasAgent = agent !== undefined && agent !== null;
    if (hasId === hasAgent) throw new HttpError(400, "Must provide either 'agentId' or 'agent'.");
    let config;
    if (hasId) {
      const loaded = await loadAgent(db, org, agentId!);
      if (!loaded) throw new HttpError(404, AGENT_NOT_FOUND);
      config = loaded.config;
    } else {
      const r = await validateAgentConfig(agent, { db, orgId: org, policy });
      if (!r.ok) {
        if (r.kind === 'model') throw new HttpError(422, r.message);
        throw new HttpError(400, { error: CALL_VALIDATION_FAILED, details: toCallDetails(r.items.map((i) => ({ ...i, path: ['agent', ...i.path] }))) });
      }
      config = r.config;
    }
    ctx.body = { snapshot: resolveSnapshot(config, { callVariables: contextVariables ?? null, builtins: {} }) };
  });

  router.post('/agents', async (ctx) => {
    const org = requireOrg(ctx);
    const { rest, secret } = popWebhookSecret(ctx.request.body);
    // one transaction: the documents the agent's query tools name stay locked until the agent exists
    const row = await db.transaction(async (trx) => {
      const r = await validateAgentConfig(rest, { db: trx, orgId: org, policy });
      if (!r.ok) throw invalidConfig(resultItems(r));
      return trx.one(sql.type(agentRow)`
        INSERT INTO agents (organization_id, name, config, webhook_secret)
        VALUES (${org}, ${r.config.name}, ${sql.jsonb(r.config as never)}, ${secret ?? null})
        RETURNING ${AGENT_COLUMNS}`);
    });
    ctx.status = 201;
    ctx.body = agentEnvelope(row);
  });

  router.get('/agents', async (ctx) => {
    const org = requireOrg(ctx);
    const q = parseOr422(listQuery, ctx.query, 'query');
    const { limit, offset } = pageWindow(q);
    const status = q.include_archived === 'true' && q.status === 'active' ? 'all' : q.status;
    const where = sql.fragment`organization_id = ${org}
      ${status === 'all' ? sql.fragment`` : sql.fragment`AND status = ${status}`}
      ${q.name ? sql.fragment`AND name ILIKE ${`%${q.name.replace(/[\\%_]/g, (m) => `\\${m}`)}%`}` : sql.fragment``}`;
    const [rows, total] = await Promise.all([
      db.any(sql.type(agentRow)`SELECT ${AGENT_COLUMNS} FROM agents WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM agents WHERE ${where}`),
    ]);
    ctx.body = envelope(rows.map(agentEnvelope), total, q);
  });

  router.get('/agents/:agent_uuid', async (ctx) => {
    const org = requireOrg(ctx);
    ctx.body = agentEnvelope(await fetchRow(ctx, org));
  });

  router.patch('/agents/:agent_uuid', async (ctx) => {
    const org = requireOrg(ctx);
    const uuid = ctx.params.agent_uuid;
    if (!isUuid(uuid)) throw new HttpError(404, AGENT_NOT_FOUND);
    const { rest, secret } = popWebhookSecret(ctx.request.body);
    const row = await db.transaction(async (trx) => {
      const current = await trx.maybeOne(sql.type(agentRow)`
        SELECT ${AGENT_COLUMNS} FROM agents WHERE uuid = ${uuid} AND organization_id = ${org} AND status = 'active' FOR UPDATE`);
      if (!current) throw new HttpError(404, AGENT_NOT_FOUND);
      const merged = mergePatch(current.config, rest);
      // Tools the agent already references stay usable when archived; only newly added ones must be active.
      const r = await validateAgentConfig(merged, { db: trx, orgId: org, policy, referencedTools: savedToolRefs(current.config), referencedRecordings: recordingRefs(current.config), referencedWebhook: webhookRef(current.config) });
      if (!r.ok) throw invalidConfig(resultItems(r));
      // The carriers the agent meets (numbers and bindings it answers, campaigns dialling with it) must be able to do
      // what the new config asks of them; what the stored config already asked is not judged again.
      const before = new Set((await agentUseProblems(trx, org, current, current.config)).map((p) => `${p.msg}|${String(p.input)}`));
      const problems = (await agentUseProblems(trx, org, current, r.config)).filter((p) => !before.has(`${p.msg}|${String(p.input)}`));
      if (problems.length) throw invalidConfig(problems.map((p) => ({ type: 'value_error', path: p.path, msg: p.msg, input: p.input })));
      return trx.one(sql.type(agentRow)`
        UPDATE agents SET config = ${sql.jsonb(r.config as never)}, name = ${r.config.name}, updated_at = now()
          ${secret === undefined ? sql.fragment`` : sql.fragment`, webhook_secret = ${secret}`}
        WHERE id = ${current.id} RETURNING ${AGENT_COLUMNS}`);
    });
    ctx.body = agentEnvelope(row);
  });

  router.delete('/agents/:agent_uuid', async (ctx) => {
    const org = requireOrg(ctx);
    const uuid = ctx.params.agent_uuid;
    if (!isUuid(uuid)) throw new HttpError(404, AGENT_NOT_FOUND);
    const row = await db.maybeOne(sql.type(agentRow)`
      UPDATE agents SET status = 'archived', updated_at = now()
      WHERE uuid = ${uuid} AND organization_id = ${org} AND status = 'active' RETURNING ${AGENT_COLUMNS}`);
    if (!row) throw new HttpError(404, AGENT_NOT_FOUND);
    ctx.body = agentEnvelope(row);
  });

  router.post('/agents/:agent_uuid/duplicate', async (ctx) => {
    const org = requireOrg(ctx);
    const source = await fetchRow(ctx, org);
    const body = parseOr422(z.object({ name: z.string().min(1).max(120).optional() }).nullable(), ctx.request.body ?? null) ?? {};
    const base = source.config as Record<string, unknown>;
    const name = body.name ?? `${source.name} (copy)`.slice(0, 120);
    // The copy references what its source already references (archived saved tools included).
    const r = await validateAgentConfig({ ...base, name }, { db, orgId: org, policy, referencedTools: savedToolRefs(base), referencedRecordings: recordingRefs(base), referencedWebhook: webhookRef(base) });
    if (!r.ok) throw invalidConfig(resultItems(r));
    const row = await db.one(sql.type(agentRow)`
      INSERT INTO agents (organization_id, name, config, webhook_secret)
      VALUES (${org}, ${r.config.name}, ${sql.jsonb(r.config as never)}, ${source.webhook_secret})
      RETURNING ${AGENT_COLUMNS}`);
    ctx.status = 201;
    ctx.body = agentEnvelope(row);
  });
}
