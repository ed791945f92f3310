// Request id, structured access log and latency histogram.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { redactUrl, type Logger } from '../../core/logger.ts';
import { httpRequestDuration } from '../../core/metrics.ts';
import { traceRequest } from '../../core/tracing.ts';

export function requestMiddleware(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    const start = process.hrtime.bigint();
    const matched = () => (ctx as { _matchedRoute?: string })._matchedRoute ?? null;
    try {
      // a span per request when tracing is on (health and metrics scrapes are not traced)
      if (ctx.path === '/healthz' || ctx.path === '/metrics') await next();
      else await traceRequest({ method: ctx.method, path: ctx.path, headers: ctx.headers }, next, () => ({ route: matched() === null ? null : String(matched()), status: ctx.status }));
    } finally {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      httpRequestDuration.observe({ method: ctx.method, route: String(route), status: String(ctx.status) }, ms / 1000);
      if (ctx.path !== '/healthz' && ctx.path !== '/metrics') {
        ctx.state.log.info(
          { method: ctx.method, url: redactUrl(ctx.url), status: ctx.status, ms: Math.round(ms * 10) / 10, org: ctx.state.principal?.organizationId },
          'request',
        );
      }
    }
  };
}
