// Campaign rows and queries shared by the api (routes/campaigns.ts) and the worker (activities/campaign.ts).
// Every tenant lookup filters by organization.
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import {
  circuitBreakerSchema,
  retryConfigSchema,
  scheduleConfigSchema,
  type CampaignLogEntry,
  type CampaignSettings,
  type CampaignState,
} from './schemas.ts';

export const CAMPAIGN_NOT_FOUND = 'Campaign not found';

export const campaignRow = z.object({
  id: z.number(),
  organization_id: z.string(),
  name: z.string(),
  state: z.string(),
  agent_id: z.number(),
  agent_uuid: z.string(),
  agent_name: z.string().nullable(),
  source_type: z.string(),
  source_id: z.string(),
  source_key: z.string(),
  telephony_configuration_id: z.number(),
  telephony_configuration_name: z.string().nullable(),
  total_rows: z.number().nullable(),
  processed_rows: z.number(),
  failed_rows: z.number(),
  max_concurrency: z.number(),
  retry_config: z.unknown(),
  schedule_config: z.unknown(),
  circuit_breaker: z.unknown(),
  executed_count: z.number(),
  total_queued_count: z.number(),
  logs: z.unknown(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
});
export type CampaignRow = z.infer<typeof campaignRow>;

const CAMPAIGN_SELECT = sql.fragment`
  SELECT c.id, c.organization_id, c.name, c.state, c.agent_id, a.uuid::text AS agent_uuid, a.name AS agent_name,
         c.source_type, c.source_id, c.source_key, c.telephony_configuration_id, t.name AS telephony_configuration_name,
         c.total_rows, c.processed_rows, c.failed_rows, c.max_concurrency, c.retry_config, c.schedule_config,
         c.circuit_breaker, c.executed_count, c.total_queued_count, c.logs, c.created_at, c.started_at, c.completed_at
  FROM campaigns c
  JOIN agents a ON a.id = c.agent_id
  LEFT JOIN telephony_configs t ON t.id = c.telephony_configuration_id AND t.organization_id = c.organization_id`;

const iso = (v: string | null) => (v === null ? null : new Date(v).toISOString());

/** The spec's Campaign response. */
export function campaignResponse(r: CampaignRow) {
  return {
    id: r.id,
    name: r.name,
    state: r.state,
    agent_id: r.agent_id,
    agent_name: r.agent_name,
    source_type: r.source_type,
    source_id: r.source_id,
    telephony_configuration_id: r.telephony_configuration_id,
    telephony_configuration_name: r.telephony_configuration_name,
    total_rows: r.total_rows,
    processed_rows: r.processed_rows,
    failed_rows: r.failed_rows,
    max_concurrency: r.max_concurrency,
    retry_config: r.retry_config,
    schedule_config: r.schedule_config ?? null,
    circuit_breaker: r.circuit_breaker,
    executed_count: r.executed_count,
    total_queued_count: r.total_queued_count,
    logs: Array.isArray(r.logs) ? r.logs : [],
    created_at: iso(r.created_at),
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
  };
}

export async function getCampaign(db: Pick<Db, 'maybeOne'>, orgId: string, id: number): Promise<CampaignRow | null> {
  if (!Number.isSafeInteger(id) || id < 1) return null;
  return db.maybeOne(sql.type(campaignRow)`${CAMPAIGN_SELECT} WHERE c.id = ${id} AND c.organization_id = ${orgId}`);
}

/** Any organization: the worker's view (the workflow is keyed by campaign id alone). */
export async function getCampaignById(db: Pick<Db, 'maybeOne'>, id: number): Promise<CampaignRow | null> {
  return db.maybeOne(sql.type(campaignRow)`${CAMPAIGN_SELECT} WHERE c.id = ${id}`);
}

export async function listCampaigns(db: Db, orgId: string, page: { limit: number; offset: number }) {
  const [rows, total] = await Promise.all([
    db.any(sql.type(campaignRow)`${CAMPAIGN_SELECT} WHERE c.organization_id = ${orgId} ORDER BY c.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM campaigns WHERE organization_id = ${orgId}`),
  ]);
  return { rows, total };
}

/** The settings the workflow follows, parsed from the row (defaults fill anything an older row lacks). */
export function settingsOf(r: Pick<CampaignRow, 'max_concurrency' | 'retry_config' | 'schedule_config' | 'circuit_breaker'>): CampaignSettings {
  return {
    maxConcurrency: r.max_concurrency,
    retry: retryConfigSchema.parse(r.retry_config ?? {}),
    schedule: r.schedule_config ? scheduleConfigSchema.parse(r.schedule_config) : null,
    breaker: circuitBreakerSchema.parse(r.circuit_breaker ?? {}),
  };
}

export function logEntry(at: number | Date, e: Omit<CampaignLogEntry, 'ts'>): CampaignLogEntry {
  return { ts: new Date(at).toISOString(), level: e.level, event: e.event, message: e.message, details: e.details ?? {} };
}

/** Appends log entries (jsonb array concatenation, one statement). */
export async function appendCampaignLogs(db: Pick<Db, 'query'>, campaignId: number, entries: CampaignLogEntry[]): Promise<void> {
  if (!entries.length) return;
  await db.query(sql.unsafe`
    UPDATE campaigns SET logs = logs || ${JSON.stringify(entries)}::jsonb, updated_at = now() WHERE id = ${campaignId}`);
}

// ── telephony configuration and caller-ID pool ───────────────────────────────────────────────────────────

const configRow = z.object({ id: z.number(), name: z.string(), provider: z.string() });
export type TelephonyConfigRef = z.infer<typeof configRow>;

/** The organization's config by id, or its default outbound config (null id); null when none. */
export async function findTelephonyConfig(db: Pick<Db, 'maybeOne'>, orgId: string, id: number | null): Promise<TelephonyConfigRef | null> {
  if (id !== null) {
    if (!Number.isSafeInteger(id)) return null;
    return db.maybeOne(sql.type(configRow)`SELECT id, name, provider FROM telephony_configs WHERE id = ${id} AND organization_id = ${orgId}`);
  }
  // The default outbound configuration; an organization with exactly one configuration uses that one.
  return db.maybeOne(sql.type(configRow)`
    SELECT id, name, provider FROM telephony_configs WHERE organization_id = ${orgId}
    ORDER BY is_default_outbound DESC, id LIMIT 1`);
}

/** Numbers of a config usable as caller IDs: active PSTN numbers. */
const poolWhere = (orgId: string, configId: number) => sql.fragment`
  n.organization_id = ${orgId} AND n.telephony_config_id = ${configId} AND n.is_active AND n.address_type = 'pstn'`;

export async function callerIdCount(db: Pick<Db, 'oneFirst'>, orgId: string, configId: number): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM phone_numbers n WHERE ${poolWhere(orgId, configId)}`);
}

/** The organization's concurrent-call ceiling (core/calls/gates.ts uses the same rule). */
export async function orgCeiling(db: Pick<Db, 'maybeOneFirst'>, config: Config, orgId: string): Promise<number> {
  const lim = await db.maybeOneFirst(sql.type(z.object({ l: z.number().nullable() }))`SELECT concurrency_limit AS l FROM organizations WHERE id = ${orgId}`);
  return lim ?? config.DEFAULT_CONCURRENCY;
}

/**
 * Reserves a free caller ID of the (organization, config) pool for one dial attempt, under a per-pool advisory lock:
 * a number is free when no live outbound call uses it and no other campaign dial has reserved it without having
 * created its call row yet. Keeps an earlier reservation of the same attempt (activity retries). Null: none free.
 */
export async function reserveCallerId(
  db: Db,
  a: { orgId: string; configId: number; campaignId: number; contactId: number; attempt: number },
): Promise<string | null> {
  return db.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtext(${`campaign-callers:${a.orgId}:${a.configId}`}))`);
    const mine = await tx.maybeOneFirst(sql.type(z.object({ caller_id: z.string().nullable() }))`
      SELECT caller_id FROM campaign_attempts WHERE campaign_id = ${a.campaignId} AND contact_id = ${a.contactId} AND attempt = ${a.attempt}`);
    if (mine) return mine;
    const picked = await tx.maybeOneFirst(sql.type(z.object({ address_normalized: z.string() }))`
      SELECT n.address_normalized FROM phone_numbers n
      WHERE ${poolWhere(a.orgId, a.configId)}
        AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.organization_id = ${a.orgId} AND c.status IN ('pending', 'active')
                        AND c.transport = 'outbound' AND c.platform_number = n.address_normalized)
        AND NOT EXISTS (SELECT 1 FROM campaign_attempts r WHERE r.organization_id = ${a.orgId} AND r.caller_id = n.address_normalized
                        AND r.call_id IS NULL AND r.ended_at IS NULL)
      ORDER BY n.is_default_caller_id DESC, n.id LIMIT 1`);
    if (!picked) return null;
    await tx.query(sql.unsafe`
      UPDATE campaign_attempts SET caller_id = ${picked}
      WHERE campaign_id = ${a.campaignId} AND contact_id = ${a.contactId} AND attempt = ${a.attempt}`);
    return picked;
  });
}

export type { CampaignState };
