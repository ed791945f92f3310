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

/** Transport classes of the weight table: every carrier media stream is `carrier`. */
export type WeightTransport = 'websocket' | 'webrtc' | 'carrier';
/** `local` when any engine of the call (STT, TTS, LLM) runs on this node, else `vendor`. */
export type WeightEngines = 'vendor' | 'local';

/**
 * What one call costs the node, in local-engine WebSocket calls (MEDIA_MAX_CALLS's unit). Where each figure comes
 * from (README "Scaling and capacity", "Browser calls (WebRTC)"):
 * - websocket/local 1: the unit; bench/real-calls, 50 local-engine calls per 2-core node (CALLS_PER_CORE 25).
 * - websocket/vendor 0.25: bench/pipeline MODE=vendors holds 200 calls per 2-core node, 4× the local figure.
 * - webrtc/vendor 0.75: bench/webrtc measured a WebRTC call at ≈ 3× a WebSocket call (3.0 % vs 1.0 % of a core
 *   at 5 calls), so 3 × 0.25.
 * - webrtc/local 1.5: the local-engine call plus the same WebRTC surcharge (0.75 − 0.25 = 0.5).
 * - carrier/*: as websocket (µ-law 8 kHz framing is no heavier than 16 kHz PCM); not yet measured by a bench.
 * bench/codec and bench/webrtc re-measure the WebRTC rows with the codec pool (the surcharge is expected to fall).
 */
export const CALL_WEIGHTS: Record<WeightTransport, Record<WeightEngines, number>> = {
  websocket: { vendor: 0.25, local: 1 },
  webrtc: { vendor: 0.75, local: 1.5 },
  carrier: { vendor: 0.25, local: 1 },
};

/**
 * The least room a join needs: a joining call is held at its transport's largest weight (its engines are unknown
 * until its row is read), so the lightest join is the smallest of those. A node with less room takes nothing
 * (admission, /readyz, POST /call's count of available nodes).
 */
export const LIGHTEST_JOIN = Math.min(...Object.values(CALL_WEIGHTS).map((r) => Math.max(...Object.values(r))));

export function defaultMaxCalls(cores = os.availableParallelism()): number {
  return Math.max(1, cores * CALLS_PER_CORE);
}

export interface NodeLoad {
  activeCalls: number;
  /** calls weighted by transport × engines (media/admission.ts CALL_WEIGHTS), in capacity's unit */
  weightedLoad: number;
  capacity: number;
  /** event-loop delay p99 over the last report interval, ms */
  loopLagMs: number;
  draining: boolean;
}

/** Insert or refresh this node's row: heartbeat and load. */
export async function reportNode(db: Db, nodeId: string, load: NodeLoad): Promise<void> {
  await db.query(sql.type(z.object({}))`
    INSERT INTO media_nodes (node_id, active_calls, weighted_load, capacity, loop_lag_ms, draining)
    VALUES (${nodeId}, ${load.activeCalls}, ${load.weightedLoad}, ${load.capacity}, ${load.loopLagMs}, ${load.draining})
    ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now(), load_at = now(), active_calls = EXCLUDED.active_calls,
      weighted_load = EXCLUDED.weighted_load,
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
    SELECT count(*)::int AS live, count(*) FILTER (WHERE NOT draining AND (capacity = 0 OR weighted_load = 0 OR weighted_load + ${LIGHTEST_JOIN}::real <= capacity))::int AS available
    FROM media_nodes
    WHERE heartbeat_at > now() - make_interval(secs => ${deadAfterS})`);
}
