// Saved tools API (spec "Tools", "Saved tool"). Bodies use snake_case and ignore unknown fields.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { explainRefusal, policyFromConfig } from '../../core/net/ssrf.ts';
import { agentCarrierUses } from '../../core/telephony/fit.ts';
import { to422, type ValidationItem } from '../../core/validation.ts';
import { checkTemplatedUrl, functionNameFor, isUuid, toolView } from '../../core/agent-config/index.ts';
import { issuesToItems } from '../../core/agent-config/issues.ts';
import {
  DEFINITION_TYPES,
  RESERVED_CATEGORIES,
  TOOL_CATEGORIES,
  incompleteDefinition,
  savedToolRow,
  toolCreateSchema,
  toolUpdateSchema,
  type ToolDefinition,
} from '../../core/agent-config/saved-tools.ts';
import type { CommonQueryMethods } from 'slonik';
import { getCredential } from '../../core/credentials/store.ts';
import { referenceProblems, toolRecordingRef } from '../../core/recordings/store.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import type { ApiDeps } from '../deps.ts';

export const NO_ORG_TOOLS = 'No organization selected for the user';
export const TOOL_NOT_FOUND = 'Tool not found';

const TOOL_COLUMNS = sql.fragment`uuid::text AS uuid, organization_id::text AS organization_id, name, function_name, description, category,
  icon, icon_color, definition, status, created_at, updated_at`;

function checkCategory(category: string): void {
  if ((RESERVED_CATEGORIES as readonly string[]).includes(category))
    throw new HttpError(400, `Invalid category '${category}'. Category '${category}' is reserved for future use. Must be one of: ${DEFINITION_TYPES.join(', ')}`);
  if (!(TOOL_CATEGORIES as readonly string[]).includes(category))
    throw new HttpError(400, `Invalid category '${category}'. Must be one of: ${DEFINITION_TYPES.join(', ')}`);
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw new HttpError(422, to422(issuesToItems(r.error, body)));
  return r.data;
}

/**
 * Checks needing the network or the database: function URL (SSRF), query document ids, the audio recording a
 * message plays (`stored`: the definition before this update, whose recording stays usable once archived). 422 items.
 */
async function checkDefinition(
  def: ToolDefinition,
  ctx: { db: CommonQueryMethods; orgId: string; policy: ReturnType<typeof policyFromConfig> },
  stored?: unknown,
): Promise<void> {
  const items: ValidationItem[] = [];
  if (def.type === 'function' && def.config.url !== '') {
    const reason = await checkTemplatedUrl(def.config.url, ctx.policy);
    if (reason) items.push({ type: 'value_error', path: ['definition', 'config', 'url'], msg: `url is not allowed: ${explainRefusal(reason)}`, input: def.config.url });
  }
  if (def.type === 'query') {
    const refs = def.config.groups.flatMap((g, gi) => g.documentIds.map((d, di) => ({ id: d.toLowerCase(), path: ['definition', 'config', 'groups', gi, 'documentIds', di] })));
    if (refs.length > 0) {
      const found = new Set(
        await ctx.db.anyFirst(sql.type(z.object({ id: z.string() }))`
          SELECT id::text AS id FROM documents WHERE organization_id = ${ctx.orgId} AND deleted_at IS NULL
            AND id = ANY(${sql.array([...new Set(refs.map((r) => r.id))], 'uuid')}) FOR KEY SHARE`),
      );
      for (const r of refs) if (!found.has(r.id)) items.push({ type: 'value_error', path: r.path, msg: `Document '${r.id}' not found`, input: r.id });
    }
  }
  const recording = toolRecordingRef(def.config, ['definition', 'config']);
  if (recording) {
    const kept = toolRecordingRef((stored as { config?: unknown } | undefined)?.config, []);
    for (const p of await referenceProblems(ctx.db, ctx.orgId, [recording], kept ? [kept.id] : []))
      items.push({ type: 'value_error', path: p.path, msg: p.msg, input: p.id });
  }
  if (items.length > 0) throw new HttpError(422, to422(items));
}

/**
 * An HTTP tool's `credential_uuid` must name a stored credential of the organization (400 otherwise). The row is
 * held FOR KEY SHARE until the caller's transaction ends, so a concurrent DELETE /credentials waits and then sees
 * the tool. Returns the definition with the uuid in canonical (lower-case) form.
 */
