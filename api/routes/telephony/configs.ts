// Telephony configurations (carrier credentials, probed on save, encrypted at rest, masked in every response),
// their phone numbers (E.164 / SIP, ownership probe, inbound-agent attachment synced to the carrier) and the
// API-first inbound bindings created by POST /call type=inbound.
import type Router from '@koa/router';
import { z } from 'zod';
import { isUuid, loadAgent, validateAgentConfig } from '../../core/agent-config/index.ts';
import { CARRIERS } from '../../core/calls/request.ts';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { normalizeAddress } from '../../core/telephony/numbers.ts';
import { carrierFor } from '../../core/telephony/registry.ts';
import {
  bindingRow, bindingView, BINDING_COLS, configView, getBinding, getConfig, getNumber, insertConfig, listConfigs,
  listNumbers, numberRow, numberView, openCredentials, updateConfig, type ConfigRow,
} from '../../core/telephony/store.ts';
import { CarrierHttpError, type CarrierAdapter, type Credentials } from '../../core/telephony/types.ts';
import { carrierVoiceStatusUrl, carrierVoiceUrl } from '../../core/telephony/urls.ts';
import { to422, zodToItems } from '../../core/validation.ts';
import type { ApiDeps } from '../deps.ts';
import { parseOr422 } from '../guard.ts';
import { requireOrg } from '../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import { bakeBindingSnapshot } from '../../core/telephony/bindings.ts';
import '../openapi-telephony.ts';

export const CONFIG_NOT_FOUND = 'Telephony configuration not found';
export const NUMBER_NOT_FOUND = 'Phone number not found';
export const NUMBER_EXISTS = 'This phone number is already added in this organization.';

const idOf = (v: string | undefined, notFound: string): number => {
  if (!v || !/^\d{1,15}$/.test(v)) throw new HttpError(404, notFound);
  return Number(v);
};

const uniqueViolation = (err: unknown, constraint?: string) => {
  const e = err as { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } };
  const code = e.code ?? e.cause?.code;
  const name = e.constraint ?? e.cause?.constraint;
  return code === '23505' && (!constraint || name === constraint);
};

// ── configuration bodies ───────────────────────────────────────────────────────────────────────────────────────
const configEnvelope = z.object({
  name: z.string().trim().min(1).max(64),
  is_default_outbound: z.boolean().default(false),
  config: z.looseObject({ provider: z.string().min(1) }),
});
const configUpdate = z.object({
  name: z.string().trim().min(1).max(64).optional(),
  is_default_outbound: z.boolean().optional(),
  config: z.looseObject({ provider: z.string().min(1).optional() }).optional(),
});

/** The carrier of a config body, or the spec's 400 (unknown) / 501 (known carrier not built yet). */
function adapterOrThrow(provider: string): CarrierAdapter {
  const adapter = carrierFor(provider);
  if (adapter) return adapter;
  if ((CARRIERS as readonly string[]).includes(provider)) {
    throw new HttpError(501, `Telephony configurations for provider '${provider}' are not implemented yet`);
  }
  throw new HttpError(400, `unknown_provider: ${provider}`);
}

/** Credentials of a config body for its carrier (422 on shape), plus Twilio's amd_enabled. */
function parseCredentials(adapter: CarrierAdapter, raw: Record<string, unknown>): { creds: Credentials; amd: boolean | undefined } {
  const { provider: _p, amd_enabled: amd, ...rest } = raw;
  const items = [];
  const parsed = adapter.credentialsSchema.safeParse(rest);
  if (!parsed.success) items.push(...zodToItems(parsed.error, rest).map((i) => ({ ...i, path: ['config', ...i.path] })));
  if (amd !== undefined && (adapter.id !== 'twilio' || typeof amd !== 'boolean')) {
    items.push(adapter.id !== 'twilio'
      ? { type: 'extra_forbidden', path: ['config', 'amd_enabled'], msg: 'Extra inputs are not permitted', input: amd }
      : { type: 'bool_type', path: ['config', 'amd_enabled'], msg: 'Input should be a valid boolean', input: amd });
  }
  if (items.length || !parsed.success) throw new HttpError(422, to422(items, 'body'));
  return { creds: parsed.data, amd: amd as boolean | undefined };
}

