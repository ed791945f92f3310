// Call history: GET /calls filters and sorts as SQL, always scoped to one organization, and GET /calls/{callId}.
// Indexes serving these queries: migrations 0002 and 0020 (see bench/history.ts for the million-row figures).
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import { callDetailRow, callListRow, listColumns, type CallDetailRow, type CallListRow } from './model.ts';

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
  anyOf('transport', f.transport);
  anyOf('status', f.status);
  anyOf('connection_status', f.connectionStatus);
  anyOf('ended_reason', f.endedReason);
  anyOf('call_source', f.callSource);
  if (f.agentId !== undefined) where.push(sql.fragment`agent_uuid = ${f.agentId}`);
  if (f.agentName !== undefined && f.agentName !== '') where.push(sql.fragment`agent_name ILIKE ${likeSubstring(f.agentName)}`);
  if (f.tag?.length) where.push(sql.fragment`tags && ${sql.array(f.tag, 'text')}`);
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

export function countQuery(orgId: string, f: CallFilter) {
  return sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE ${conditions(orgId, f)}`;
}

/** One page and the total, run side by side on two connections. */
export async function listCalls(
  db: Db,
  orgId: string,
  f: CallFilter,
  s: CallSort,
  page: { limit: number; offset: number },
): Promise<{ rows: readonly CallListRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    db.any(listQuery(orgId, f, s, page.limit, page.offset)),
    db.oneFirst(countQuery(orgId, f)),
  ]);
  return { rows, total };
}

export async function getCall(db: Db, orgId: string, callId: string): Promise<CallDetailRow | null> {
  if (!isUuid(callId)) return null;
  return db.maybeOne(sql.type(callDetailRow)`
    SELECT ${sql.join(listColumns.map((c) => sql.identifier([c])), sql.fragment`, `)},
           config_snapshot, context_variables, logs, telephony_sim, transcript, transcript_url, recording_url, usage,
           summary, updated_at
    FROM calls WHERE id = ${callId} AND organization_id = ${orgId}`);
}
