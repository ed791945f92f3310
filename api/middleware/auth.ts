// X-API-Key authentication and the per-organization request-rate limit.
import type { Middleware, ParameterizedContext } from 'koa';
import { HttpError } from '../../core/http-error.ts';
import { resolveApiKey } from '../../core/orgs.ts';
import { hitRateLimit } from '../../core/ratelimit.ts';
import type { ApiDeps } from '../deps.ts';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';

export const AUTH_REQUIRED = 'Authorization header required';
export const INVALID_KEY = 'Invalid or expired API key';
export const NO_ORG = 'No organization selected';

export function authMiddleware(deps: ApiDeps): Middleware {
  const rateCache = new Map<string, { limit: number; at: number }>();
  async function orgRateLimit(orgId: string): Promise<number> {
    const cached = rateCache.get(orgId);
    if (cached && Date.now() - cached.at < 5_000) return cached.limit;
    const limit = await deps.db.maybeOneFirst(sql.type(z.object({ rate_per_minute: z.number().nullable() }))`
      SELECT rate_per_minute FROM organizations WHERE id = ${orgId}`);
    const value = limit ?? deps.config.DEFAULT_RATE_PER_MINUTE;
    rateCache.set(orgId, { limit: value, at: Date.now() });
    return value;
  }

  return async (ctx, next) => {
    const header = ctx.get('x-api-key');
    const presented = header || (typeof ctx.query.api_key === 'string' && ctx.path.includes('/ws/') ? ctx.query.api_key : '');
    if (!presented) throw new HttpError(401, AUTH_REQUIRED);
    const principal = await resolveApiKey(deps.db, presented);
    if (!principal) throw new HttpError(401, INVALID_KEY);
    ctx.state.principal = principal;
    if (principal.organizationId) {
      const limit = await orgRateLimit(principal.organizationId);
      const decision = await hitRateLimit(deps.db, principal.organizationId, limit);
      if (!decision.allowed) throw new HttpError(429, 'Rate limit exceeded');
    }
    await next();
  };
}

/** The organization of the calling key, or 400 'No organization selected' (tools use a longer wording). */
export function requireOrg(ctx: ParameterizedContext, detail: string = NO_ORG): string {
  const org = ctx.state.principal?.organizationId;
  if (!org) throw new HttpError(400, detail);
  return org;
}
