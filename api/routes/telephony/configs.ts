// Telephony configurations: carrier credentials, probed with the carrier on save, encrypted at rest, masked in every
// response; one of them is the organization's default for outbound calls.
import type Router from '@koa/router';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { configView, getConfig, insertConfig, listConfigs, readCredentials, updateConfig, type ConfigRow } from '../../../core/telephony/store.ts';
import { to422, zodToItems } from '../../../core/validation.ts';
import type { ApiDeps } from '../../deps.ts';
import { parseOr422 } from '../../parse.ts';
import { requireOrg } from '../../middleware/auth.ts';
import type { CarrierAdapter, Credentials } from '../../../core/telephony/types.ts';
import { envelope, pageWindow, paginationQuery } from '../../pagination.ts';
import { adapterOrThrow, CONFIG_NOT_FOUND, configInUseMessage, configOr404, configUsage, parseAmd, parseCredentials, probeOrThrow, uniqueViolation } from './carriers.ts';

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

export function telephonyConfigRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;
  const countNumbers = (id: number) => db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM phone_numbers WHERE telephony_config_id = ${id}`);
  const accountRefOf = (adapter: CarrierAdapter, creds: Credentials) => adapter.accountRef?.(creds) ?? null;

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
    const row = await configOr404(db, orgId, ctx.params.config_id);
    ctx.body = configView(config, row, await countNumbers(row.id));
  };
  router.get('/organizations/telephony-configs/:config_id', getDetail);
  router.get('/telephony-configs/:config_id', getDetail);

  router.put('/organizations/telephony-configs/:config_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(db, orgId, ctx.params.config_id);
    const body = parseOr422(configUpdate, ctx.request.body ?? {});
    const adapter = adapterOrThrow(row.provider);
    if (body.config?.provider !== undefined && body.config.provider !== row.provider) {
      throw new HttpError(400, `The provider of a telephony configuration cannot be changed (this configuration is '${row.provider}'); create a new configuration instead.`);
    }
    // Credentials the current key cannot open are replaced by the body's, which must then carry them in full (422
    // naming what is missing); a PUT without `config` leaves them as stored.
    const stored = readCredentials(config, row.credentials);
    let creds: Credentials | null = stored;
    let amd = row.amd_enabled;
    if (body.config && !stored && Object.keys(body.config).every((k) => k === 'provider' || k === 'amd_enabled')) {
      amd = parseAmd(adapter, body.config.amd_enabled) ?? amd;
    } else if (body.config) {
      const { provider: _p, ...patch } = body.config;
      const merged = { ...(stored ?? {}), ...Object.fromEntries(Object.entries(patch).filter(([k]) => k !== 'amd_enabled')) };
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
    if (creds && JSON.stringify(creds) !== JSON.stringify(stored)) await probeOrThrow(deps, adapter, creds);
    let updated: ConfigRow | null;
    try {
      updated = await updateConfig(db, config, orgId, row.id, {
        name, creds, accountRef: creds ? accountRefOf(adapter, creds) : row.account_ref, amdEnabled: amd, isDefault: body.is_default_outbound ?? row.is_default_outbound,
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
    const row = await configOr404(db, orgId, ctx.params.config_id);
    await db.transaction(async (tx) => {
      // The row lock makes new calls on this configuration (their FK takes a key-share lock) and new campaigns
      // (campaign create locks it the same way) wait for this decision.
      const locked = await tx.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
        SELECT id FROM telephony_configs WHERE id = ${row.id} AND organization_id = ${orgId} FOR UPDATE`);
      if (!locked) throw new HttpError(404, CONFIG_NOT_FOUND);
      const inUse = await configUsage(tx, orgId, row.id);
      if (inUse) throw new HttpError(409, configInUseMessage(row.name, inUse));
      await tx.query(sql.unsafe`DELETE FROM telephony_configs WHERE id = ${row.id} AND organization_id = ${orgId}`);
    });
    ctx.status = 204;
  });

  router.post('/organizations/telephony-configs/:config_id/set-default-outbound', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await configOr404(db, orgId, ctx.params.config_id);
    const updated = await db.transaction(async (tx) => {
      await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = false, updated_at = now() WHERE organization_id = ${orgId} AND is_default_outbound AND id <> ${row.id}`);
      await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = true, updated_at = now() WHERE id = ${row.id} AND organization_id = ${orgId}`);
      return getConfig(tx, orgId, row.id);
    });
    if (!updated) throw new HttpError(404, CONFIG_NOT_FOUND);
    ctx.body = configView(config, updated, await countNumbers(row.id));
  });
}
