// Media nodes and their load (table media_nodes, migrations 0030 + 0080). Each media process writes its row
// (heartbeat + load); the api reads the rows to refuse calls when every live node is full. Shared by api and media,
// so it lives in core/.
import os from 'node:os';
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';

/**
 * Simultaneous calls one core carries on the local engines with the voice-to-voice target met (p50 ≤ 700 ms,
 * p99 ≤ 1,500 ms), measured by bench/real-calls on 2 cores with every caller speaking at once: 50 calls meet it
 * (p50 359–395 ms, p99 639–1,063 ms), 100 do not (2.6 s / 5.1 s). Vendor engines carry more per core (README
 * "Scaling and capacity"); MEDIA_MAX_CALLS overrides the product.
 */
export const CALLS_PER_CORE = 25;

/**
 * The same for the neural local engines (Whisper tiny.en STT, the Piper voice: the defaults of `local` once
 * scripts/setup.sh installed their models). bench/real-calls on an idle 2-core node (load average 1.8), 2 turns per
 * call: voice-to-voice p50 / p99 700 / 832 ms at 1 call, 708 / 776 ms at 2, 963 / 2,204 ms at 4 — the p99 ≤ 1,500 ms
 * target holds at 2 calls and not at 4, so 1 per core. Re-measure on the target machine
 * (`LEVELS=1,2,3,4 npm run bench -- real-calls`) and set MEDIA_MAX_CALLS.
 */
export const NEURAL_CALLS_PER_CORE = 1;

export function defaultMaxCalls(cores = os.availableParallelism(), perCore = CALLS_PER_CORE): number {
  return Math.max(1, cores * perCore);
}

export interface NodeLoad {
  activeCalls: number;
  /** calls weighted by transport × engines (media/admission.ts CALL_WEIGHTS), in capacity's unit */
  weightedLoad: number;
  /** the node's admission would take the lightest join now (not draining, room for it): POST /call reads this */
  accepting: boolean;
  capacity: number;
  /** event-loop delay p99 over the last report interval, ms */
  loopLagMs: number;
  draining: boolean;
}

/** Insert or refresh this node's row: heartbeat and load. */
export async function reportNode(db: Db, nodeId: string, load: NodeLoad): Promise<void> {
  await db.query(sql.type(z.object({}))`
    INSERT INTO media_nodes (node_id, active_calls, weighted_load, accepting, capacity, loop_lag_ms, draining)
    VALUES (${nodeId}, ${load.activeCalls}, ${load.weightedLoad}, ${load.accepting}, ${load.capacity}, ${load.loopLagMs}, ${load.draining})
    ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now(), load_at = now(), active_calls = EXCLUDED.active_calls,
      weighted_load = EXCLUDED.weighted_load, accepting = EXCLUDED.accepting,
      capacity = EXCLUDED.capacity, loop_lag_ms = EXCLUDED.loop_lag_ms, draining = EXCLUDED.draining`);
}

/** POST /call's 503 detail when every live media node is at capacity (or draining). */
export const MEDIA_AT_CAPACITY = 'All media nodes are at capacity; retry shortly';

const capacityRow = z.object({ live: z.number(), available: z.number() });

/**
 * Live media nodes (fresh heartbeat) and how many of them can take another call (not draining, below capacity).
 * live = 0 means no node has reported (e.g. an api started before any media process): do not refuse on that.
 */
export async function mediaCapacity(db: Db, deadAfterS: number): Promise<{ live: number; available: number }> {
  return db.one(sql.type(capacityRow)`
    SELECT count(*)::int AS live, count(*) FILTER (WHERE NOT draining AND accepting)::int AS available
    FROM media_nodes
    WHERE heartbeat_at > now() - make_interval(secs => ${deadAfterS})`);
}
