// The Koa application: operations endpoints outside /api/v1, everything else under it behind the API key.
import Koa from 'koa';
import Router from '@koa/router';
import { sql } from '../core/db/pool.ts';
import { registry } from '../core/metrics.ts';
import type { ApiDeps } from './deps.ts';
import { errorMiddleware } from './middleware/errors.ts';
import { requestMiddleware } from './middleware/request.ts';
import { jsonBodyMiddleware } from './middleware/body.ts';
import { inputGuard } from './middleware/guard.ts';
import { authMiddleware } from './middleware/auth.ts';
import { publicRouteModules, routeModules } from './routes/index.ts';
import { consolePageHandler } from './console-page.ts';
import { cdnRoutes } from './routes/cdn.ts';
import './types.ts';

export interface ApiApp {
  app: Koa;
  /** Set while draining: /readyz answers 503 so the load balancer stops sending traffic. */
  setDraining(draining: boolean): void;
}

/** Public (no key) routes under /api/v1 are registered by modules on this router, before auth. */
export type PublicRouteModule = (router: Router, deps: ApiDeps) => void;

export function createApiApp(deps: ApiDeps, opts: { publicModules?: PublicRouteModule[] } = {}): ApiApp {
  const app = new Koa({ proxy: true });
  let draining = false;

  app.use(requestMiddleware(deps.logger));
  app.use(errorMiddleware());

  const ops = new Router();
  ops.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  ops.get('/readyz', async (ctx) => {
    const [database, temporal] = await Promise.all([
      deps.db.query(sql.unsafe`SELECT 1`).then(() => true, () => false),
      deps.checkTemporal().catch(() => false),
    ]);
    const ready = database && temporal && !draining;
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'ready' : draining ? 'draining' : 'not_ready',
      checks: { database: database ? 'ok' : 'unreachable', temporal: temporal ? 'ok' : 'unreachable' },
    };
  });
  ops.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  app.use(ops.routes());
  const consolePage = consolePageHandler(deps);
  app.use(async (ctx, next) => {
    if (!consolePage(ctx.req, ctx.res)) return next();
    ctx.respond = false; // the handler wrote the answer
  });
  app.use(cdnRoutes(deps)); // {cdn_url} files and local presigned uploads: public, outside /api/v1

  app.use(jsonBodyMiddleware());

  // Text PostgreSQL cannot store is refused by one guard on every route (query, path, JSON/form body; after the
  // API key check, so an unauthenticated request still gets its 401): see middleware/guard.ts.
  const open = new Router({ prefix: '/api/v1' });
  open.use(inputGuard(() => [open, api]));
  for (const mod of [...publicRouteModules, ...(opts.publicModules ?? [])]) mod(open, deps);
  app.use(open.routes());

  const api = new Router({ prefix: '/api/v1' });
  api.use(authMiddleware(deps));
  api.use(inputGuard(() => [open, api]));
  for (const mod of routeModules) mod(api, deps);
  app.use(api.routes());
  app.use(api.allowedMethods({ throw: true }));

  return { app, setDraining: (d) => { draining = d; } };
}
