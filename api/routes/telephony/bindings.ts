// Inbound bindings: the API-first routes of inbound calls that POST /call type=inbound creates (number → agent
// snapshot with its context variables); listed, read, re-pointed at another agent and deleted here.
import type Router from '@koa/router';
import { z } from 'zod';
import { isUuid, loadAgent, validateAgentConfig } from '../../../core/agent-config/index.ts';
import { sql } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import { policyFromConfig } from '../../../core/net/ssrf.ts';
import { bakeBindingSnapshot } from '../../../core/telephony/bindings.ts';
import { agentCarrierProblems, problemsText } from '../../../core/telephony/fit.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { bindingRow, bindingView, BINDING_COLS, getBinding } from '../../../core/telephony/store.ts';
import type { ApiDeps } from '../../deps.ts';
import { parseOr422 } from '../../parse.ts';
import { requireOrg } from '../../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../../pagination.ts';
import { carrierName, idOf } from './carriers.ts';

export function inboundBindingRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;
  const bindingId = (v: string | undefined) => idOf(v, 'binding_not_found');

  router.get('/telephony/inbound/bindings', async (ctx) => {
    const orgId = requireOrg(ctx);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const [rows, total] = await Promise.all([
      db.any(sql.type(bindingRow)`SELECT ${BINDING_COLS} FROM inbound_bindings WHERE organization_id = ${orgId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM inbound_bindings WHERE organization_id = ${orgId}`),
    ]);
    ctx.body = envelope(rows.map((r) => bindingView(config, r)), total, page);
  });

  router.get('/telephony/inbound/bindings/:id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await getBinding(db, orgId, bindingId(ctx.params.id));
    if (!row) throw new HttpError(404, 'binding_not_found');
    ctx.body = bindingView(config, row);
  });

  const patchBody = z.strictObject({
    agent: z.unknown().optional(),
    agentId: z.string().nullish(),
    contextVariables: z.record(z.string(), z.string().max(2000)).nullish(),
  });

  router.patch('/telephony/inbound/bindings/:id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const id = bindingId(ctx.params.id);
    const raw = ctx.request.body ?? {};
    const body = parseOr422(patchBody, raw);
    const hasAgent = body.agent !== undefined && body.agent !== null;
    const hasId = body.agentId !== undefined && body.agentId !== null;
    if (hasAgent && hasId) throw new HttpError(400, 'provide_agent_or_agentId_not_both');
    if (!hasAgent && !hasId) throw new HttpError(400, 'must_provide_agent_or_agentId');
    const existing = await getBinding(db, orgId, id);
    if (!existing) throw new HttpError(404, 'binding_not_found');
    let agentRef: { id: number | null; uuid: string | null; name: string };
    let agentCfg: Record<string, unknown>;
    if (hasId) {
      const agent = isUuid(body.agentId) ? await loadAgent(db, orgId, body.agentId!.toLowerCase()) : null;
      if (!agent) throw new HttpError(404, 'agent_not_found');
      agentRef = { id: agent.id, uuid: agent.uuid, name: agent.name };
      agentCfg = agent.config as unknown as Record<string, unknown>;
    } else {
      const checked = await validateAgentConfig(body.agent, { db, orgId, policy: policyFromConfig(config) });
      if (!checked.ok) {
        if (checked.kind === 'model') throw new HttpError(422, checked.message);
        throw new HttpError(400, `Agent configuration is invalid: ${checked.items.map((i) => `${['agent', ...i.path].join('.')}: ${i.msg}`).join('; ')}`);
      }
      agentRef = { id: null, uuid: null, name: checked.config.name };
      agentCfg = checked.config as unknown as Record<string, unknown>;
    }
    const adapter = carrierFor(existing.provider);
    const problems = adapter ? await agentCarrierProblems(db, orgId, adapter, 'inbound', agentCfg) : [];
    if (problems.length) throw new HttpError(400, `Agent '${agentRef.name}' cannot answer ${carrierName(existing.provider)} calls: ${problemsText(problems)}`);
    const baked = await bakeBindingSnapshot(deps, orgId, agentCfg, body.contextVariables ?? null);
    if (!baked.ok) throw new HttpError(baked.status, baked.message);
    const row = await db.one(sql.type(bindingRow)`
      UPDATE inbound_bindings SET agent_id = ${agentRef.id}, agent_uuid = ${agentRef.uuid}, agent_name = ${agentRef.name},
        agent_snapshot = ${sql.jsonb(baked.snapshot as never)}, context_variables = ${sql.jsonb((body.contextVariables ?? {}) as never)}, updated_at = now()
      WHERE id = ${id} AND organization_id = ${orgId}
      RETURNING ${BINDING_COLS}`);
    ctx.body = bindingView(config, row);
  });

  router.delete('/telephony/inbound/bindings/:id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const v = ctx.params.id ?? '';
    if (/^\d{1,15}$/.test(v)) await db.query(sql.unsafe`DELETE FROM inbound_bindings WHERE id = ${Number(v)} AND organization_id = ${orgId}`);
    ctx.status = 204;
  });
}
