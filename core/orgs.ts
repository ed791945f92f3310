// Organizations, API keys and the wallet: the queries the api, media, admin CLI and worker share.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';

const KEY_PREFIX = 'vak_';

/** 32 random bytes (256 bits) → `vak_` + base64url. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, KEY_PREFIX.length + 8), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export const organizationRow = z.object({
  id: z.string().uuid(),
  name: z.string(),
  balance_usd: z.number(),
  concurrency_limit: z.number().nullable(),
  rate_per_minute: z.number().nullable(),
  monthly_minutes_quota: z.number().nullable(),
  monthly_calls_quota: z.number().nullable(),
  wallet_status: z.enum(['active', 'suspended']),
  wallet_status_reason: z.string().nullable(),
  created_at: z.string(),
});
export type OrganizationRow = z.infer<typeof organizationRow>;

export const apiKeyRow = z.object({
  id: z.number(),
  organization_id: z.string().uuid().nullable(),
  name: z.string(),
  key_prefix: z.string(),
  status: z.enum(['active', 'archived']),
  created_at: z.string(),
  archived_at: z.string().nullable(),
});
export type ApiKeyRow = z.infer<typeof apiKeyRow>;

const ORG_COLS = sql.fragment`id, name, balance_usd, concurrency_limit, rate_per_minute, monthly_minutes_quota, monthly_calls_quota,
  wallet_status, wallet_status_reason, created_at`;

export async function createOrganization(db: Db, input: { name: string; balanceUsd?: number }): Promise<OrganizationRow> {
  return db.transaction(async (tx) => {
    const org = await tx.one(sql.type(organizationRow)`
      INSERT INTO organizations (name, balance_usd) VALUES (${input.name}, ${input.balanceUsd ?? 0})
      RETURNING ${ORG_COLS}`);
    if (input.balanceUsd) {
      await tx.query(sql.unsafe`INSERT INTO wallet_transactions (organization_id, amount_usd, kind, note)
        VALUES (${org.id}, ${input.balanceUsd}, 'credit', 'initial balance')`);
    }
    return org;
  });
}

export async function getOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  return db.maybeOne(sql.type(organizationRow)`
    SELECT ${ORG_COLS}
    FROM organizations WHERE id = ${id}`);
}

export async function listOrganizations(db: Db): Promise<readonly OrganizationRow[]> {
  return db.any(sql.type(organizationRow)`
    SELECT ${ORG_COLS}
    FROM organizations ORDER BY created_at`);
}

export async function setOrganizationLimits(
  db: Db,
  id: string,
  limits: { concurrency?: number | null; ratePerMinute?: number | null; monthlyMinutes?: number | null; monthlyCalls?: number | null },
): Promise<OrganizationRow | null> {
  const sets = [
    limits.concurrency !== undefined ? sql.fragment`concurrency_limit = ${limits.concurrency}` : null,
    limits.ratePerMinute !== undefined ? sql.fragment`rate_per_minute = ${limits.ratePerMinute}` : null,
    limits.monthlyMinutes !== undefined ? sql.fragment`monthly_minutes_quota = ${limits.monthlyMinutes}` : null,
    limits.monthlyCalls !== undefined ? sql.fragment`monthly_calls_quota = ${limits.monthlyCalls}` : null,
  ].filter((s) => s !== null);
  if (sets.length === 0) return getOrganization(db, id);
  return db.maybeOne(sql.type(organizationRow)`
    UPDATE organizations SET ${sql.join(sets, sql.fragment`, `)} WHERE id = ${id}
    RETURNING ${ORG_COLS}`);
}

/**
 * An operator's hold on the wallet: 'suspended' refuses every call start (403 wallet_rejected, saying `reason`);
 * 'active' lifts it. Returns the organization, or null when it does not exist.
 */
export async function setWalletStatus(db: Db, id: string, status: 'active' | 'suspended', reason: string | null = null): Promise<OrganizationRow | null> {
  return db.maybeOne(sql.type(organizationRow)`
    UPDATE organizations SET wallet_status = ${status}, wallet_status_reason = ${status === 'suspended' ? reason : null} WHERE id = ${id}
    RETURNING ${ORG_COLS}`);
}

/** Credit (positive) or adjust the wallet; writes the ledger row and the balance in one transaction. */
export async function creditWallet(db: Db, orgId: string, usd: number, note = 'credit'): Promise<number | null> {
  return db.transaction(async (tx) => {
    const balance = await tx.maybeOneFirst(sql.type(z.object({ balance_usd: z.number() }))`
      UPDATE organizations SET balance_usd = balance_usd + ${usd} WHERE id = ${orgId} RETURNING balance_usd`);
    if (balance === null) return null;
    await tx.query(sql.unsafe`INSERT INTO wallet_transactions (organization_id, amount_usd, kind, note)
      VALUES (${orgId}, ${usd}, 'credit', ${note})`);
    return balance;
  });
}

/**
 * Debit a call's cost exactly once: the ledger's unique (call_id) index for kind=call_debit makes a repeated
 * debit a no-op. Returns true when this call debited.
 */
export async function debitCall(db: Db, orgId: string, callId: string, usd: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    const inserted = await tx.maybeOne(sql.type(z.object({ id: z.number() }))`
      INSERT INTO wallet_transactions (organization_id, amount_usd, kind, call_id, note)
      VALUES (${orgId}, ${-usd}, 'call_debit', ${callId}, 'call cost')
      ON CONFLICT (call_id) WHERE kind = 'call_debit' DO NOTHING
      RETURNING id`);
    if (!inserted) return false;
    await tx.query(sql.unsafe`UPDATE organizations SET balance_usd = balance_usd - ${usd} WHERE id = ${orgId}`);
    return true;
  });
}

export async function createApiKey(
  db: Db,
  orgId: string | null,
  name: string,
): Promise<{ row: ApiKeyRow; key: string }> {
  const { key, prefix, hash } = generateApiKey();
  const row = await db.one(sql.type(apiKeyRow)`
    INSERT INTO api_keys (organization_id, name, key_prefix, key_hash)
    VALUES (${orgId}, ${name}, ${prefix}, ${hash})
    RETURNING id, organization_id, name, key_prefix, status, created_at, archived_at`);
  return { row, key };
}

export interface Principal {
  keyId: number;
  organizationId: string | null;
}

/**
 * Resolve a presented key. The lookup is by sha256 digest through a unique index (the secret itself never
 * meets a variable-time comparison), then confirmed with timingSafeEqual. Archived keys do not resolve.
 */
export async function resolveApiKey(db: Db, presented: string): Promise<Principal | null> {
  if (presented.length === 0 || presented.length > 512) return null;
  const hash = hashApiKey(presented);
  const row = await db.maybeOne(sql.type(z.object({ id: z.number(), organization_id: z.string().nullable(), key_hash: z.string() }))`
    SELECT id, organization_id, key_hash FROM api_keys WHERE key_hash = ${hash} AND status = 'active'`);
  if (!row) return null;
  if (!timingSafeEqual(Buffer.from(row.key_hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
  return { keyId: row.id, organizationId: row.organization_id };
}
