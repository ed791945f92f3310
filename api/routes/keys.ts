// API keys: create (value shown once), list, revoke (archive), reactivate.
import type Router from '@koa/router';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { apiKeyRow, createApiKey } from '../../core/orgs.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import type { ApiDeps } from '../deps.ts';

const createBody = z.object({ name: z.string().trim().min(1).max(255) });
const idParam = z.object({ api_key_id: z.coerce.number().int().min(1).max(2 ** 53) });

const publicKey = (r: z.infer<typeof apiKeyRow>) => ({
  id: r.id,
  name: r.name,
  key_prefix: r.key_prefix,
  status: r.status,
  created_at: r.created_at,
  archived_at: r.archived_at,
});

export function keysRoutes(router: Router, { db }: ApiDeps): void {
  router.post('/user/api-keys', async (ctx) => {
    const org = requireOrg(ctx);
    const body = parseOr422(createBody, ctx.request.body ?? {});
    const { row, key } = await createApiKey(db, org, body.name);
    ctx.body = { id: row.id, name: row.name, key_prefix: row.key_prefix, api_key: key, created_at: row.created_at };
  });

  router.get('/user/api-keys', async (ctx) => {
    const org = requireOrg(ctx);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const [rows, total] = await Promise.all([
      db.any(sql.type(apiKeyRow)`
        SELECT id, organization_id, name, key_prefix, status, created_at, archived_at FROM api_keys
        WHERE organization_id = ${org} ORDER BY id LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM api_keys WHERE organization_id = ${org}`),
    ]);
    ctx.body = envelope(rows.map(publicKey), total, page);
  });

  router.delete('/user/api-keys/:api_key_id', async (ctx) => {
    const org = requireOrg(ctx);
    const { api_key_id } = parseOr422(idParam, ctx.params, 'path');
    const row = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
      UPDATE api_keys SET status = 'archived', archived_at = COALESCE(archived_at, now())
      WHERE id = ${api_key_id} AND organization_id = ${org} RETURNING id`);
    if (!row) throw new HttpError(404, 'API key not found');
    ctx.body = { success: true, message: 'API key archived' };
  });

  router.put('/user/api-keys/:api_key_id/reactivate', async (ctx) => {
    const org = requireOrg(ctx);
    const { api_key_id } = parseOr422(idParam, ctx.params, 'path');
    const exists = await db.maybeOne(sql.type(z.object({ id: z.number() }))`
      SELECT id FROM api_keys WHERE id = ${api_key_id} AND organization_id = ${org}`);
    if (!exists) throw new HttpError(404, 'API key not found');
    try {
      await db.query(sql.unsafe`UPDATE api_keys SET status = 'active', archived_at = NULL WHERE id = ${api_key_id} AND organization_id = ${org}`);
    } catch (err) {
      ctx.state.log.error({ err }, 'reactivate failed');
      throw new HttpError(500, 'Failed to reactivate API key');
    }
    ctx.body = { success: true, message: 'API key reactivated' };
  });
}
