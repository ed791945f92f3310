// Read models the operator console (/console) draws, as plain API endpoints any client may use:
//   GET /calls/{callId}/webhook-deliveries  the lifecycle webhooks sent for a call and what each target answered
//                                           (stored on the call row as logs.webhooks by every sender, core/webhook.ts)
//   GET /campaign/{id}/progress             contacts by status, retries due, circuit-breaker state, and where the
//                                           campaign's workflow is in the Temporal Web UI (TEMPORAL_UI_URL)
// Both answer 404 across organizations, like the resources they belong to.
import type Router from '@koa/router';
import { z } from 'zod';
import { getCall } from '../../core/calls/history.ts';
import { CAMPAIGN_NOT_FOUND, getCampaign, settingsOf } from '../../core/campaigns/store.ts';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { campaignWorkflowId, progressQuery, type CampaignProgress } from '../../workflows/campaign/messages.ts';
import type { ApiDeps } from '../deps.ts';
import { parseOr422 } from '../parse.ts';
import { requireOrg } from '../middleware/auth.ts';
import { envelope, paginationQuery } from '../pagination.ts';

/** One stored delivery (core/webhook.ts recordWebhookResult); older rows lack `url`. */
const delivery = z.object({
  event: z.string(),
  ok: z.boolean(),
  status: z.number().nullable().optional(),
  error: z.string().nullable().optional(),
  durationMs: z.number().nullable().optional(),
  url: z.string().nullable().optional(),
  at: z.string().nullable().optional(),
});

/** A live workflow answers its progress query at once; a busy or unreachable worker must not hold the page. */
const QUERY_TIMEOUT_MS = 3000;

export type BreakerState = 'closed' | 'tripped' | 'disabled';

/** Tripped while the campaign sits paused after the breaker's own pause (a resume or a restart closes it). */
export function breakerState(enabled: boolean, state: string, logs: unknown): { state: BreakerState; trippedAt: string | null; message: string | null } {
  let tripped: { ts: string | null; message: string | null } | null = null;
  for (const e of Array.isArray(logs) ? (logs as Array<Record<string, unknown>>) : []) {
    if (e?.event === 'circuit_breaker_tripped') tripped = { ts: typeof e.ts === 'string' ? e.ts : null, message: typeof e.message === 'string' ? e.message : null };
    else if (e?.event === 'resumed' || (e?.event === 'state_changed' && (e.details as { to?: unknown } | undefined)?.to === 'running')) tripped = null;
  }
  if (tripped && state === 'paused') return { state: 'tripped', trippedAt: tripped.ts, message: tripped.message };
  return { state: enabled ? 'closed' : 'disabled', trippedAt: null, message: null };
}

export function temporalUiWorkflowUrl(base: string, namespace: string, workflowId: string): string {
  return `${base.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

export function consoleRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;

  router.get('/calls/:callId/webhook-deliveries', async (ctx) => {
    const orgId = requireOrg(ctx);
    const p = parseOr422(paginationQuery(), ctx.query, 'query');
    const row = await getCall(db, orgId, ctx.params.callId ?? '');
    if (!row) throw new HttpError(404, 'Call not found');
    const stored = (row.logs as { webhooks?: unknown } | null)?.webhooks;
    const all = (Array.isArray(stored) ? stored : []).flatMap((e) => {
      const d = delivery.safeParse(e);
      return d.success ? [{ event: d.data.event, ok: d.data.ok, status: d.data.status ?? null, error: d.data.error ?? null, durationMs: d.data.durationMs ?? null, url: d.data.url ?? null, at: d.data.at ?? null }] : [];
    });
    const start = (p.page - 1) * p.per_page;
    ctx.body = envelope(all.slice(start, start + p.per_page), all.length, p);
  });

  router.get('/campaign/:id/progress', async (ctx) => {
    const orgId = requireOrg(ctx);
    const id = Number(ctx.params.id);
    const row = /^\d+$/.test(ctx.params.id ?? '') && Number.isSafeInteger(id) ? await getCampaign(db, orgId, id) : null;
    if (!row) throw new HttpError(404, CAMPAIGN_NOT_FOUND);
    const counts = await db.one(sql.type(z.object({
      total: z.number(), queued: z.number(), dialing: z.number(), retry: z.number(), done: z.number(),
      retries_due: z.number(), next_retry_at: z.string().nullable(),
    }))`
      SELECT count(*)::int AS total,
             count(*) FILTER (WHERE status = 'queued')::int AS queued,
             count(*) FILTER (WHERE status = 'dialing')::int AS dialing,
             count(*) FILTER (WHERE status = 'retry')::int AS retry,
             count(*) FILTER (WHERE status = 'done')::int AS done,
             count(*) FILTER (WHERE status = 'retry' AND next_attempt_at <= now())::int AS retries_due,
             to_char(min(next_attempt_at) FILTER (WHERE status = 'retry') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next_retry_at
      FROM campaign_contacts WHERE campaign_id = ${row.id}`);
    const breaker = settingsOf(row).breaker;
    const workflowId = campaignWorkflowId(row.id);
    let live: CampaignProgress | null = null;
    if (deps.temporal && ['syncing', 'running', 'paused'].includes(row.state)) {
      const handle = deps.temporal.workflow.getHandle(workflowId);
      let timer: NodeJS.Timeout | undefined;
      live = await Promise.race([
        handle.query(progressQuery),
        new Promise<null>((resolve) => { timer = setTimeout(() => resolve(null), QUERY_TIMEOUT_MS); }),
      ]).catch(() => null).finally(() => clearTimeout(timer));
    }
    const bs = breakerState(breaker.enabled, row.state, row.logs);
    ctx.body = {
      campaign_id: row.id,
      state: row.state,
      contacts: { total: counts.total, queued: counts.queued, dialing: counts.dialing, retry: counts.retry, done: counts.done },
      total_rows: row.total_rows,
      processed_rows: row.processed_rows,
      failed_rows: row.failed_rows,
      retries_due: counts.retries_due,
      retries_waiting: counts.retry - counts.retries_due,
      next_retry_at: counts.next_retry_at,
      in_flight: live ? live.inFlight : null,
      circuit_breaker: {
        ...breaker,
        state: bs.state,
        tripped_at: bs.trippedAt,
        message: bs.message,
        calls_in_window: live ? live.breaker.calls : null,
        failures_in_window: live ? live.breaker.failures : null,
      },
      workflow: {
        workflow_id: workflowId,
        namespace: config.TEMPORAL_NAMESPACE,
        live: live !== null,
        temporal_ui_url: temporalUiWorkflowUrl(config.TEMPORAL_UI_URL, config.TEMPORAL_NAMESPACE, workflowId),
      },
    };
  });
}
