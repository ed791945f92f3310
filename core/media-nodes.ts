// Media nodes and their load (table media_nodes, migrations 0030, 0080, 0140, 0170). Each media process writes its
// row (heartbeat + load + its own public address if it has one); the api reads the rows to refuse calls when every
// live node is full and to steer each new call to the least loaded node by weight (assignMediaNode). Shared by api
// and media, so it lives in core/, with the weight table both sides count in.
import os from 'node:os';
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';

/**
 * Simultaneous calls one core carries on the local engines with the voice-to-voice target met (p50 ≤ 700 ms,
 * p99 ≤ 1,500 ms), from bench/real-calls with every caller speaking at once (docs/benchmarks.md). Vendor engines
 * carry more per core (docs/operations.md); MEDIA_MAX_CALLS overrides the product.
 */
export const CALLS_PER_CORE = 25;

/**
 * The same for the neural local engines (Whisper tiny.en STT, the Piper voice: the defaults of `local` once
 * scripts/setup.sh installed their models), from bench/real-calls on an idle node (docs/benchmarks.md). Re-measure
 * on the target machine (`LEVELS=1,2,3,4 npm run bench -- real-calls`) and set MEDIA_MAX_CALLS.
 */
export const NEURAL_CALLS_PER_CORE = 1;

export function defaultMaxCalls(cores = os.availableParallelism(), perCore = CALLS_PER_CORE): number {
  return Math.max(1, cores * perCore);
}

/** Transport classes of the weight table: every carrier media stream is `carrier`. */
export type WeightTransport = 'websocket' | 'webrtc' | 'carrier';
/** `local` when any engine of the call (STT, TTS, LLM) runs on this node, else `vendor`. */
export type WeightEngines = 'vendor' | 'local';

/**
 * What one call costs a media node, in local-engine WebSocket calls (MEDIA_MAX_CALLS's unit). Each weight comes from
 * the largest load the benches held the targets at (figures: docs/benchmarks.md; sizing: docs/operations.md):
 * - websocket/local 1: the unit (bench/real-calls, CALLS_PER_CORE).
 * - websocket/vendor 0.25: bench/pipeline MODE=vendors, relative to the local-engine figure.
 * - webrtc/vendor 1: bench/webrtc. A WebRTC call costs more CPU than a WebSocket call (codec inline: CELT from
 *   24 kHz, decoding straight to 16 kHz, no resamplers), but pacing, not CPU, sets the limit: with callers speaking
 *   and pausing against the vendor fakes (SPEAK=1) a node holds as many as it holds local-engine WebSocket calls.
 * - webrtc/local 1.75: the local-engine call plus the same WebRTC surcharge (1 − 0.25).
 * - carrier 0.45 / 1.2: bench/webrtc KINDS=carrier; a carrier stream costs more server CPU than a WebSocket call
 *   (JSON + base64 + µ-law framing), and a mix of carrier, WebRTC and WebSocket calls held the targets.
 * Every weight here is binary-exact, so the REAL column keeps it.
 */
export const CALL_WEIGHTS: Record<WeightTransport, Record<WeightEngines, number>> = {
  websocket: { vendor: 0.25, local: 1 },
  webrtc: { vendor: 1, local: 1.75 },
  carrier: { vendor: 0.45, local: 1.2 },
};

/** The weight a joining call is held at: its transport's largest (its engines are not known yet). */
export function joiningWeight(t: WeightTransport): number {
  return Math.max(...Object.values(CALL_WEIGHTS[t]));
}

/**
 * The least room a join needs: a joining call is held at its transport's largest weight (its engines are unknown
 * until its row is read), so the lightest join is the smallest of those. A node with less room takes nothing
 * (admission, /readyz, POST /call's count of available nodes).
 */
export const LIGHTEST_JOIN = Math.min(...(Object.keys(CALL_WEIGHTS) as WeightTransport[]).map(joiningWeight));

