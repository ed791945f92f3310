// Phone numbers of a telephony configuration: E.164 or SIP addresses, the carrier's ownership probe, and the inbound
// agent attachment, synced to the carrier's per-number webhook where it has one.
import type Router from '@koa/router';
import { z } from 'zod';
import { isUuid, loadAgent, type LoadedAgent } from '../../../core/agent-config/index.ts';
import { sql } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import { agentCarrierProblems, problemsText } from '../../../core/telephony/fit.ts';
import { normalizeAddress } from '../../../core/telephony/numbers.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { configCredentials, getNumber, listNumbers, numberView, type ConfigRow } from '../../../core/telephony/store.ts';
import { SecretUnreadable } from '../../../core/secrets.ts';
import { carrierVoiceStatusUrl, carrierVoiceUrl } from '../../../core/telephony/urls.ts';
import type { ApiDeps } from '../../deps.ts';
import { parseOr422 } from '../../parse.ts';
import { requireOrg } from '../../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../../pagination.ts';
import { adapterOrThrow, carrierName, configOr404, idOf, NUMBER_EXISTS, NUMBER_NOT_FOUND, ownershipOrThrow, uniqueViolation } from './carriers.ts';

const agentUuid = z.string().refine(isUuid, { message: 'Input should be a valid UUID (the public agent uuid)' });
const numberCreate = z.object({
  address: z.string().trim().min(1).max(255),
  country_code: z.string().trim().length(2).nullish(),
  label: z.string().max(64).nullish(),
  inbound_agent_uuid: agentUuid.nullish(),
  is_active: z.boolean().default(true),
  is_default_caller_id: z.boolean().default(false),
  extra_metadata: z.record(z.string(), z.unknown()).default({}),
});
const numberUpdate = z.object({
  address: z.string().trim().min(1).max(255).optional(),
  country_code: z.string().trim().length(2).nullish(),
  label: z.string().max(64).nullish(),
  inbound_agent_uuid: agentUuid.nullish(),
  is_active: z.boolean().optional(),
  is_default_caller_id: z.boolean().optional(),
  extra_metadata: z.record(z.string(), z.unknown()).optional(),
});

function normalizedOrThrow(address: string, countryCode: string | null | undefined) {
  const n = normalizeAddress(address, countryCode);
  if (!n.ok) throw new HttpError(400, n.message);
  return n;
}

/** An agent attached to a number answers that carrier's inbound calls: what the carrier cannot do for it is a 400. */
async function checkInboundFit(deps: ApiDeps, orgId: string, provider: string, agent: LoadedAgent): Promise<void> {
  const adapter = carrierFor(provider);
  if (!adapter) return;
  const problems = await agentCarrierProblems(deps.db, orgId, adapter, 'inbound', agent.config);
  if (problems.length) {
    throw new HttpError(400, `Agent '${agent.name}' (${agent.uuid}) cannot answer ${carrierName(provider)} calls: ${problemsText(problems)}`);
  }
}

