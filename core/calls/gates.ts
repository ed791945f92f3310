// Call-start gates, applied to every call start (POST /call, test calls, outbound and campaign dials, inbound), in order:
//   1. request rate      — global api middleware (core/ratelimit.ts): 429 'Rate limit exceeded'
//   2. monthly minutes   — 402 string, when billed minutes this calendar month (UTC) >= the org's quota
//   3. wallet            — 402 {error_code: 'insufficient_balance', error_message, balance_usd, threshold_usd}
//                          when balance < WALLET_MIN_BALANCE_USD; 403 (same shape) for the other wallet reasons:
//                          org_not_found (the organization is gone), wallet_rejected (an operator suspended the
//                          wallet: `admin -- wallet suspend`)
//   4. monthly calls     — 402 string, when calls started this calendar month (UTC, rejected attempts not counted)
//                          >= the org's calls quota; counted under the concurrency gate's lock, so it is exact
//   5. concurrency       — 429 {code: 'concurrency_limit_reached', current_limit, current_active, message}
//   6. media capacity    — 503 'All media nodes are at capacity; retry shortly' when live media nodes report and
//                          none has room for the call's weight (its transport × engines); the room is reserved on
//                          the chosen node in the same transaction (core/media-nodes.ts reserveMediaNode)
// The concurrency gate is exact under parallel load: one transaction takes a per-organization advisory lock,
// expires the organization's abandoned pending web calls, counts pending + active calls and inserts the new row,
// so two requests can never both see the last free slot. Rejections by gates 2-5 also write a rejected call row
// (throttled to one per organization + reason per minute, see rows.ts); an organization that does not exist has no
// row to keep its refusal in.
import type { Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import type { Logger } from '../logger.ts';
import { prom, registry } from '../metrics.ts';
import { HttpError } from '../http-error.ts';
import { MEDIA_AT_CAPACITY, MEDIA_RETRY_AFTER_S, reserveMediaNode, type AssignedNode, type WeightWant } from '../media-nodes.ts';
import { expireSql, notifyExpired, orgCallsLock, type ExpiredCall } from './expiry.ts';
import type { RejectReason } from './model.ts';
import { insertPendingCall, insertRejectedCall, type NewCall } from './rows.ts';

const gateRejections = new prom.Counter({
  name: 'call_gate_rejections_total',
  help: 'Call starts refused by a gate (quota, wallet, concurrency), by reason',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export interface GateRejection {
  status: 402 | 403 | 429 | 503;
  reason: RejectReason;
  detail: string | Record<string, unknown>;
}

export interface GateDeps {
  db: Db;
  config: Config;
  logger: Logger;
  /** Calls found expired here are announced by the never-connected rule (call.completed needs Temporal). */
  temporal?: TemporalClient | null;
}

/** `node`: the media node the call's room is reserved on (null when no node reports: nothing to reserve). */
export type Admission = { ok: true; callId: string; createdAt: string; node: AssignedNode | null } | { ok: false; rejection: GateRejection };

/** Room on a media node for the call: what it weighs (core/media-nodes.ts) and how long a node may be silent. */
export interface MediaWant {
  weight: WeightWant;
  deadAfterS: number;
}

const MEDIA_CAPACITY_REJECTION: GateRejection = { status: 503, reason: 'media_capacity', detail: MEDIA_AT_CAPACITY };

class NoMediaRoom extends Error {}

/** The HTTP answer to a gate rejection: a full media tier is an expected, retryable condition (503, Retry-After). */
export function gateError(r: GateRejection): HttpError {
  return r.reason === 'media_capacity' ? new HttpError(503, r.detail, { retryAfterS: MEDIA_RETRY_AFTER_S, expected: true }) : new HttpError(r.status, r.detail);
}

/** USD as a string with at least 2 and at most 6 decimals: 0.5 → "0.50", 0.123 → "0.123". */
export function usdString(v: number): string {
  const s = v.toFixed(6).replace(/0+$/, '');
  const [int, dec = ''] = s.split('.');
  return `${int}.${dec.padEnd(2, '0')}`;
}

const orgLimits = z.object({
  balance_usd: z.number(),
  concurrency_limit: z.number().nullable(),
  monthly_minutes_quota: z.number().nullable(),
  wallet_status: z.string(),
  wallet_status_reason: z.string().nullable(),
});

/** Billed minutes: each connected call rounds its duration up to whole minutes. */
export const billedMinutesSql = sql.fragment`COALESCE(sum(ceil(duration_seconds / 60.0)), 0)::int`;

export async function minutesUsedThisMonth(db: Pick<Db, 'oneFirst'>, orgId: string): Promise<number> {
  return db.oneFirst(sql.type(z.object({ used: z.number() }))`
    SELECT ${billedMinutesSql} AS used FROM calls
    WHERE organization_id = ${orgId} AND duration_seconds IS NOT NULL
      AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`);
}

/** Gates 2 and 3 (read-only checks). Returns the rejection, or null to go on to the concurrency gate. */
export async function checkQuotaAndWallet(db: Db, config: Config, orgId: string): Promise<GateRejection | null> {
  const org = await db.maybeOne(sql.type(orgLimits)`
    SELECT balance_usd, concurrency_limit, monthly_minutes_quota, wallet_status, wallet_status_reason FROM organizations WHERE id = ${orgId}`);
  if (!org) {
    return {
      status: 403,
      reason: 'org_not_found',
      detail: { error_code: 'org_not_found', error_message: 'Organization not found', balance_usd: usdString(0), threshold_usd: usdString(config.WALLET_MIN_BALANCE_USD) },
    };
  }
  if (org.monthly_minutes_quota !== null) {
    const used = await minutesUsedThisMonth(db, orgId);
    if (used >= org.monthly_minutes_quota) {
      return {
        status: 402,
        // The spec's monthly-quota refusal is the 402 (insufficient balance) variant with a plain string detail: its
        // connectionStatus is the 402's, insufficient_balance (logs.validation_error keeps the quota message).
        reason: 'insufficient_balance',
        detail: `The organization has exceeded its monthly call minutes quota (${used} of ${org.monthly_minutes_quota} minutes used this month)`,
      };
    }
  }
  const threshold = config.WALLET_MIN_BALANCE_USD;
  if (org.wallet_status === 'suspended') {
    return {
      status: 403,
      reason: 'wallet_rejected',
      detail: {
        error_code: 'wallet_rejected',
        error_message: `The organization's wallet is suspended${org.wallet_status_reason ? `: ${org.wallet_status_reason}` : ''}. No call can start until the operator lifts the suspension.`,
        balance_usd: usdString(org.balance_usd),
        threshold_usd: usdString(threshold),
      },
    };
  }
  if (org.balance_usd < threshold) {
    return {
      status: 402,
      reason: 'insufficient_balance',
      detail: {
        error_code: 'insufficient_balance',
        error_message: `Insufficient wallet balance: ${usdString(org.balance_usd)} USD is below the minimum of ${usdString(threshold)} USD required to start a call. Top up the wallet to continue.`,
        balance_usd: usdString(org.balance_usd),
        threshold_usd: usdString(threshold),
      },
    };
  }
  return null;
}

const counted = z.object({ active: z.number(), lim: z.number().nullable(), calls_quota: z.number().nullable() });

/** Calls started this calendar month (UTC): every row but rejected attempts (a dial that failed was a call). */
export async function callsStartedThisMonth(db: Pick<Db, 'oneFirst'>, orgId: string): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM calls
    WHERE organization_id = ${orgId} AND NOT ('rejected' = ANY(tags))
      AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`);
}

/**
 * Gates 4, 5 and 6 + row creation, atomically: under the organization's advisory lock, expire abandoned pending web
 * calls, count pending + active calls and insert the pending row only if a slot is free; then, with `media`, reserve
 * room for it on a media node — no room rolls the row back (no slot is held, nothing is dialled).
 */
export async function admitUnderConcurrency(deps: GateDeps, call: NewCall, media?: MediaWant): Promise<Admission> {
  const { db, config } = deps;
  let expired: readonly ExpiredCall[] = [];
  const result = await db.transaction(async (tx) => {
    await tx.query(orgCallsLock(call.organizationId));
    expired = await tx.any(expireSql(config.CALL_JOIN_TIMEOUT_S, call.organizationId));
    const row = await tx.one(sql.type(counted)`
      SELECT (SELECT count(*)::int FROM calls WHERE organization_id = ${call.organizationId} AND status IN ('pending', 'active')) AS active,
             (SELECT concurrency_limit FROM organizations WHERE id = ${call.organizationId}) AS lim,
             (SELECT monthly_calls_quota FROM organizations WHERE id = ${call.organizationId}) AS calls_quota`);
    if (row.calls_quota !== null) {
      // under the organization's lock: parallel starts cannot both take the last call of the quota
      const used = await callsStartedThisMonth(tx, call.organizationId);
      if (used >= row.calls_quota) {
        return {
          ok: false as const,
          rejection: {
            status: 402 as const,
            reason: 'insufficient_balance' as const,
            detail: `The organization has exceeded its monthly calls quota (${used} of ${row.calls_quota} calls started this month)`,
          },
        };
      }
    }
    const limit = row.lim ?? config.DEFAULT_CONCURRENCY;
    if (row.active >= limit) {
      return {
        ok: false as const,
        rejection: {
          status: 429 as const,
          reason: 'concurrency_limit_reached' as const,
          detail: {
            code: 'concurrency_limit_reached',
            current_limit: limit,
            current_active: row.active,
            message: `Concurrent call limit reached: ${row.active} of ${limit} calls are in progress. Retry after a call ends.`,
          },
        },
      };
    }
    const inserted = await insertPendingCall(tx, call);
    let node: AssignedNode | null = null;
    if (media) {
      const r = await reserveMediaNode(tx, inserted.id, media.weight, media.deadAfterS);
      if (r.full) throw new NoMediaRoom();
      node = r.node;
    }
    return { ok: true as const, callId: inserted.id, createdAt: inserted.created_at, node };
  }).catch((err: unknown) => {
    if (!(err instanceof NoMediaRoom)) throw err;
    expired = []; // rolled back with the row: expired again by the next call start
    return { ok: false as const, rejection: MEDIA_CAPACITY_REJECTION };
  });
  // Their `call.ended` goes out after the commit, without holding up this request.
  if (expired.length) void notifyExpired(deps, expired).catch((err: unknown) => deps.logger.warn({ err }, 'announcing expired calls failed'));
  return result;
}

/**
 * Run gates 2-6 for a call start and create its pending row (gate 6 only with `media`). On rejection the rejected row is written
 * (throttled) with `rejectedRow` describing the attempt as the client sent it.
 */
export async function admitCall(
  deps: GateDeps,
  call: NewCall,
  rejectedRow: { configSnapshot: unknown },
  media?: MediaWant,
): Promise<Admission> {
  const early = await checkQuotaAndWallet(deps.db, deps.config, call.organizationId);
  const result: Admission = early ? { ok: false, rejection: early } : await admitUnderConcurrency(deps, call, media);
  if (!result.ok) {
    gateRejections.inc({ reason: result.rejection.reason });
    // A full media tier is a condition of the service, not of the request: POST /call, test calls and campaign dials
    // answer 503 and are retried with no row; a carrier's inbound call happened, so it leaves its refused row.
    if (result.rejection.reason === 'media_capacity' && !call.telephony?.carrierCallId) return result;
    if (result.rejection.reason === 'org_not_found') {
      // no organization row to hang a rejected call on (calls.organization_id references it)
      deps.logger.warn({ orgId: call.organizationId }, 'call start refused: the organization does not exist');
      return result;
    }
    await insertRejectedCall(deps.db, {
      ...call,
      configSnapshot: rejectedRow.configSnapshot,
      reason: result.rejection.reason,
      payload: result.rejection.detail,
    });
  }
  return result;
}
