// Usage summary of one organization over the half-open window [from, to) of call creation time, served at
// GET /wallet/dashboard/usage-summary and GET /organizations/reports/usage-summary (same body):
//  - from, to: the window actually used (created_at >= from AND created_at < to), ISO 8601;
//  - total_calls: calls created in the window, excluding attempts rejected before start (rows tagged `rejected`),
//    which rejected_calls counts; connected_calls: connectionStatus `completed` (answered / web client joined);
//  - billed_minutes: sum of ceil(durationSeconds / 60), whole minutes rounded up (the monthly quota's unit);
//  - total_duration_seconds (active-call time, 2 decimals); average_duration_seconds over calls with a duration, 0 if none;
//  - spend_usd: LLM + TTS + STT cost, 6 decimals; carrier charges are the customer's own bill and not included;
//  - success_rate: calls that connected AND finished `completed` / total_calls, 4 decimals; 0 when total_calls is 0.
// `excludeTags` leaves out calls carrying any of those tags (e.g. `agent_test`: the calls of agent-test runs).
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';

export const usageSummaryRow = z.object({
  total_calls: z.number(),
  rejected_calls: z.number(),
  connected_calls: z.number(),
  successful_calls: z.number(),
  billed_minutes: z.number(),
  total_duration_seconds: z.number(),
  timed_calls: z.number(),
  spend_usd: z.number(),
});

export interface UsageSummary {
  from: string;
  to: string;
  total_calls: number;
  rejected_calls: number;
  connected_calls: number;
  billed_minutes: number;
  total_duration_seconds: number;
  average_duration_seconds: number;
  spend_usd: number;
  success_rate: number;
}

const round = (v: number, dp: number) => Math.round(v * 10 ** dp) / 10 ** dp;

export async function usageSummary(db: Db, orgId: string, from: Date, to: Date, opts: { excludeTags?: string[] } = {}): Promise<UsageSummary> {
  const excluded = opts.excludeTags?.length ? sql.fragment`AND NOT (tags && ${sql.array(opts.excludeTags, 'text')})` : sql.fragment``;
  const r = await db.one(sql.type(usageSummaryRow)`
    SELECT count(*) FILTER (WHERE NOT rejected)::int AS total_calls,
           count(*) FILTER (WHERE rejected)::int AS rejected_calls,
           count(*) FILTER (WHERE NOT rejected AND connection_status = 'completed')::int AS connected_calls,
           count(*) FILTER (WHERE NOT rejected AND connection_status = 'completed' AND status = 'completed')::int AS successful_calls,
           COALESCE(sum(ceil(duration_seconds / 60.0)) FILTER (WHERE NOT rejected), 0)::int AS billed_minutes,
           COALESCE(sum(duration_seconds) FILTER (WHERE NOT rejected), 0)::float8 AS total_duration_seconds,
           count(duration_seconds) FILTER (WHERE NOT rejected)::int AS timed_calls,
           COALESCE(sum(cost) FILTER (WHERE NOT rejected), 0)::float8 AS spend_usd
    FROM (SELECT *, 'rejected' = ANY(tags) AS rejected FROM calls
          WHERE organization_id = ${orgId} AND created_at >= ${from.toISOString()}::timestamptz
            AND created_at < ${to.toISOString()}::timestamptz ${excluded}) w`);
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    total_calls: r.total_calls,
    rejected_calls: r.rejected_calls,
    connected_calls: r.connected_calls,
    billed_minutes: r.billed_minutes,
    total_duration_seconds: round(r.total_duration_seconds, 2),
    average_duration_seconds: r.timed_calls ? round(r.total_duration_seconds / r.timed_calls, 2) : 0,
    spend_usd: round(r.spend_usd, 6),
    success_rate: r.total_calls ? round(r.successful_calls / r.total_calls, 4) : 0,
  };
}
