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
import { checkUrlLiteral, checkUrlResolved, safeFetch, type OutboundPolicy } from './net/ssrf.ts';

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

export interface WebhookRequest {
  url: string;
  headers?: Record<string, string>;
  secret?: string | null;
  payload: object;
  policy: OutboundPolicy;
  logger: Logger;
  timeoutMs?: number;
}

/** A webhook ready to go: body serialized, headers built and signed, target checked. Only the socket work is left. */
export interface PreparedWebhook {
  url: string;
  raw: Buffer;
  headers: Record<string, string>;
  event: unknown;
  policy: OutboundPolicy;
  logger: Logger;
  timeoutMs: number;
  /** why the target is refused (scheme, private address, resolves to one), or null */
  refused: string | null;
}

/**
 * Everything before the POST: serialize, build and sign the headers, and check the target (its literal form, and,
 * with `resolve`, where its name resolves now; the connect-time guard still checks every address it connects to).
 * Senders that claim a delivery before sending (at-most-once) prepare first so that only deliverWebhook follows the claim.
 */
export async function prepareWebhook(opts: WebhookRequest, resolve = false): Promise<PreparedWebhook> {
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
  const problem = resolve ? await checkUrlResolved(opts.url, opts.policy) : checkUrlLiteral(opts.url, opts.policy);
  return {
    url: opts.url, raw, headers, event: (opts.payload as { event?: unknown }).event, policy: opts.policy, logger: opts.logger,
    timeoutMs: opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS, refused: problem ? `outbound request refused: ${problem}` : null,
  };
}

/** The claim that gated a delivery was refused: the request is abandoned before its body (nothing delivered). */
class NotClaimed extends Error {}

/**
 * One attempt at a prepared webhook; never throws. With `claim`, the connection is opened at once but the request
 * (headers and body: the body is a stream, and undici writes the headers with its first chunk) is written only when
 * `claim` resolves true — an at-most-once sender's claim committed; false abandons it, the receiver sees a connection
 * close without a request, and the result is null. So only the socket write follows the claim, not the connection.
 */
export async function deliverWebhook(w: PreparedWebhook): Promise<WebhookResult>;
export async function deliverWebhook(w: PreparedWebhook, claim: Promise<boolean>): Promise<WebhookResult | null>;
export async function deliverWebhook(w: PreparedWebhook, claim?: Promise<boolean>): Promise<WebhookResult | null> {
  const { event } = w;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = redact(w.url);
  if (w.refused) {
    deliveries.inc({ event: String(event), outcome: 'failed' });
    w.logger.warn({ url, event, error: w.refused }, 'webhook delivery failed');
    return { ok: false, error: w.refused, durationMs: 0, url };
  }
  let refusedClaim = false;
  const gated = claim
    ? (async function* body() {
        if (!(await claim)) {
          refusedClaim = true;
          throw new NotClaimed('delivery not claimed');
        }
        yield w.raw;
      })()
    : null;
  try {
    const res = await safeFetch(w.url, {
      method: 'POST',
      headers: gated ? { ...w.headers, 'Content-Length': String(w.raw.length) } : w.headers,
      body: (gated ?? w.raw) as unknown as RequestInit['body'],
      ...(gated ? { duplex: 'half' } : {}),
      redirect: 'manual',
      policy: w.policy,
      timeoutMs: w.timeoutMs,
    });
    // Drain the body so the connection is released; its content is of no interest.
    await res.arrayBuffer().catch(() => undefined);
    const durationMs = elapsed();
    deliveries.inc({ event: String(event), outcome: res.status >= 300 ? 'http_error' : 'ok' });
    if (res.status >= 400) {
      w.logger.warn({ url, event, status: res.status, durationMs }, 'webhook delivery rejected');
      return { ok: false, status: res.status, error: `HTTP ${res.status}`, durationMs, url };
    }
    if (res.status >= 300) {
      w.logger.warn({ url, event, status: res.status, durationMs }, 'webhook answered with a redirect (not followed)');
      return { ok: false, status: res.status, error: `HTTP ${res.status} (redirects are not followed)`, durationMs, url };
    }
    return { ok: true, status: res.status, durationMs, url };
  } catch (err) {
    if (refusedClaim) return null;
    const durationMs = elapsed();
    const e = err as Error & { cause?: unknown };
    // fetch wraps connection problems (refused target, DNS, reset) in a TypeError whose cause says what happened.
    const cause = e.cause instanceof Error ? e.cause.message : null;
    const error = e.name === 'TimeoutError' || e.name === 'AbortError' ? `timeout after ${w.timeoutMs} ms` : (cause ?? e.message);
    deliveries.inc({ event: String(event), outcome: 'failed' });
    w.logger.warn({ url, event, error, durationMs }, 'webhook delivery failed');
    return { ok: false, error, durationMs, url };
  }
}

export async function sendWebhook(opts: WebhookRequest): Promise<WebhookResult> {
  return deliverWebhook(await prepareWebhook(opts));
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
