// Stored credentials (org-scoped, sealed at rest, secrets masked in every response): the store saved HTTP tools
// name with `definition.config.credential_uuid` (core/credentials/store.ts). Bodies ignore unknown fields.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { isUuid } from '../../core/agent-config/index.ts';
import {
  CREDENTIAL_NOT_FOUND, credentialCreate, SECRET_FIELDS, credentialFields, credentialPatch, credentialView, getCredential, insertCredential,
  listCredentials, mergePatch, readSecret, toolsUsingCredential, updateCredential, type CredentialSecret,
} from '../../core/credentials/store.ts';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import type { ApiDeps } from '../deps.ts';
import { parseOr422 } from '../parse.ts';
import { requireOrg } from '../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';

const credentialUuidRow = z.object({ uuid: z.string() });
const duplicate = (name: string) => new HttpError(409, `A credential named '${name}' already exists in this organization.`);
const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } };
  return (e.code ?? e.cause?.code) === '23505';
};

const SECRET_KEYS = new Set(Object.values(SECRET_FIELDS).flat());
/** A 422's items echo their `input`: a refused secret (or a body holding one) is not echoed back. */
function parseSecretBody<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  try {
    return parseOr422(schema, value);
  } catch (err) {
    if (!(err instanceof HttpError) || !Array.isArray(err.detail)) throw err;
    const hide = (v: unknown): unknown =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, SECRET_KEYS.has(k) ? '[redacted]' : x]))
        : v;
    throw new HttpError(422, (err.detail as Array<{ loc?: unknown[]; input?: unknown }>).map((item) => {
      const last = item.loc?.at(-1);
      return 'input' in item ? { ...item, input: typeof last === 'string' && SECRET_KEYS.has(last) ? '[redacted]' : hide(item.input) } : item;
    }));
  }
}

export function credentialsRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;

  const uuidOf = (ctx: ParameterizedContext): string => {
    const id = ctx.params.credential_uuid;
    if (!isUuid(id)) throw new HttpError(404, CREDENTIAL_NOT_FOUND);
    return id.toLowerCase();
  };
  const nameTaken = async (q: Pick<typeof db, 'anyFirst'>, orgId: string, name: string, except: string | null) =>
    (await q.anyFirst(sql.type(credentialUuidRow)`
      SELECT uuid::text FROM credentials WHERE organization_id = ${orgId} AND name = ${name}`)).some((u) => u !== except);

  router.post('/credentials', async (ctx) => {
    const orgId = requireOrg(ctx);
    const { name, ...secret } = parseSecretBody(credentialCreate, ctx.request.body ?? {});
    if (await nameTaken(db, orgId, name, null)) throw duplicate(name);
    try {
      const row = await insertCredential(db, config, orgId, name, secret as CredentialSecret);
      ctx.status = 201;
      ctx.body = credentialView(config, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicate(name);
      throw err;
    }
  });

  router.get('/credentials', async (ctx) => {
    const orgId = requireOrg(ctx);
    const page = parseOr422(paginationQuery(), ctx.query, 'query');
    const { limit, offset } = pageWindow(page);
    const { rows, total } = await listCredentials(db, orgId, limit, offset);
    ctx.body = envelope(rows.map((r) => credentialView(config, r)), total, page);
  });

  router.get('/credentials/:credential_uuid', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await getCredential(db, orgId, uuidOf(ctx));
    if (!row) throw new HttpError(404, CREDENTIAL_NOT_FOUND);
    ctx.body = credentialView(config, row);
  });

  router.patch('/credentials/:credential_uuid', async (ctx) => {
    const orgId = requireOrg(ctx);
    const uuid = uuidOf(ctx);
    const body = parseSecretBody(credentialPatch, ctx.request.body ?? {});
    const row = await db.transaction(async (tx) => {
      const current = await getCredential(tx, orgId, uuid, 'FOR UPDATE');
      if (!current) throw new HttpError(404, CREDENTIAL_NOT_FOUND);
      const { type, fields } = mergePatch(readSecret(config, current) ?? { type: current.type, unreadable: true }, body);
      const secret = { ...parseSecretBody(credentialFields[type], fields), type } as CredentialSecret;
      const name = body.name ?? current.name;
      if (name !== current.name && (await nameTaken(tx, orgId, name, uuid))) throw duplicate(name);
      try {
        return await updateCredential(tx, config, orgId, uuid, name, secret);
      } catch (err) {
        if (isUniqueViolation(err)) throw duplicate(name);
        throw err;
      }
    });
    if (!row) throw new HttpError(404, CREDENTIAL_NOT_FOUND);
    ctx.body = credentialView(config, row);
  });

  router.delete('/credentials/:credential_uuid', async (ctx) => {
    const orgId = requireOrg(ctx);
    const uuid = uuidOf(ctx);
    await db.transaction(async (tx) => {
      // The row lock orders this against a tool create/update that references the credential (FOR KEY SHARE there).
      const current = await getCredential(tx, orgId, uuid, 'FOR UPDATE');
      if (!current) throw new HttpError(404, CREDENTIAL_NOT_FOUND);
      const users = await toolsUsingCredential(tx, orgId, uuid);
      if (users.length) {
        const names = users.map((t) => `'${t.name}' (${t.uuid}${t.status === 'archived' ? ', archived' : ''})`).join(', ');
        throw new HttpError(409, `Credential '${current.name}' is used by saved tool${users.length > 1 ? 's' : ''} ${names}; remove it from ${users.length > 1 ? 'them' : 'it'} first.`);
      }
      await tx.query(sql.unsafe`DELETE FROM credentials WHERE id = ${current.id}`);
    });
    ctx.status = 204;
  });
}