export interface NodeLoad {
  activeCalls: number;
  /** calls weighted by transport × engines (CALL_WEIGHTS), in capacity's unit */
  weightedLoad: number;
  /** the node's admission would take the lightest join now (engines loaded, not draining, room for it): POST /call reads this */
  accepting: boolean;
  /** the node's engines are still loading (it takes no new calls yet) */
  warming?: boolean;
  capacity: number;
  /** event-loop delay p99 over the last report interval, ms */
  loopLagMs: number;
  draining: boolean;
  /** the node's own public origin (MEDIA_PUBLIC_URL) when it differs from the shared PUBLIC_URL, else null */
  publicUrl?: string | null;
  /** what the local engines weigh on this node (1, or CALLS_PER_CORE / NEURAL_CALLS_PER_CORE with the neural models) */
  localUnit?: number;
}

/** `local` when any engine of the call (STT, TTS, LLM) runs on the media node, else `vendor`. */
export function engineClass(providers: readonly string[]): WeightEngines {
  return providers.includes('local') ? 'local' : 'vendor';
}

/** What a call of this agent on this transport asks of a media node. */
export function weightOf(agent: { stt: { provider: string }; tts: { provider: string }; llm: { provider: string } }, transport: WeightTransport) {
  return { transport, engines: engineClass([agent.stt.provider, agent.tts.provider, agent.llm.provider]) };
}

/**
 * A call's weight on a node: its transport's row of CALL_WEIGHTS; a local-engine call weighs the node's `localUnit`
 * (what its local engines cost there) plus the transport's surcharge over the unit.
 */
export function callWeight(t: WeightTransport, engines: WeightEngines, localUnit = 1): number {
  const row = CALL_WEIGHTS[t];
  return engines === 'local' ? row.local - 1 + localUnit : row.vendor;
}

/** Insert or refresh this node's row: heartbeat and load. */
export async function reportNode(db: Db, nodeId: string, load: NodeLoad): Promise<void> {
  await db.query(sql.type(z.object({}))`
    INSERT INTO media_nodes (node_id, active_calls, weighted_load, accepting, capacity, loop_lag_ms, draining, public_url, local_unit)
    VALUES (${nodeId}, ${load.activeCalls}, ${load.weightedLoad}, ${load.accepting}, ${load.capacity}, ${load.loopLagMs}, ${load.draining}, ${load.publicUrl ?? null}, ${load.localUnit ?? 1})
    ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now(), load_at = now(), active_calls = EXCLUDED.active_calls,
      weighted_load = EXCLUDED.weighted_load, accepting = EXCLUDED.accepting,
      capacity = EXCLUDED.capacity, loop_lag_ms = EXCLUDED.loop_lag_ms, draining = EXCLUDED.draining,
      public_url = EXCLUDED.public_url, local_unit = EXCLUDED.local_unit`);
}

/** POST /call's 503 detail when no live media node has room for the call (or every one is draining). */
export const MEDIA_AT_CAPACITY = 'All media nodes are at capacity; retry shortly';
/** The Retry-After (seconds) of that 503: calls end and free room within seconds on a busy node. */
export const MEDIA_RETRY_AFTER_S = 2;

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

const assigned = z.object({ node_id: z.string(), public_url: z.string().nullable(), load: z.number(), capacity: z.number(), weight: z.number() });
export type AssignedNode = z.infer<typeof assigned>;

/** The own address (`public_url`, an origin) of the media node a call was assigned to; null when it has none or
 * the call was not assigned (the shared PUBLIC_URL then). */
export async function assignedNodeUrl(db: Db, callId: string): Promise<string | null> {
  const url = await db.maybeOneFirst(sql.type(z.object({ public_url: z.string().nullable() }))`
    SELECT n.public_url FROM calls c JOIN media_nodes n ON n.node_id = c.assigned_node WHERE c.id = ${callId}`);
  return url ?? null;
}

/** What a call asks of a node: a fixed weight, or its transport and engine class (weighed by each node's local unit). */
export type WeightWant = number | { transport: WeightTransport; engines: WeightEngines };

