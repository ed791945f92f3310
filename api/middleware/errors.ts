// The one error middleware at the top of the stack: every error body is {detail: ...}.
import type { Middleware } from 'koa';
import { HttpError } from '../../core/http-error.ts';
import { isDatabaseUnavailable } from '../../core/db/pool.ts';
import { SecretUnreadable } from '../../core/secrets.ts';
import { isTemporalUnreachable } from '../../core/temporal.ts';

/** A route that needs Temporal while it is unreachable (restarting, down): retryable, nothing was changed. */
export const TEMPORAL_UNREACHABLE = 'Temporal is temporarily unavailable: try again shortly';

export function errorMiddleware(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404;
        ctx.body = { detail: 'Not Found' };
      }
    } catch (err) {
      if (err instanceof HttpError) {
        ctx.status = err.status;
        ctx.body = { detail: err.detail };
        if (err.options.retryAfterS !== undefined) ctx.set('Retry-After', String(err.options.retryAfterS));
        if (err.status >= 500) {
          if (err.options.expected) ctx.state.log?.warn({ status: err.status, detail: err.detail, requestId: ctx.state.requestId }, 'request refused');
          else ctx.state.log?.error({ err, requestId: ctx.state.requestId }, 'request failed');
        }
        return;
      }
      if (err instanceof SecretUnreadable) {
        // stored credentials the current key cannot open (TELEPHONY_ENCRYPTION_KEY changed): the request needs them,
        // nothing was changed; the operator's fix is the old key or the credentials saved again
        ctx.state.log?.error({ what: err.what, requestId: ctx.state.requestId }, 'stored credentials cannot be decrypted with the current key');
        ctx.status = 409;
        ctx.body = { detail: err.message };
        return;
      }
      const e = err as { status?: number; expose?: boolean; message?: string };
      if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
        // Errors thrown by Koa itself (405 from allowedMethods, 413 ...): keep the status, never a stack.
        ctx.status = e.status;
        ctx.body = { detail: e.expose && e.message ? e.message : statusText(e.status) };
        return;
      }
      if (isDatabaseUnavailable(err)) {
        // PostgreSQL restarting or unreachable: a transient server condition, not a bug — 503 with a retry hint
        ctx.state.log?.warn({ err, requestId: ctx.state.requestId }, 'database unavailable');
        ctx.status = 503;
        ctx.set('Retry-After', '1');
        ctx.body = { detail: 'Database unavailable; retry shortly', request_id: ctx.state.requestId };
        return;
      }
      if (isTemporalUnreachable(err)) {
        ctx.state.log?.warn({ err, requestId: ctx.state.requestId }, 'Temporal unreachable');
        ctx.status = 503;
        ctx.set('Retry-After', '1');
        ctx.body = { detail: TEMPORAL_UNREACHABLE };
        return;
      }
      ctx.state.log?.error({ err, requestId: ctx.state.requestId }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { detail: 'Internal Server Error', request_id: ctx.state.requestId };
    }
  };
}

function statusText(status: number): string {
  return ({ 405: 'Method Not Allowed', 413: 'Request body too large', 415: 'Unsupported Media Type' } as Record<number, string>)[status] ?? 'Bad Request';
}