/** Probe credentials with the carrier: 400 invalid_credentials when refused, 502 when it cannot answer. */
async function probeOrThrow(deps: ApiDeps, adapter: CarrierAdapter, creds: Credentials): Promise<void> {
  let result;
  try {
    result = await adapter.probeCredentials({ config: deps.config, logger: deps.logger }, creds);
  } catch (err) {
    if (err instanceof CarrierHttpError) throw new HttpError(502, `${adapter.id} credential check failed: ${err.message}`);
    throw err;
  }
  if (!result.ok) throw new HttpError(400, `invalid_credentials: ${result.reason}`);
}

const accountRefOf = (adapter: CarrierAdapter, creds: Credentials) =>
  adapter.accountRef ? adapter.accountRef(creds) : adapter.id === 'twilio' && typeof creds.account_sid === 'string' ? creds.account_sid : null;

// ── number bodies ──────────────────────────────────────────────────────────────────────────────────────────────
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

/** Ownership probe: 400 'Phone number … is not owned by this … account' when absent; carrier trouble → 400/502. */
async function ownershipOrThrow(deps: ApiDeps, adapter: CarrierAdapter, creds: Credentials, e164: string): Promise<string | null> {
  try {
    const owned = await adapter.probeNumber({ config: deps.config, logger: deps.logger }, creds, e164);
    if (!owned.owned) throw new HttpError(400, `Phone number ${e164} is not owned by this ${carrierName(adapter.id)} account`);
    return owned.ref;
  } catch (err) {
    if (!(err instanceof CarrierHttpError)) throw err;
    if (err.status === 401 || err.status === 403) throw new HttpError(400, `invalid_credentials: ${carrierName(adapter.id)} refused the credentials (HTTP ${err.status}: ${err.message})`);
    throw new HttpError(502, `${carrierName(adapter.id)} number check failed: ${err.message}`);
  }
}

export const carrierName = (id: string) =>
  ({ twilio: 'Twilio', smartflo: 'Smartflo', plivo: 'Plivo', telnyx: 'Telnyx', vonage: 'Vonage', exotel: 'Exotel' } as Record<string, string>)[id] ?? id;

