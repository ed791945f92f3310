// Call history: GET /calls filters and sorts as SQL, always scoped to one organization, and GET /calls/{callId}.
// Indexes serving these queries: migrations 0002 and 0020 (bench/history.ts; figures in docs/benchmarks.md).
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import { callDetailRow, callListRow, listColumns, transportFilter, type CallDetailRow, type CallListRow } from './model.ts';

export const SORT_COLUMNS = ['ended_at', 'created_at', 'duration_seconds', 'cost'] as const;
export type SortColumn = (typeof SORT_COLUMNS)[number];

export interface CallFilter {
  callId?: string;
  transport?: string[];
  status?: string[];
  connectionStatus?: string[];
  endedReason?: string[];
  agentId?: string;
  agentName?: string;
  tag?: string[];
  campaignId?: number;
  phoneNumber?: string;
  telephonyProvider?: string;
  fromDate?: string;
  toDate?: string;
  callSource?: string[];
  /** analysis.status values (`analysis_status`). */
  analysisStatus?: string[];
  /** The success verdict (`success`): passed, or a score of at least 6 under score_1_10. */
  success?: boolean;
  /** Filled by listCalls: the organization's captured agent names matching agentName (when few enough). */
  agentNames?: string[];
}

export interface CallSort {
  by: SortColumn;
  order: 'asc' | 'desc';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

/** LIKE pattern for a literal substring. */
export function likeSubstring(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function conditions(orgId: string, f: CallFilter) {
  const where = [sql.fragment`organization_id = ${orgId}`];
  const anyOf = (col: string, values: string[] | undefined) => {
    if (!values?.length) return;
    where.push(values.length === 1
      ? sql.fragment`${sql.identifier([col])} = ${values[0]!}`
      : sql.fragment`${sql.identifier([col])} = ANY(${sql.array(values, 'text')})`);
  };
  if (f.callId !== undefined) {
    // An exact match on an id that is not a UUID can match nothing.
    where.push(isUuid(f.callId) ? sql.fragment`id = ${f.callId}` : sql.fragment`false`);
  }
  anyOf('transport', f.transport && transportFilter(f.transport));
  anyOf('status', f.status);
  anyOf('connection_status', f.connectionStatus);
  anyOf('ended_reason', f.endedReason);
  anyOf('call_source', f.callSource);
  anyOf('analysis_status', f.analysisStatus);
  if (f.success !== undefined) where.push(sql.fragment`analysis_success = ${f.success}`);
  if (f.agentId !== undefined) where.push(sql.fragment`agent_uuid = ${f.agentId}`);
  if (f.agentName !== undefined && f.agentName !== '') {
    // Names matched up front on call_agent_names (see agentNameMatches) turn the substring into an equality.
    where.push(f.agentNames
      ? sql.fragment`agent_name = ANY(${sql.array(f.agentNames, 'text')})`
      : sql.fragment`agent_name ILIKE ${likeSubstring(f.agentName)}`);
  }
  if (f.tag?.length) {
    // tag=rejected alone matches the partial index of rejected attempts.
    where.push(f.tag.length === 1 && f.tag[0] === 'rejected'
      ? sql.fragment`'rejected' = ANY(tags)`
      : sql.fragment`tags && ${sql.array(f.tag, 'text')}`);
  }
  if (f.campaignId !== undefined) where.push(sql.fragment`campaign_id = ${f.campaignId}`);
  if (f.phoneNumber !== undefined) {
    where.push(sql.fragment`(customer_number = ${f.phoneNumber} OR platform_number = ${f.phoneNumber})`);
  }
  if (f.telephonyProvider !== undefined) where.push(sql.fragment`telephony_provider = ${f.telephonyProvider}`);
  if (f.fromDate !== undefined) where.push(sql.fragment`created_at >= ${f.fromDate}::timestamptz`);
  if (f.toDate !== undefined) where.push(sql.fragment`created_at <= ${f.toDate}::timestamptz`);
  return sql.join(where, sql.fragment` AND `);
}

/**
 * ORDER BY for a sort. NULLs (ended_at of calls in flight, duration/cost not yet known) always sort last, in
 * both directions; ties break on id so that pages are stable. created_at is NOT NULL, so it needs no NULLS clause
 * (which lets one index serve both directions).
 */
function orderBy(s: CallSort) {
  const dir = s.order === 'asc' ? sql.fragment`ASC` : sql.fragment`DESC`;
  const col = sql.identifier([s.by]);
  return s.by === 'created_at'
    ? sql.fragment`created_at ${dir}, id ${dir}`
    : sql.fragment`${col} ${dir} NULLS LAST, id ${dir}`;
}

export function listQuery(orgId: string, f: CallFilter, s: CallSort, limit: number, offset: number) {
  const cols = sql.join(listColumns.map((c) => sql.identifier([c])), sql.fragment`, `);
  return sql.type(callListRow)`
    SELECT ${cols} FROM calls WHERE ${conditions(orgId, f)}
    ORDER BY ${orderBy(s)} LIMIT ${limit} OFFSET ${offset}`;
}

/** Filters that call_counts can answer: only the grouped columns (NULLs are stored there as ''). */
export function countableFromCounters(f: CallFilter): boolean {
  return countableFromDaily(f) && f.fromDate === undefined && f.toDate === undefined;
}

/** call_counts_daily also knows the UTC day of created_at. */
export function countableFromDaily(f: CallFilter): boolean {
  return f.callId === undefined && f.agentId === undefined && !f.agentName && !f.tag?.length && f.campaignId === undefined
    && f.phoneNumber === undefined && f.telephonyProvider === undefined && !f.analysisStatus?.length && f.success === undefined;
}

const n = z.object({ n: z.number() });

/** count(*) on calls: always right, used whenever the aggregates cannot answer. */
export function countQuery(orgId: string, f: CallFilter) {
  return sql.type(n)`SELECT count(*)::int AS n FROM calls WHERE ${conditions(orgId, f)}`;
}

const dayBounds = z.object({ lo: z.string().nullable(), hi: z.string().nullable(), full: z.boolean() });

/**
 * The exact total of a filter. From call_counts when only grouped columns are filtered; from call_counts_daily
 * plus count(*) over the partial first and last day when a date range is added; otherwise count(*).
 */
export async function countCalls(db: Pick<Db, 'one' | 'oneFirst'>, orgId: string, f: CallFilter, opts: { aggregates?: boolean } = {}): Promise<number> {
  if (opts.aggregates === false || !countableFromDaily(f)) return db.oneFirst(countQuery(orgId, f));
  const { fromDate, toDate, ...groups } = f;
  if (fromDate === undefined && toDate === undefined) {
    return db.oneFirst(sql.type(n)`SELECT COALESCE(sum(n), 0)::int AS n FROM call_counts WHERE ${conditions(orgId, groups)}`);
  }
  // Whole UTC days inside [from, to] (to is inclusive): lo = first day starting at or after `from`,
  // hi = first day whose end is after `to` (exclusive bound).
  const from = fromDate ?? null;
  const to = toDate ?? null;
  const b = await db.one(sql.type(dayBounds)`
    WITH x AS (
      SELECT CASE WHEN ${from}::timestamptz IS NULL THEN NULL
                  WHEN ${from}::timestamptz = date_trunc('day', ${from}::timestamptz, 'UTC') THEN (${from}::timestamptz AT TIME ZONE 'UTC')::date
                  ELSE (${from}::timestamptz AT TIME ZONE 'UTC')::date + 1 END AS lo,
             CASE WHEN ${to}::timestamptz IS NULL THEN NULL
                  ELSE ((${to}::timestamptz + interval '1 microsecond') AT TIME ZONE 'UTC')::date END AS hi)
    SELECT lo::text AS lo, hi::text AS hi, (lo IS NULL OR hi IS NULL OR lo < hi) AS full FROM x`);
  if (!b.full) return db.oneFirst(countQuery(orgId, f));
  const parts = [sql.fragment`(SELECT COALESCE(sum(n), 0) FROM call_counts_daily WHERE ${conditions(orgId, groups)}
      ${b.lo ? sql.fragment`AND day >= ${b.lo}::date` : sql.fragment``} ${b.hi ? sql.fragment`AND day < ${b.hi}::date` : sql.fragment``})`];
  if (from && b.lo) {
    parts.push(sql.fragment`(SELECT count(*) FROM calls WHERE ${conditions(orgId, groups)}
      AND created_at >= ${from}::timestamptz AND created_at < (${b.lo}::date::timestamp AT TIME ZONE 'UTC'))`);
  }
  if (to && b.hi) {
    parts.push(sql.fragment`(SELECT count(*) FROM calls WHERE ${conditions(orgId, groups)}
      AND created_at >= (${b.hi}::date::timestamp AT TIME ZONE 'UTC') AND created_at <= ${to}::timestamptz)`);
  }
  return db.oneFirst(sql.type(n)`SELECT (${sql.join(parts, sql.fragment` + `)})::int AS n`);
}

/** Above this many distinct matching names the substring is applied to the calls themselves. */
export const MAX_MATCHED_AGENT_NAMES = 1000;

/** The organization's distinct captured agent names containing the substring, or null when there are too many. */
export async function agentNameMatches(db: Pick<Db, 'anyFirst'>, orgId: string, needle: string): Promise<string[] | null> {
  const names = await db.anyFirst(sql.type(z.object({ agent_name: z.string() }))`
    SELECT agent_name FROM call_agent_names
    WHERE organization_id = ${orgId} AND agent_name ILIKE ${likeSubstring(needle)}
    LIMIT ${MAX_MATCHED_AGENT_NAMES + 1}`);
  return names.length > MAX_MATCHED_AGENT_NAMES ? null : [...names];
}

/** One page and the total, run side by side on two connections. */
export async function listCalls(
  db: Db,
  orgId: string,
  f: CallFilter,
  s: CallSort,
  page: { limit: number; offset: number },
): Promise<{ rows: readonly CallListRow[]; total: number }> {
  if (f.agentName) {
    const names = await agentNameMatches(db, orgId, f.agentName);
    if (names) f = { ...f, agentNames: names };
  }
  const [rows, total] = await Promise.all([
    db.any(listQuery(orgId, f, s, page.limit, page.offset)),
    countCalls(db, orgId, f),
  ]);
  return { rows, total };
}

export async function getCall(db: Db, orgId: string, callId: string): Promise<CallDetailRow | null> {
  if (!isUuid(callId)) return null;
  return db.maybeOne(sql.type(callDetailRow)`
    SELECT ${sql.join(listColumns.map((c) => sql.identifier([c])), sql.fragment`, `)},
           config_snapshot, context_variables, logs, telephony_sim, transcript, transcript_url, recording_url, usage,
           summary, analysis, updated_at
    FROM calls WHERE id = ${callId} AND organization_id = ${orgId}`);
}
