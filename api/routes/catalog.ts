// Model catalog (GET /agents/models/available) and provider credential status (GET /user/configurations/providers).
import type Router from '@koa/router';
import { catalogView, providerStatus } from '../../core/catalog.ts';
import { requireOrg } from '../middleware/auth.ts';
import type { ApiDeps } from '../deps.ts';

export function catalogRoutes(router: Router, deps: ApiDeps): void {
  const view = catalogView();
  router.get('/agents/models/available', (ctx) => {
    requireOrg(ctx);
    ctx.body = view;
  });
  router.get('/user/configurations/providers', (ctx) => {
    requireOrg(ctx);
    ctx.body = { providers: providerStatus(deps.config as unknown as Record<string, unknown>) };
  });
}
