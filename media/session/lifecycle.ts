// A call row's life as seen from the media process: claim (pending → active), finish (row, call.ended, post-call
// hand-off; each retried with backoff, END_RETRY), cancel (never started), node heartbeat. Rows left 'active' are
// reconciled by core/calls/orphans.ts; the recording spool is ./spool.ts.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import pRetry from 'p-retry';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';
import type { Logger } from '../../core/logger.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { reportNode, type NodeLoad } from '../../core/media-nodes.ts';
import { prom, registry } from '../../core/metrics.ts';
import { recordWebhookResult, sendWebhook } from '../../core/webhook.ts';
import { handOffPostCall as handOffCore } from '../../core/calls/unconnected.ts';
import type { MediaDeps } from '../deps.ts';
import type { EndedReason, SessionResult } from './call-session.ts';

/** This process's id in calls.media_node / media_nodes (host, pid and a random part: restarts get a new id). */
export const NODE_ID = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
export const HEARTBEAT_MS = 10_000;
/** A node whose heartbeat is older than this is dead; its active calls are reconciled (MEDIA_NODE_DEAD_AFTER_S). */
export const NODE_DEAD_AFTER_S = 45;

/**
 * Backoff for the writes that end a call (row, recording upload, call.ended bookkeeping, post-call hand-off):
 * 0.5 s doubling to 15 s, 9 tries (about a minute). A write still failing after that is left to the node's periodic
 * reconcile (media/server.ts), which tries again for as long as the process lives.
 */
export const END_RETRY = { retries: 8, factor: 2, minTimeout: 500, maxTimeout: 15_000, randomize: true } as const;

/** Run fn with END_RETRY's backoff, logging each failed try. */
export function retrying<T>(logger: Logger, what: { callId: string; step: string }, fn: () => Promise<T>, opts: Partial<typeof END_RETRY> = {}): Promise<T> {
  return pRetry(fn, {
    ...END_RETRY,
    ...opts,
    onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
      logger.warn({ err: error, ...what, attempt: attemptNumber, retriesLeft }, `${what.step} failed: retrying`);
    },
  });
}

export const callRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  transport: z.string(),
  status: z.string(),
  config_snapshot: z.unknown(),
  context_variables: z.unknown(),
  customer_number: z.string().nullable(),
  platform_number: z.string().nullable(),
  started_at: z.string().nullable(),
  /** W3C trace context of the request/activity that created the call (tracing on), else null */
  trace_context: z.unknown().optional(),
  /** the media node the call's room was reserved on, and the weight reserved (core/media-nodes.ts reserveMediaNode) */
  assigned_node: z.string().nullable().optional(),
  reserved_weight: z.number().nullable().optional(),
});
export type CallRow = z.infer<typeof callRow>;

/** The room a pending call holds on this node (reserved by the api before it handed the call out or dialled it). */
export function reservedHere(row: Pick<CallRow, 'assigned_node' | 'reserved_weight'>): boolean {
  return row.assigned_node === NODE_ID && typeof row.reserved_weight === 'number';
}

const CALL_COLS = sql.fragment`id::text, organization_id::text, agent_id, agent_uuid::text, transport, status, config_snapshot,
  context_variables, customer_number, platform_number, started_at, trace_context, assigned_node, reserved_weight`;

export async function loadCall(db: Db, callId: string): Promise<CallRow | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(callId)) return null;
  return db.maybeOne(sql.type(callRow)`SELECT ${CALL_COLS} FROM calls WHERE id = ${callId}`);
}

/** pending → active, atomically: exactly one connection wins. */
export async function claimCall(db: Db, callId: string, orgId: string): Promise<CallRow | null> {
  return db.maybeOne(sql.type(callRow)`
    UPDATE calls SET status = 'active', started_at = now(), connection_status = 'completed', media_node = ${NODE_ID}, updated_at = now()
    WHERE id = ${callId} AND organization_id = ${orgId} AND status = 'pending'
    RETURNING ${CALL_COLS}`);
}

async function webhookTarget(db: Db, row: { agent_id: number | null; config_snapshot: unknown }) {
  const snap = (row.config_snapshot ?? {}) as { webhook?: unknown };
  const w = snap.webhook;
  const hook = typeof w === 'string' ? { url: w, headers: {} } : w && typeof w === 'object' && typeof (w as { url?: unknown }).url === 'string' ? (w as { url: string; headers?: Record<string, string> }) : null;
  if (!hook) return null;
  const secret = row.agent_id
    ? await db.maybeOneFirst(sql.type(z.object({ webhook_secret: z.string().nullable() }))`SELECT webhook_secret FROM agents WHERE id = ${row.agent_id}`)
    : null;
  return { url: hook.url, headers: hook.headers ?? {}, secret: secret ?? null };
}

export async function sendLifecycleWebhook(deps: Pick<MediaDeps, 'db' | 'config' | 'logger'>, row: CallRow, payload: Record<string, unknown>): Promise<void> {
  const step = `${String(payload.event)} webhook`;
  try {
    // the database reads and writes around the POST are retried (the call's end may meet a database outage); the
    // POST itself is sent once (core/webhook.ts has its own delivery rules)
    const target = await retrying(deps.logger, { callId: row.id, step }, () => webhookTarget(deps.db, row));
    if (!target) return;
    const result = await sendWebhook({ ...target, payload, policy: policyFromConfig(deps.config), logger: deps.logger });
    await retrying(deps.logger, { callId: row.id, step: `${step} outcome` }, () => recordWebhookResult(deps.db, row.id, String(payload.event), result));
  } catch (err) {
    deps.logger.warn({ err, callId: row.id, event: payload.event }, 'webhook send failed');
  }
}