export function telephonyRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;
  const ctxOf = () => ({ config, logger: deps.logger });

  async function configOr404(orgId: string, rawId: string | undefined): Promise<ConfigRow> {
    const row = await getConfig(db, orgId, idOf(rawId, CONFIG_NOT_FOUND));
    if (!row) throw new HttpError(404, CONFIG_NOT_FOUND);
    return row;
  }
  const countNumbers = (id: number) => db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM phone_numbers WHERE telephony_config_id = ${id}`);

  // ── configurations ───────────────────────────────────────────────────────────────────────────────────────────
  router.post('/organizations/telephony-configs', async (ctx) => {
    const orgId = requireOrg(ctx);
    const raw = ctx.request.body ?? {};
    const env = configEnvelope.safeParse(raw);
    const rawConfig = (raw as { config?: unknown }).config;
    const rawProvider = rawConfig && typeof rawConfig === 'object' ? (rawConfig as { provider?: unknown }).provider : undefined;
    if (!env.success) {
      // All failures together: the envelope's and, when the carrier is known, its credentials'.
      const items = zodToItems(env.error, raw);
      const adapter = typeof rawProvider === 'string' ? carrierFor(rawProvider) : null;
      if (adapter) {
        try {
          parseCredentials(adapter, rawConfig as Record<string, unknown>);
        } catch (err) {
          if (err instanceof HttpError && Array.isArray(err.detail)) throw new HttpError(422, [...to422(items, 'body'), ...err.detail]);
        }
      }
      throw new HttpError(422, to422(items, 'body'));
    }
    const body = env.data;
    const adapter = adapterOrThrow(body.config.provider);
    const { creds, amd } = parseCredentials(adapter, body.config);
    const clash = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM telephony_configs WHERE organization_id = ${orgId} AND name = ${body.name}`);
    if (clash) throw new HttpError(409, `A telephony configuration named '${body.name}' already exists in this organization.`);
    await probeOrThrow(deps, adapter, creds);
    let row: ConfigRow;
    try {
      row = await insertConfig(db, config, {
        orgId, name: body.name, provider: adapter.id, creds, accountRef: accountRefOf(adapter, creds), amdEnabled: amd ?? false, isDefault: body.is_default_outbound,
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A telephony configuration named '${body.name}' already exists in this organization.`);
      throw err;
    }
    ctx.status = 201;
    ctx.body = configView(config, row, 0);
  });

  router.get('/organizations/telephony-configs', async (ctx) => {
    const orgId = requireOrg(ctx);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const { rows, total } = await listConfigs(db, orgId, limit, offset);
    const counts = new Map((await db.any(sql.type(z.object({ id: z.number(), c: z.number() }))`
      SELECT telephony_config_id AS id, count(*)::int AS c FROM phone_numbers WHERE organization_id = ${orgId} GROUP BY 1`)).map((r) => [r.id, r.c]));
    ctx.body = envelope(rows.map((r) => configView(config, r, counts.get(r.id) ?? 0)), total, page);
  });

  const getDetail = async (ctx: Parameters<Parameters<typeof router.get>[1]>[0]) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(orgId, ctx.params.config_id);
    ctx.body = configView(config, row, await countNumbers(row.id));
  };
  router.get('/organizations/telephony-configs/:config_id', getDetail);
  router.get('/telephony-configs/:config_id', getDetail);

  router.put('/organizations/telephony-configs/:config_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(orgId, ctx.params.config_id);
    const body = parseOr422(configUpdate, ctx.request.body ?? {});
    const adapter = adapterOrThrow(row.provider);
    if (body.config?.provider !== undefined && body.config.provider !== row.provider) {
      throw new HttpError(400, `The provider of a telephony configuration cannot be changed (this configuration is '${row.provider}'); create a new configuration instead.`);
    }
    const stored = openCredentials(config, row.credentials);
    let creds = stored;
    let amd = row.amd_enabled;
    if (body.config) {
      const { provider: _p, ...patch } = body.config;
      const merged = { ...stored, ...Object.fromEntries(Object.entries(patch).filter(([k]) => k !== 'amd_enabled')) };
      const parsed = parseCredentials(adapter, { ...merged, ...(patch.amd_enabled !== undefined ? { amd_enabled: patch.amd_enabled } : {}) });
      creds = parsed.creds;
      if (parsed.amd !== undefined) amd = parsed.amd;
    }
    const name = body.name ?? row.name;
    if (name !== row.name) {
      const clash = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
        SELECT id FROM telephony_configs WHERE organization_id = ${orgId} AND name = ${name} AND id <> ${row.id}`);
      if (clash) throw new HttpError(409, `A telephony configuration named '${name}' already exists in this organization.`);
    }
    if (JSON.stringify(creds) !== JSON.stringify(stored)) await probeOrThrow(deps, adapter, creds);
    let updated: ConfigRow | null;
    try {
      updated = await updateConfig(db, config, orgId, row.id, {
        name, creds, accountRef: accountRefOf(adapter, creds), amdEnabled: amd, isDefault: body.is_default_outbound ?? row.is_default_outbound,
      });
    } catch (err) {
      if (uniqueViolation(err)) throw new HttpError(409, `A telephony configuration named '${name}' already exists in this organization.`);
      throw err;
    }
    if (!updated) throw new HttpError(404, CONFIG_NOT_FOUND);
    ctx.body = configView(config, updated, await countNumbers(row.id));
  });

  router.delete('/organizations/telephony-configs/:config_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(orgId, ctx.params.config_id);
    await db.query(sql.unsafe`DELETE FROM telephony_configs WHERE id = ${row.id} AND organization_id = ${orgId}`);
    ctx.status = 204;
  });

  router.post('/organizations/telephony-configs/:config_id/set-default-outbound', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(orgId, ctx.params.config_id);
    const updated = await db.transaction(async (tx) => {
      await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = false, updated_at = now() WHERE organization_id = ${orgId} AND is_default_outbound AND id <> ${row.id}`);
      await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = true, updated_at = now() WHERE id = ${row.id} AND organization_id = ${orgId}`);
      return getConfig(tx, orgId, row.id);
    });
    if (!updated) throw new HttpError(404, CONFIG_NOT_FOUND);
    ctx.body = configView(config, updated, await countNumbers(row.id));
  });

  // ── phone numbers ────────────────────────────────────────────────────────────────────────────────────────────
  async function attachSync(row: ConfigRow, e164: string, addressType: string) {
    const adapter = carrierFor(row.provider);
    if (!adapter) return { ok: false, message: `provider '${row.provider}' has no adapter` };
    if (addressType !== 'pstn') return { ok: false, message: 'SIP addresses have no carrier inbound webhook to update' };
    return adapter.syncInbound(ctxOf(), openCredentials(config, row.credentials), e164, { voiceUrl: carrierVoiceUrl(config, adapter.id), statusCallbackUrl: carrierVoiceStatusUrl(config, adapter.id) });
  }

  router.post('/organizations/telephony-configs/:config_id/phone-numbers', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(orgId, ctx.params.config_id);
    const body = parseOr422(numberCreate, ctx.request.body ?? {});
    const n = normalizedOrThrow(body.address, body.country_code);
    const agent = body.inbound_agent_uuid ? await loadAgent(db, orgId, body.inbound_agent_uuid.toLowerCase()) : null;
    if (body.inbound_agent_uuid && !agent) throw new HttpError(404, 'Agent not found');
    const dup = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM phone_numbers WHERE organization_id = ${orgId} AND address_normalized = ${n.normalized}`);
    if (dup) throw new HttpError(409, NUMBER_EXISTS);
    const adapter = adapterOrThrow(cfg.provider);
    const ref = n.type === 'pstn' ? await ownershipOrThrow(deps, adapter, openCredentials(config, cfg.credentials), n.normalized) : null;
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
    const cfg = await configOr404(orgId, ctx.params.config_id);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const { rows, total } = await listNumbers(db, orgId, cfg.id, limit, offset);
    ctx.body = envelope(rows.map((r) => numberView(r)), total, page);
  });

  router.get('/organizations/telephony-configs/:config_id/phone-numbers/:phone_number_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(orgId, ctx.params.config_id);
    const row = await getNumber(db, orgId, cfg.id, idOf(ctx.params.phone_number_id, NUMBER_NOT_FOUND));
    if (!row) throw new HttpError(404, NUMBER_NOT_FOUND);
    ctx.body = numberView(row);
  });

  router.put('/organizations/telephony-configs/:config_id/phone-numbers/:phone_number_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const cfg = await configOr404(orgId, ctx.params.config_id);
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
        ref = n.type === 'pstn' ? await ownershipOrThrow(deps, adapter, openCredentials(config, cfg.credentials), n.normalized) : null;
      }
      normalized = n.normalized;
      type = n.type;
    }
    const agentGiven = Object.hasOwn(raw, 'inbound_agent_uuid');
    const agent = body.inbound_agent_uuid ? await loadAgent(db, orgId, body.inbound_agent_uuid.toLowerCase()) : null;
    if (body.inbound_agent_uuid && !agent) throw new HttpError(404, 'Agent not found');
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
    const cfg = await configOr404(orgId, ctx.params.config_id);
    const id = idOf(ctx.params.phone_number_id, NUMBER_NOT_FOUND);
    const gone = await db.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
      DELETE FROM phone_numbers WHERE id = ${id} AND organization_id = ${orgId} AND telephony_config_id = ${cfg.id} RETURNING id`);
    if (!gone) throw new HttpError(404, NUMBER_NOT_FOUND);
    ctx.status = 204;
  });

  // ── inbound bindings ─────────────────────────────────────────────────────────────────────────────────────────
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

// Exported for the POST /call inbound branch.
export { adapterOrThrow, ownershipOrThrow, probeOrThrow, numberRow };