/**
 * Reserve room for a pending call on the least loaded live media node, inside the caller's transaction, and record
 * it on the row (calls.assigned_node, calls.reserved_weight). A node's load here = its reported weighted_load + the
 * reserved weight of every pending call already assigned to it (those are not in its own figure until they join)
 * and of every call that joined it after its last report (not in that figure yet either),
 * so calls created between two reports spread instead of all going to the node that looked emptiest, and the room
 * a pending call holds stays held until its media arrives (the node then takes the reservation over) or the row
 * leaves pending (never connected, expired). Eligible: fresh heartbeat, accepting, not draining, and room for this
 * call's weight on that node (an empty node always qualifies). Least loaded = smallest share of its capacity, then
 * smallest load, then node id. One advisory lock serialises the choice across api replicas, atomically with the
 * capacity check, so two of them cannot both hand a node its last room.
 * `full`: live nodes report and none has room. `node` null and not full: no node reports (the shared PUBLIC_URL and
 * the node's own admission decide).
 */
export async function reserveMediaNode(
  tx: Pick<Db, 'query' | 'maybeOne' | 'oneFirst'>,
  callId: string,
  want: WeightWant,
  deadAfterS: number,
): Promise<{ node: AssignedNode | null; full: boolean }> {
  const wWebrtc = joiningWeight('webrtc');
  const wWs = joiningWeight('websocket');
  const wCarrier = joiningWeight('carrier');
  const weightSql = typeof want === 'number'
    ? sql.fragment`${want}::float8`
    : want.engines === 'local'
      ? sql.fragment`(${CALL_WEIGHTS[want.transport].local - 1}::float8 + n.local_unit)`
      : sql.fragment`${CALL_WEIGHTS[want.transport].vendor}::float8`;
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended('media_nodes.assign', 0))`);
  const pick = await tx.maybeOne(sql.type(assigned)`
    WITH held AS (
      SELECT assigned_node AS node_id, reserved_weight, transport
      FROM calls WHERE status = 'pending' AND assigned_node IS NOT NULL AND id <> ${callId}
      UNION ALL
      -- joined since the node's last report: in neither its weighted_load nor the pending calls yet
      SELECT c.media_node, c.reserved_weight, c.transport
      FROM calls c JOIN media_nodes m ON m.node_id = c.media_node
      WHERE c.status = 'active' AND c.started_at >= m.load_at
    ), pending AS (
      SELECT node_id AS assigned_node,
        sum(COALESCE(reserved_weight, CASE WHEN transport IN ('webrtc', 'web') THEN ${wWebrtc}::float8 WHEN transport = 'websocket' THEN ${wWs}::float8
                 ELSE ${wCarrier}::float8 END)) AS w
      FROM held GROUP BY node_id
    ), nodes AS (
      SELECT n.node_id, n.public_url, n.capacity::float8 AS capacity, n.weighted_load::float8 + COALESCE(p.w, 0) AS load,
             ${weightSql} AS weight
      FROM media_nodes n LEFT JOIN pending p ON p.assigned_node = n.node_id
      WHERE n.heartbeat_at > now() - make_interval(secs => ${deadAfterS}) AND n.accepting AND NOT n.draining
    )
    SELECT node_id, public_url, load, capacity, weight FROM nodes
    WHERE load <= 1e-9 OR load + weight <= capacity + 1e-9
    ORDER BY load / GREATEST(capacity, 1e-9), load, node_id
    LIMIT 1`);
  if (!pick) {
    const live = await tx.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM media_nodes WHERE heartbeat_at > now() - make_interval(secs => ${deadAfterS})`);
    return { node: null, full: live > 0 };
  }
  await tx.query(sql.type(z.object({}))`
    UPDATE calls SET assigned_node = ${pick.node_id}, reserved_weight = ${pick.weight} WHERE id = ${callId} AND status = 'pending'`);
  return { node: pick, full: false };
}

/**
 * Steer a pending call to the least loaded live media node, holding its transport's joining weight there
 * (reserveMediaNode in a transaction of its own). Null when no node reports or none has room.
 */
export async function assignMediaNode(db: Db, callId: string, transport: WeightTransport, deadAfterS: number): Promise<AssignedNode | null> {
  return db.transaction(async (tx) => (await reserveMediaNode(tx, callId, joiningWeight(transport), deadAfterS)).node);
}
