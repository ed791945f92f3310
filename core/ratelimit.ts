// Per-organization request-rate limit with its state in PostgreSQL, so it holds across api replicas.
// Sliding-window approximation over one-minute buckets: count(current) + count(previous) * (1 - elapsed).
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  estimate: number;
}

export async function hitRateLimit(db: Db, orgId: string, limit: number, now = new Date()): Promise<RateDecision> {
  const windowMs = 60_000;
  const start = Math.floor(now.getTime() / windowMs) * windowMs;
  const elapsed = (now.getTime() - start) / windowMs;
  const row = await db.one(sql.type(z.object({ current: z.number(), previous: z.number() }))`
    WITH hit AS (
      INSERT INTO rate_limit_windows (organization_id, window_start, count)
      VALUES (${orgId}, to_timestamp(${start / 1000}), 1)
      ON CONFLICT (organization_id, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
      RETURNING count
    )
    SELECT (SELECT count FROM hit) AS current,
           COALESCE((SELECT count FROM rate_limit_windows
                     WHERE organization_id = ${orgId} AND window_start = to_timestamp(${(start - windowMs) / 1000})), 0) AS previous`);
  const estimate = row.current + row.previous * (1 - elapsed);
  return { allowed: estimate <= limit, limit, estimate };
}

/** Old windows are useless after two minutes; called from time to time by the api. */
export async function pruneRateWindows(db: Db): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM rate_limit_windows WHERE window_start < now() - interval '5 minutes'`);
}