async function checkCredential(def: ToolDefinition, db: CommonQueryMethods, orgId: string): Promise<ToolDefinition> {
  if (def.type !== 'function' || def.config.credential_uuid === undefined) return def;
  const ref = def.config.credential_uuid;
  const found = isUuid(ref) ? await getCredential(db, orgId, ref.toLowerCase(), 'FOR KEY SHARE') : null;
  if (!found) throw new HttpError(400, `Credential '${ref}' not found (definition.config.credential_uuid must name a stored credential of this organization)`);
  return { ...def, config: { ...def.config, credential_uuid: found.uuid } };
}

/**
 * A saved transfer tool's new destination must be reachable by every carrier that the agents referencing it meet
 * (numbers and bindings they answer, unfinished campaigns dialling with them; core/telephony/fit.ts): 400 naming
 * the carrier, the destination and the agent otherwise.
 */
async function checkTransferUsers(db: CommonQueryMethods, orgId: string, tool: { uuid: string; name: string; definition: unknown }, destination: string): Promise<void> {
  const before = (tool.definition as { config?: { destination?: unknown } }).config?.destination;
  if (!destination.trim() || destination === before) return;
  const agents = await db.any(sql.type(z.object({ id: z.number(), uuid: z.string(), name: z.string() }))`
    SELECT id, uuid::text, name FROM agents
    WHERE organization_id = ${orgId} AND status = 'active' AND EXISTS (
      SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(config->'tools') = 'array' THEN config->'tools' ELSE '[]'::jsonb END) e
      WHERE jsonb_typeof(e) = 'string' AND lower(e #>> '{}') = ${tool.uuid.toLowerCase()})
    ORDER BY id`);
  const problems: string[] = [];
  for (const a of agents) {
    for (const use of await agentCarrierUses(db, orgId, a)) {
      const why = use.adapter.transferSupport(destination);
      if (why) problems.push(`${why} (agent '${a.name}' (${a.uuid}) ${use.where})`);
    }
  }
  if (problems.length) throw new HttpError(400, `Saved tool '${tool.name}' cannot take the destination '${destination.trim()}': ${problems.join('; ')}`);
}

const listQuery = paginationQuery().extend({
  category: z.enum(TOOL_CATEGORIES).optional(),
  status: z.enum(['active', 'archived', 'all']).default('active'),
});

