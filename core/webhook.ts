// Lifecycle webhook sender shared by media and the worker (spec "Lifecycle webhooks"): POST JSON, the agent's
// headers, then — only when the event is signed (the agent has a webhookSecret) — `X-Service-Signature` = hex
// HMAC-SHA256 over the exact bytes sent, overwriting a custom header of that name. Unsigned events carry the
// agent's own `X-Service-Signature` header as configured. One attempt, 10 s timeout, no retries;
// 4xx/5xx/timeouts/refused targets are warnings, never throws.
import { createHmac } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';
import type { Logger } from './logger.ts';
import { prom, registry } from './metrics.ts';
import { safeFetch, type OutboundPolicy } from './net/ssrf.ts';

export const SIGNATURE_HEADER = 'X-Service-Signature';

const deliveries = new prom.Counter({
  name: 'webhook_deliveries_total',
  help: 'Lifecycle webhook deliveries by event and outcome (ok, http_error, failed)',
  labelNames: ['event', 'outcome'] as const,
  registers: [registry],
});
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** Headers the sender controls; an agent's values for these are dropped (the signature header only when signing). */
const RESERVED = new Set(['content-type', 'content-length', 'host', 'connection', 'transfer-encoding']);

export function signBody(secret: string, raw: Buffer | string): string {
  return createHmac('sha256', secret).update(raw).digest('hex');
}

export interface WebhookResult {
  ok: boolean;
  status?: number;
  error?: string;
  durationMs: number;
  /** the target as scheme://host/path (query strings may carry tokens) */
  url?: string;
}

export async function sendWebhook(opts: {
  url: string;
  headers?: Record<string, string>;
  secret?: string | null;
  payload: object;
  policy: OutboundPolicy;
  logger: Logger;
  timeoutMs?: number;
}): Promise<WebhookResult> {
  const raw = Buffer.from(JSON.stringify(opts.payload), 'utf8');
  const headers: Record<string, string> = {};
  const signing = !!opts.secret;
  for (const [name, value] of Object.entries(opts.headers ?? {})) {
    const lower = name.toLowerCase();
    if (typeof value !== 'string' || RESERVED.has(lower) || (signing && lower === SIGNATURE_HEADER.toLowerCase())) continue;
    headers[name] = value;
  }
  headers['Content-Type'] = 'application/json';
  if (opts.secret) headers[SIGNATURE_HEADER] = signBody(opts.secret, raw);
  const event = (opts.payload as { event?: unknown }).event;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = redact(opts.url);
  try {
    const res = await safeFetch(opts.url, {
      method: 'POST',
      headers,
      body: raw,
      redirect: 'manual',
      policy: opts.policy,
      timeoutMs: opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS,
    });
    // Drain the body so the connection is released; its content is of no interest.
    await res.arrayBuffer().catch(() => undefined);
    const durationMs = elapsed();
    deliveries.inc({ event: String(event), outcome: res.status >= 300 ? 'http_error' : 'ok' });
    if (res.status >= 400) {
      opts.logger.warn({ url: redact(opts.url), event, status: res.status, durationMs }, 'webhook delivery rejected');
      return { ok: false, status: res.status, error: `HTTP ${res.status}`, durationMs, url };
    }
    if (res.status >= 300) {
      opts.logger.warn({ url: redact(opts.url), event, status: res.status, durationMs }, 'webhook answered with a redirect (not followed)');
      return { ok: false, status: res.status, error: `HTTP ${res.status} (redirects are not followed)`, durationMs, url };
    }
    return { ok: true, status: res.status, durationMs, url };
  } catch (err) {
    const durationMs = elapsed();
    const e = err as Error & { cause?: unknown };
    // fetch wraps connection problems (refused target, DNS, reset) in a TypeError whose cause says what happened.
    const cause = e.cause instanceof Error ? e.cause.message : null;
    const error = e.name === 'TimeoutError' || e.name === 'AbortError' ? `timeout after ${opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS} ms` : (cause ?? e.message);
    deliveries.inc({ event: String(event), outcome: 'failed' });
    opts.logger.warn({ url: redact(opts.url), event, error, durationMs }, 'webhook delivery failed');
    return { ok: false, error, durationMs, url };
  }
}

/** Query strings may carry tokens: log scheme://host/path only. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '[invalid url]';
  }
}

/** Appends the delivery outcome to calls.logs.webhooks so it is visible on the call detail. */
export async function recordWebhookResult(db: Db, callId: string, event: string, result: WebhookResult): Promise<void> {
  const entry = JSON.stringify({
    event,
    ok: result.ok,
    status: result.status ?? null,
    error: result.error ?? null,
    durationMs: result.durationMs,
    url: result.url ?? null,
    at: new Date().toISOString(),
  });
  await db.query(sql.type(z.object({}))`
    UPDATE calls
    SET logs = jsonb_set(logs, '{webhooks}', COALESCE(logs->'webhooks', '[]'::jsonb) || jsonb_build_array(${entry}::jsonb)),
        updated_at = now()
    WHERE id = ${callId}`);
}