export function phoneNumberRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;
  const ctxOf = () => ({ config, logger: deps.logger });

  async function attachSync(row: ConfigRow, e164: string, addressType: string) {
    const adapter = carrierFor(row.provider);
    if (!adapter) return { ok: false, message: `provider '${row.provider}' has no adapter` };
    if (addressType !== 'pstn') return { ok: false, message: 'SIP addresses have no carrier inbound webhook to update' };
    let creds;
    try {
      creds = configCredentials(config, row);
    } catch (err) {
      // the attachment is saved; the carrier cannot be updated until the credentials are readable again
      if (err instanceof SecretUnreadable) return { ok: false, message: err.message };
      throw err;
    }
    return adapter.syncInbound(ctxOf(), creds, e164, { voiceUrl: carrierVoiceUrl(config, adapter.id), statusCallbackUrl: carrierVoiceStatusUrl(config, adapter.id) });
  }

  router.post('/organizations/telephony-configs/:config_id/phone-numbers', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(db, orgId, ctx.params.config_id);
    const body = parseOr422(numberCreate, ctx.request.body ?? {});
    const n = normalizedOrThrow(body.address, body.country_code);
    const agent = body.inbound_agent_uuid ? await loadAgent(db, orgId, body.inbound_agent_uuid.toLowerCase()) : null;
    if (body.inbound_agent_uuid && !agent) throw new HttpError(404, 'Agent not found');
    if (agent) await checkInboundFit(deps, orgId, cfg.provider, agent);
    const dup = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM phone_numbers WHERE organization_id = ${orgId} AND address_normalized = ${n.normalized}`);
    if (dup) throw new HttpError(409, NUMBER_EXISTS);
    const adapter = adapterOrThrow(cfg.provider);
    const ref = n.type === 'pstn' ? await ownershipOrThrow(deps, adapter, configCredentials(config, cfg), n.normalized) : null;
    let id: number;
    try {
      id = await db.transaction(async (tx) => {
        if (body.is_default_caller_id) {
          await tx.query(sql.unsafe`UPDATE phone_numbers SET is_default_caller_id = false, updated_at = now() WHERE telephony_config_id = ${cfg.id} AND is_default_caller_id`);
        }
        return tx.oneFirst(sql.type(z.object({ id: z.number() }))`
          INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type, label, inbound_agent_id,
                                     inbound_assigned_at, is_active, is_default_caller_id, extra_metadata, carrier_ref)
          VALUES (${orgId}, ${cfg.id}, ${body.address}, ${n.normalized}, ${n.type}, ${body.label ?? null}, ${agent?.id ?? null},
                  ${agent ? sql.fragment`now()` : null}, ${body.is_active}, ${body.is_default_caller_id}, ${sql.jsonb(body.extra_metadata as never)}, ${ref})
          RETURNING id`);
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, NUMBER_EXISTS);
      throw err;
    }
    const sync = agent ? await attachSync(cfg, n.normalized, n.type) : undefined;
    const row = await getNumber(db, orgId, cfg.id, id);
    ctx.body = numberView(row!, sync);
  });

  router.get('/organizations/telephony-configs/:config_id/phone-numbers', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(db, orgId, ctx.params.config_id);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const { rows, total } = await listNumbers(db, orgId, cfg.id, limit, offset);
    ctx.body = envelope(rows.map((r) => numberView(r)), total, page);
  });

  router.get('/organizations/telephony-configs/:config_id/phone-numbers/:phone_number_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(db, orgId, ctx.params.config_id);
    const row = await getNumber(db, orgId, cfg.id, idOf(ctx.params.phone_number_id, NUMBER_NOT_FOUND));
    if (!row) throw new HttpError(404, NUMBER_NOT_FOUND);
    ctx.body = numberView(row);
  });

  router.put('/organizations/telephony-configs/:config_id/phone-numbers/:phone_number_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(db, orgId, ctx.params.config_id);
    const current = await getNumber(db, orgId, cfg.id, idOf(ctx.params.phone_number_id, NUMBER_NOT_FOUND));
    if (!current) throw new HttpError(404, NUMBER_NOT_FOUND);
    const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
    const body = parseOr422(numberUpdate, raw);
    let normalized = current.address_normalized;
    let type = current.address_type;
    let ref = current.carrier_ref;
    if (body.address !== undefined && body.address !== current.address) {
      const n = normalizedOrThrow(body.address, body.country_code);
      if (n.normalized !== current.address_normalized) {
        const dup = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
          SELECT id FROM phone_numbers WHERE organization_id = ${orgId} AND address_normalized = ${n.normalized} AND id <> ${current.id}`);
        if (dup) throw new HttpError(409, NUMBER_EXISTS);
        const adapter = adapterOrThrow(cfg.provider);
        ref = n.type === 'pstn' ? await ownershipOrThrow(deps, adapter, configCredentials(config, cfg), n.normalized) : null;
      }
      normalized = n.normalized;
      type = n.type;
    }
    const agentGiven = Object.hasOwn(raw, 'inbound_agent_uuid');
    const agent = body.inbound_agent_uuid ? await loadAgent(db, orgId, body.inbound_agent_uuid.toLowerCase()) : null;
    if (body.inbound_agent_uuid && !agent) throw new HttpError(404, 'Agent not found');
    if (agent) await checkInboundFit(deps, orgId, cfg.provider, agent);
    try {
      await db.transaction(async (tx) => {
        if (body.is_default_caller_id) {
          await tx.query(sql.unsafe`UPDATE phone_numbers SET is_default_caller_id = false, updated_at = now() WHERE telephony_config_id = ${cfg.id} AND is_default_caller_id AND id <> ${current.id}`);
        }
        await tx.query(sql.unsafe`
          UPDATE phone_numbers SET
            address = ${body.address ?? current.address}, address_normalized = ${normalized}, address_type = ${type}, carrier_ref = ${ref},
            label = ${body.label !== undefined ? body.label : current.label},
            inbound_agent_id = ${agentGiven ? (agent?.id ?? null) : current.inbound_agent_id},
            inbound_assigned_at = ${agentGiven ? (agent ? sql.fragment`now()` : null) : sql.fragment`inbound_assigned_at`},
            is_active = ${body.is_active ?? current.is_active},
            is_default_caller_id = ${body.is_default_caller_id ?? current.is_default_caller_id},
            extra_metadata = ${sql.jsonb((body.extra_metadata ?? current.extra_metadata) as never)},
            updated_at = now()
          WHERE id = ${current.id} AND organization_id = ${orgId}`);
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, NUMBER_EXISTS);
      throw err;
    }
    const sync = agent ? await attachSync(cfg, normalized, type) : undefined;
    const row = await getNumber(db, orgId, cfg.id, current.id);
    ctx.body = numberView(row!, sync);
  });

  router.delete('/organizations/telephony-configs/:config_id/phone-numbers/:phone_number_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(db, orgId, ctx.params.config_id);
    const id = idOf(ctx.params.phone_number_id, NUMBER_NOT_FOUND);
    const gone = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      DELETE FROM phone_numbers WHERE id = ${id} AND organization_id = ${orgId} AND telephony_config_id = ${cfg.id} RETURNING id`);
    if (!gone) throw new HttpError(404, NUMBER_NOT_FOUND);
    ctx.status = 204;
  });
}