export function toolsRoutes(router: Router, deps: ApiDeps): void {
  const { db } = deps;
  const policy = policyFromConfig(deps.config);

  const toolUuid = (ctx: ParameterizedContext): string => {
    const id = ctx.params.tool_uuid;
    if (!isUuid(id)) throw new HttpError(404, TOOL_NOT_FOUND);
    return id.toLowerCase();
  };

  router.post('/tools', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const raw = ctx.request.body ?? {};
    const category = raw !== null && typeof raw === 'object' ? (raw as { category?: unknown }).category : undefined;
    if (category !== undefined && category !== null) {
      if (typeof category !== 'string') throw new HttpError(400, `Invalid category '${String(category)}'. Must be one of: ${DEFINITION_TYPES.join(', ')}`);
      checkCategory(category);
    }
    const body = parseBody(toolCreateSchema, raw);
    const cat = body.category ?? body.definition.type;
    if (cat !== body.definition.type)
      throw new HttpError(400, `Category '${cat}' does not match definition type '${body.definition.type}'`);
    const row = await db.transaction(async (trx) => {
      // inside the transaction: the documents and credential it names stay locked (FOR KEY SHARE) until the insert
      // commits, so a concurrent delete of one waits and then sees this tool
      await checkDefinition(body.definition, { db: trx, orgId: org, policy });
      const definition = await checkCredential(body.definition, trx, org);
      return trx.one(sql.type(savedToolRow)`
        INSERT INTO tools (organization_id, name, function_name, description, category, icon, icon_color, definition)
        VALUES (${org}, ${body.name}, ${functionNameFor(body.name)}, ${body.description}, ${cat}, ${body.icon}, ${body.icon_color},
                ${sql.jsonb(definition as never)})
        RETURNING ${TOOL_COLUMNS}`);
    });
    ctx.body = toolView(row);
  });

  router.get('/tools', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const q = parseOr422(listQuery, ctx.query, 'query');
    const { limit, offset } = pageWindow(q);
    const where = sql.fragment`organization_id = ${org}
      ${q.status === 'all' ? sql.fragment`` : sql.fragment`AND status = ${q.status}`}
      ${q.category ? sql.fragment`AND category = ${q.category}` : sql.fragment``}`;
    const [rows, total] = await Promise.all([
      db.any(sql.type(savedToolRow)`SELECT ${TOOL_COLUMNS} FROM tools WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM tools WHERE ${where}`),
    ]);
    ctx.body = envelope(rows.map(toolView), total, q);
  });

  router.get('/tools/:tool_uuid', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const row = await db.maybeOne(sql.type(savedToolRow)`SELECT ${TOOL_COLUMNS} FROM tools WHERE uuid = ${toolUuid(ctx)} AND organization_id = ${org}`);
    if (!row) throw new HttpError(404, TOOL_NOT_FOUND);
    ctx.body = toolView(row);
  });

  router.put('/tools/:tool_uuid', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const id = toolUuid(ctx);
    const body = parseBody(toolUpdateSchema, ctx.request.body ?? {});
    const row = await db.transaction(async (trx) => {
      const current = await trx.maybeOne(sql.type(savedToolRow)`SELECT ${TOOL_COLUMNS} FROM tools WHERE uuid = ${id} AND organization_id = ${org} FOR UPDATE`);
      if (!current) throw new HttpError(404, TOOL_NOT_FOUND);
      if (body.category !== undefined && body.category !== current.category)
        throw new HttpError(400, `Tool category cannot be changed (it is '${current.category}', fixed at creation)`);
      if (body.definition) {
        if (body.definition.type !== current.category)
          throw new HttpError(400, `Definition type '${body.definition.type}' does not match the tool category '${current.category}'`);
        const incomplete = incompleteDefinition(body.definition);
        if (incomplete) throw new HttpError(400, incomplete);
        await checkDefinition(body.definition, { db: trx, orgId: org, policy }, current.definition);
      }
      const definition = body.definition ? await checkCredential(body.definition, trx, org) : current.definition;
      if (body.definition?.type === 'transferCall') await checkTransferUsers(trx, org, current, body.definition.config.destination);
      const name = body.name ?? current.name;
      return trx.one(sql.type(savedToolRow)`
        UPDATE tools SET
          name = ${name},
          function_name = ${body.name !== undefined && body.name !== current.name ? functionNameFor(name) : current.function_name},
          description = ${body.description ?? current.description},
          icon = ${body.icon ?? current.icon},
          icon_color = ${body.icon_color ?? current.icon_color},
          definition = ${sql.jsonb(definition as never)},
          updated_at = now()
        WHERE uuid = ${id} AND organization_id = ${org}
        RETURNING ${TOOL_COLUMNS}`);
    });
    ctx.body = toolView(row);
  });

  router.delete('/tools/:tool_uuid', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const id = toolUuid(ctx);
    const row = await db.maybeOne(sql.type(z.object({ uuid: z.string() }))`
      UPDATE tools SET status = 'archived', updated_at = CASE WHEN status = 'archived' THEN updated_at ELSE now() END
      WHERE uuid = ${id} AND organization_id = ${org} RETURNING uuid::text AS uuid`);
    if (!row) throw new HttpError(404, TOOL_NOT_FOUND);
    ctx.body = { status: 'archived', tool_uuid: row.uuid };
  });

  router.post('/tools/:tool_uuid/unarchive', async (ctx) => {
    const org = requireOrg(ctx, NO_ORG_TOOLS);
    const id = toolUuid(ctx);
    const row = await db.maybeOne(sql.type(savedToolRow)`
      UPDATE tools SET status = 'active', updated_at = CASE WHEN status = 'active' THEN updated_at ELSE now() END
      WHERE uuid = ${id} AND organization_id = ${org} RETURNING ${TOOL_COLUMNS}`);
    if (!row) throw new HttpError(404, TOOL_NOT_FOUND);
    ctx.body = toolView(row);
  });
}
