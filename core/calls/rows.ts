// Creating call rows: admitted calls (inside the concurrency gate's transaction) and rejected attempts.
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import type { CallSource, RejectReason, Transport } from './model.ts';
import { activeTraceCarrier } from '../tracing.ts';

type Queryable = Pick<Db, 'one' | 'maybeOne' | 'query'>;

export interface CallAgentRef {
  /** agents.id (internal) — null for inline agents. */
  id: number | null;
  uuid: string | null;
  name: string | null;
}

export interface NewCall {
  organizationId: string;
  transport: Transport;
  callSource: CallSource;
  tags: string[];
  agent: CallAgentRef | null;
  configSnapshot: unknown;
  contextVariables?: Record<string, string> | null;
  telephonySim?: boolean;
  campaignId?: number | null;
  platformNumber?: string | null;
  customerNumber?: string | null;
  telephonyProvider?: string | null;
  logs?: Record<string, unknown>;
  /** Carrier columns of a phone call (written on admitted rows; rejected rows carry only `carrierCallId`). */
  telephony?: {
    configId?: number | null;
    /** Encrypted inline credentials (core/secrets.ts). */
    credentials?: Buffer | null;
    bindingId?: number | null;
    carrierCallId?: string | null;
    /** Business key for exactly-once dials (UNIQUE). */
    dialKey?: string | null;
  };
}

const created = z.object({ id: z.string(), created_at: z.string() });

/** Tags are a set: keep the first occurrence, drop blanks. */
export function tagSet(tags: readonly string[]): string[] {
  return [...new Set(tags.filter((t) => t.length > 0))];
}

/**
 * A copy that PostgreSQL's jsonb accepts whatever the client sent: NUL characters and unpaired surrogates become
 * U+FFFD, `__proto__` keys are dropped, nesting is cut at 64 levels. Used on everything stored from a request.
 */
export function jsonSafe(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return v.toWellFormed().replaceAll('\u0000', '\uFFFD');
  if (v === null || typeof v !== 'object') return typeof v === 'number' && !Number.isFinite(v) ? null : v;
  if (depth >= 64) return null;
  if (Array.isArray(v)) return v.map((x) => jsonSafe(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === '__proto__') continue;
    out[jsonSafe(k) as string] = jsonSafe(x, depth + 1);
  }
  return out;
}

function insertCall(q: Queryable, c: NewCall, status: 'pending' | 'error', connectionStatus: string | null) {
  // a rejected row keeps only the carrier's call id (a retried inbound webhook finds its refusal, migration 0090)
  const t = status === 'pending' ? c.telephony : c.telephony?.carrierCallId ? { carrierCallId: c.telephony.carrierCallId } : undefined;
  // the media session of the call continues the trace of whatever created it (api request, dial activity)
  const trace = status === 'pending' ? activeTraceCarrier() : null;
  return q.one(sql.type(created)`
    INSERT INTO calls (organization_id, agent_id, agent_uuid, agent_name, transport, status, connection_status,
                       call_source, tags, config_snapshot, context_variables, logs, telephony_sim, campaign_id,
                       platform_number, customer_number, telephony_provider,
                       telephony_config_id, carrier_credentials, inbound_binding_id, carrier_call_id, dial_key, trace_context)
    VALUES (${c.organizationId}, ${c.agent?.id ?? null}, ${c.agent?.uuid ?? null}, ${c.agent?.name == null ? null : (jsonSafe(c.agent.name) as string)},
            ${c.transport}, ${status}, ${connectionStatus}, ${c.callSource}, ${sql.array(tagSet(c.tags), 'text')},
            ${c.configSnapshot === undefined ? null : sql.jsonb(jsonSafe(c.configSnapshot) as never)},
            ${sql.jsonb(jsonSafe(c.contextVariables ?? {}) as never)}, ${sql.jsonb(jsonSafe(c.logs ?? {}) as never)},
            ${c.telephonySim ?? false}, ${c.campaignId ?? null}, ${c.platformNumber ?? null},
            ${c.customerNumber ?? null}, ${c.telephonyProvider ?? null},
            ${t?.configId ?? null}, ${t?.credentials ? sql.binary(t.credentials) : null}, ${t?.bindingId ?? null},
            ${t?.carrierCallId ?? null}, ${t?.dialKey ?? null}, ${trace === null ? null : sql.jsonb(trace)})
    RETURNING id, created_at`);
}

/** A `pending` row for an admitted call. Call only from the concurrency gate (it holds the org lock). */
export function insertPendingCall(q: Queryable, c: NewCall) {
  return insertCall(q, c, 'pending', null);
}

/** Gate reasons are throttled to one row per organization + reason per sliding minute. */
export const THROTTLED_REASONS: ReadonlySet<RejectReason> = new Set([
  'concurrency_limit_reached', 'insufficient_balance', 'wallet_rejected', 'org_not_found', 'media_capacity',
]);

/**
 * Persist a rejected attempt: status=error, tag `rejected`, the reason in connection_status, endedReason null,
 * the redacted request as config_snapshot, the rejection payload (or frozen gate state) in logs.validation_error.
 * Returns the row id, or null when a throttled reason already has a row from this organization in the last minute.
 */
export async function insertRejectedCall(
  db: Db,
  c: Omit<NewCall, 'logs'> & { reason: RejectReason; payload: unknown },
): Promise<string | null> {
  const row: NewCall = { ...c, tags: [...c.tags, 'rejected'], logs: { validation_error: c.payload ?? null } };
  // a refused carrier call always gets its row: it is a real call, and the carrier's retry finds its refusal by it
  if (!THROTTLED_REASONS.has(c.reason) || c.telephony?.carrierCallId) return (await insertCall(db, row, 'error', c.reason)).id;
  // Serialise on (org, reason) so that a burst of parallel rejections writes exactly one row.
  return db.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`calls.reject:${c.organizationId}:${c.reason}`}, 0))`);
    const recent = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM calls
      WHERE organization_id = ${c.organizationId} AND connection_status = ${c.reason} AND 'rejected' = ANY(tags)
        AND created_at > clock_timestamp() - interval '1 minute'
      LIMIT 1`);
    if (recent) return null;
    return (await insertCall(tx, row, 'error', c.reason)).id;
  });
}