export function startedPayload(row: CallRow, startedAt: string): Record<string, unknown> {
  return { event: 'call.started', callId: row.id, agentId: row.agent_uuid, transport: row.transport, startedAt };
}

const finishedRow = z.object({ ended_at: z.string(), duration_seconds: z.number().nullable() });

/**
 * Write the ended call on its row. status error only for pipeline_error. Null when the row had already ended (a
 * reconcile got there first while this process could not reach the database): that reconcile sent call.ended.
 */
/** Merge `entry` into a call's logs, and add `tag` to its tags (once). */
export async function writeCallLogs(db: Db, callId: string, entry: Record<string, unknown>, tag?: string): Promise<void> {
  const t = tag ?? null;
  await db.query(sql.unsafe`
    UPDATE calls SET logs = logs || ${JSON.stringify(entry)}::jsonb,
      tags = CASE WHEN ${t}::text IS NULL OR ${t}::text = ANY(tags) THEN tags ELSE array_append(tags, ${t}::text) END
    WHERE id = ${callId}`);
}

export async function finishCallRow(db: Db, row: CallRow, r: Pick<SessionResult, 'reason' | 'error' | 'transcript' | 'usage' | 'latency' | 'timelineStartedAt'> & Partial<Pick<SessionResult, 'dtmf' | 'keysSent'>>) {
  const status = r.reason === 'pipeline_error' ? 'error' : 'completed';
  const logs = JSON.stringify({
    latency: r.latency,
    // where the recording and the t_ms of tool entries start, so a player can place transcript entries on it
    ...(r.timelineStartedAt ? { timeline_started_at: r.timelineStartedAt } : {}),
    ...(r.error ? { pipeline_error: r.error } : {}),
    ...(r.dtmf?.length ? { dtmf: r.dtmf } : {}),
    ...(r.keysSent?.length ? { dtmf_sent: r.keysSent } : {}),
  });
  return db.maybeOne(sql.type(finishedRow)`
    UPDATE calls SET status = ${status}, ended_reason = ${r.reason}, connection_status = 'completed', ended_at = now(),
      duration_seconds = round(EXTRACT(EPOCH FROM now() - COALESCE(started_at, now()))::numeric, 2),
      transcript = ${JSON.stringify(r.transcript)}::jsonb, usage = ${JSON.stringify(r.usage)}::jsonb,
      logs = logs || ${logs}::jsonb, updated_at = now()
    WHERE id = ${row.id} AND status IN ('pending', 'active')
    RETURNING ended_at, duration_seconds`);
}

/** The pipeline never started: connectionStatus cancelled, endedReason null, nothing left pending/active. */
export async function cancelCallRow(db: Db, callId: string, why: string) {
  return db.maybeOne(sql.type(finishedRow)`
    UPDATE calls SET status = 'completed', connection_status = 'cancelled', ended_reason = NULL, started_at = NULL,
      ended_at = now(), duration_seconds = NULL, logs = logs || ${JSON.stringify({ not_started: why })}::jsonb, updated_at = now()
    WHERE id = ${callId} AND status IN ('pending', 'active')
    RETURNING ended_at, duration_seconds`);
}

export function endedPayload(row: CallRow, endedReason: EndedReason | null, connectionStatus: string, f: { ended_at: string; duration_seconds: number | null }) {
  return {
    event: 'call.ended',
    callId: row.id,
    agentId: row.agent_uuid,
    endedReason,
    connectionStatus,
    duration: Math.round((f.duration_seconds ?? 0) * 100) / 100,
    endedAt: f.ended_at,
  };
}

/** signal-with-start postCall-<callId> (retried); skipped with a warning when Temporal is not configured. */
export async function handOffPostCall(deps: Pick<MediaDeps, 'temporal' | 'config' | 'logger'>, row: Pick<CallRow, 'id' | 'organization_id' | 'agent_uuid'>): Promise<void> {
  await handOffCore(deps, row, 'call', (signal) => retrying(deps.logger, { callId: row.id, step: 'post-call hand-off' }, signal));
}

// ── node heartbeat, load + reconciliation ─────────────────────────────────────────────────────────────────
/** Heartbeat with this node's load (active calls, capacity, event-loop lag, draining): core/media-nodes.ts. */
export async function heartbeat(db: Db, load: NodeLoad = { activeCalls: 0, weightedLoad: 0, accepting: true, capacity: 0, loopLagMs: 0, draining: false }): Promise<void> {
  await reportNode(db, NODE_ID, load);
}

export async function removeNode(db: Db): Promise<void> {
  await db.query(sql.type(z.object({}))`DELETE FROM media_nodes WHERE node_id = ${NODE_ID}`);
}

/** media_nodes rows of nodes gone for a day are dropped (the orphan reconcile itself is core/calls/orphans.ts). */
export async function pruneNodes(db: Db): Promise<void> {
  await db.query(sql.type(z.object({}))`DELETE FROM media_nodes WHERE heartbeat_at < now() - interval '1 day'`);
}

// ── load metrics (this process's registry; the same figures go to media_nodes) ──────────────────────────
export const mediaLoadGauges = {
  capacity: new prom.Gauge({ name: 'voice_media_call_capacity', help: 'Calls this media process accepts at once (MEDIA_MAX_CALLS)', registers: [registry] }),
  lag: new prom.Gauge({ name: 'voice_media_event_loop_lag_seconds', help: 'Event-loop delay p99 over the last heartbeat interval', registers: [registry] }),
};

export const joinsRefused = new prom.Counter({
  name: 'voice_media_joins_refused_total',
  help: 'Call joins refused by this media process (capacity: over MEDIA_MAX_CALLS)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
