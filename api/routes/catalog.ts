// Model catalog (GET /agents/models/available) and whether each provider can run on this install
// (GET /user/configurations/providers: credentials set, adapter present, both).
import type Router from '@koa/router';
import { catalog, catalogView, type Family } from '../../core/catalog.ts';
import { FAMILIES, credentialEnvs, providerStatus } from '../../core/providers.ts';
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
    ctx.body = { providers: FAMILIES.flatMap((family) => providersOf(family, deps.config)) };
  });
}

/**
 * One entry per catalog provider: `configured` (its credential variables are set), `adapter` (this install can
 * run it), `available` (both); `credentialEnv` (its first credential variable) and `credentialsConfigured`
 * (= configured) too, for clients that read those.
 */
function providersOf(family: Family, config: object) {
  return Object.entries(catalog[family] as Record<string, { label: string }>).map(([provider, entry]) => {
    const status = providerStatus(config, family, provider);
    return {
      family,
      provider,
      label: entry.label,
      credentialEnv: credentialEnvs(provider)[0] ?? null,
      credentialsConfigured: status.configured,
      ...status,
    };
  });
}
