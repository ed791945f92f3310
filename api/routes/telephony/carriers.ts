// What the telephony resources share: the carrier of a body (400 unknown / 501 not built), its credentials (422 on
// shape), the carrier's probes (credentials, number ownership) with their refusal statuses, and id parsing.
import { CARRIERS } from '../../../core/calls/request.ts';
import { z } from 'zod';
import { sql, type Db } from '../../../core/db/pool.ts';
import { HttpError } from '../../../core/http-error.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { getConfig, type ConfigRow } from '../../../core/telephony/store.ts';
import { CarrierHttpError, type CarrierAdapter, type Credentials } from '../../../core/telephony/types.ts';
import { to422, zodToItems } from '../../../core/validation.ts';
import type { ApiDeps } from '../../deps.ts';

export const CONFIG_NOT_FOUND = 'Telephony configuration not found';
export const NUMBER_NOT_FOUND = 'Phone number not found';
export const NUMBER_EXISTS = 'This phone number is already added in this organization.';

/** A numeric path id, or the resource's 404. */
export const idOf = (v: string | undefined, notFound: string): number => {
  if (!v || !/^\d{1,15}$/.test(v)) throw new HttpError(404, notFound);
  return Number(v);
};

export const uniqueViolation = (err: unknown, constraint?: string) => {
  const e = err as { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } };
  const code = e.code ?? e.cause?.code;
  const name = e.constraint ?? e.cause?.constraint;
  return code === '23505' && (!constraint || name === constraint);
};

/** The organization's configuration of a path id, or 404. */
export async function configOr404(db: Db, orgId: string, rawId: string | undefined): Promise<ConfigRow> {
  const row = await getConfig(db, orgId, idOf(rawId, CONFIG_NOT_FOUND));
  if (!row) throw new HttpError(404, CONFIG_NOT_FOUND);
  return row;
}

export interface ConfigUsage {
  /** Pending or active calls on the configuration: their count and the first few ids. */
  liveCalls: { total: number; ids: string[] };
  /** Campaigns on it that are neither completed nor failed. */
  campaigns: Array<{ id: number; name: string; state: string }>;
}

/** What keeps a configuration from being deleted (null: nothing): live calls would lose their carrier for hang-ups, transfers and callbacks, campaigns their caller numbers. */
export async function configUsage(q: Pick<Db, 'any' | 'oneFirst'>, orgId: string, configId: number): Promise<ConfigUsage | null> {
  const ids = await q.any(sql.type(z.object({ id: z.string() }))`
    SELECT id::text FROM calls WHERE organization_id = ${orgId} AND status IN ('pending', 'active') AND telephony_config_id = ${configId}
    ORDER BY created_at LIMIT 5`);
  const total = ids.length < 5 ? ids.length : await q.oneFirst(sql.type(z.object({ c: z.number() }))`
    SELECT count(*)::int AS c FROM calls WHERE organization_id = ${orgId} AND status IN ('pending', 'active') AND telephony_config_id = ${configId}`);
  const campaigns = await q.any(sql.type(z.object({ id: z.number(), name: z.string(), state: z.string() }))`
    SELECT id, name, state FROM campaigns
    WHERE organization_id = ${orgId} AND telephony_configuration_id = ${configId} AND state NOT IN ('completed', 'failed') ORDER BY id`);
  if (total === 0 && campaigns.length === 0) return null;
  return { liveCalls: { total, ids: ids.map((r) => r.id) }, campaigns: [...campaigns] };
}

/** The 409 detail of a configuration still in use. */
export function configInUseMessage(name: string, u: ConfigUsage): string {
  const parts: string[] = [];
  if (u.liveCalls.total) {
    const more = u.liveCalls.total > u.liveCalls.ids.length ? `, and ${u.liveCalls.total - u.liveCalls.ids.length} more` : '';
    parts.push(`${u.liveCalls.total} live call(s) (${u.liveCalls.ids.join(', ')}${more})`);
  }
  if (u.campaigns.length) {
    parts.push(`${u.campaigns.length} campaign(s) not completed or failed (${u.campaigns.map((c) => `${c.id} '${c.name}' ${c.state}`).join(', ')})`);
  }
  return `Telephony configuration '${name}' is in use by ${parts.join(' and ')}; it can be deleted once the calls have ended and the campaigns have completed or failed.`;
}

/** The carrier of a config body, or the spec's 400 (unknown) / 501 (known carrier not built yet). */
export function adapterOrThrow(provider: string): CarrierAdapter {
  const adapter = carrierFor(provider);
  if (adapter) return adapter;
  if ((CARRIERS as readonly string[]).includes(provider)) {
    throw new HttpError(501, `Telephony configurations for provider '${provider}' are not implemented yet`);
  }
  throw new HttpError(400, `unknown_provider: ${provider}`);
}

/** Credentials of a config body for its carrier (422 on shape), plus Twilio's amd_enabled. */
export function parseCredentials(adapter: CarrierAdapter, raw: Record<string, unknown>): { creds: Credentials; amd: boolean | undefined } {
  const { provider: _p, amd_enabled: amd, ...rest } = raw;
  const items = [];
  const parsed = adapter.credentialsSchema.safeParse(rest);
  if (!parsed.success) items.push(...zodToItems(parsed.error, rest).map((i) => ({ ...i, path: ['config', ...i.path] })));
  items.push(...amdItems(adapter, amd));
  if (items.length || !parsed.success) throw new HttpError(422, to422(items, 'body'));
  return { creds: parsed.data, amd: amd as boolean | undefined };
}

function amdItems(adapter: CarrierAdapter, amd: unknown) {
  if (amd === undefined || (adapter.id === 'twilio' && typeof amd === 'boolean')) return [];
  return [adapter.id !== 'twilio'
    ? { type: 'extra_forbidden', path: ['config', 'amd_enabled'], msg: 'Extra inputs are not permitted', input: amd }
    : { type: 'bool_type', path: ['config', 'amd_enabled'], msg: 'Input should be a valid boolean', input: amd }];
}

/** Twilio's amd_enabled of a config body that carries no credentials (422 on shape). */
export function parseAmd(adapter: CarrierAdapter, amd: unknown): boolean | undefined {
  const items = amdItems(adapter, amd);
  if (items.length) throw new HttpError(422, to422(items, 'body'));
  return amd as boolean | undefined;
}

/** Probe credentials with the carrier: 400 invalid_credentials when refused, 502 when it cannot answer. */
export async function probeOrThrow(deps: ApiDeps, adapter: CarrierAdapter, creds: Credentials): Promise<void> {
  let result;
  try {
    result = await adapter.probeCredentials({ config: deps.config, logger: deps.logger }, creds);
  } catch (err) {
    if (err instanceof CarrierHttpError) throw new HttpError(502, `${adapter.id} credential check failed: ${err.message}`);
    throw err;
  }
  if (!result.ok) throw new HttpError(400, `invalid_credentials: ${result.reason}`);
}

/** Ownership probe: 400 'Phone number … is not owned by this … account' when absent; carrier trouble → 400/502. */
export async function ownershipOrThrow(deps: ApiDeps, adapter: CarrierAdapter, creds: Credentials, e164: string): Promise<string | null> {
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
