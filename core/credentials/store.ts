// Stored external credentials (org-scoped) that saved HTTP tools reference by `credential_uuid`. Every field of a
// credential is sealed at rest with the key telephony configurations use (core/secrets.ts); views show the
// non-secret fields in clear and the secrets masked ("••••" + last 4), never the secret itself. Every lookup
// filters by organization.
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import { HEADER_NAME } from '../agent-config/schema.ts';
import { decryptJson, encryptJson, keyOf, mask, SecretUnreadable } from '../secrets.ts';

type Q = Pick<Db, 'one' | 'maybeOne' | 'any' | 'oneFirst' | 'anyFirst'>;

export const CREDENTIAL_TYPES = ['bearer_token', 'api_key', 'basic_auth', 'custom_header'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];
export const CREDENTIAL_NOT_FOUND = 'Credential not found';

/** Per type: its secret fields (masked in views, replaceable but never readable) and its clear fields. */
export const SECRET_FIELDS: Record<CredentialType, readonly string[]> = {
  bearer_token: ['token'],
  api_key: ['api_key'],
  basic_auth: ['password'],
  custom_header: ['header_value'],
};

// Headers a credential may not set: the HTTP client owns them (framing, routing).
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'content-type', 'te', 'upgrade', 'keep-alive']);
const headerName = z
  .string()
  .regex(HEADER_NAME, 'Header names must be HTTP tokens (letters, digits and !#$%&\'*+.^_`|~-), at most 100 chars')
  .refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), { message: 'This header is set by the HTTP client and cannot come from a credential' });
const headerValue = (max = 4096) => z.string().min(1).max(max).regex(/^[^\r\n\0]*$/, 'Values must not contain CR, LF or NUL');

export const credentialFields = {
  bearer_token: z.object({ token: headerValue() }),
  api_key: z.object({ header_name: headerName, api_key: headerValue() }),
  basic_auth: z.object({
    username: headerValue(255).regex(/^[^:]*$/, 'A basic-auth username cannot contain ":" (RFC 7617)'),
    password: headerValue(1024),
  }),
  custom_header: z.object({ header_name: headerName, header_value: headerValue() }),
} satisfies Record<CredentialType, z.ZodType>;

export type CredentialSecret =
  | { type: 'bearer_token'; token: string }
  | { type: 'api_key'; header_name: string; api_key: string }
  | { type: 'basic_auth'; username: string; password: string }
  | { type: 'custom_header'; header_name: string; header_value: string };

const credentialName = z.string().trim().min(1).max(255);
/** POST body (unknown fields ignored, like the telephony bodies). */
export const credentialCreate = z.discriminatedUnion('type', [
  credentialFields.bearer_token.extend({ name: credentialName, type: z.literal('bearer_token') }),
  credentialFields.api_key.extend({ name: credentialName, type: z.literal('api_key') }),
  credentialFields.basic_auth.extend({ name: credentialName, type: z.literal('basic_auth') }),
  credentialFields.custom_header.extend({ name: credentialName, type: z.literal('custom_header') }),
]);
/** PATCH envelope: the type fields are checked after merging with the stored ones (see mergePatch). */
export const credentialPatch = z.looseObject({ name: credentialName.optional(), type: z.enum(CREDENTIAL_TYPES).optional() });

export const credentialRow = z.object({
  id: z.number(),
  uuid: z.string(),
  organization_id: z.string(),
  name: z.string(),
  type: z.enum(CREDENTIAL_TYPES),
  secret: z.instanceof(Buffer),
  created_at: z.string(),
  updated_at: z.string(),
});
export type CredentialRow = z.infer<typeof credentialRow>;
const COLS = sql.fragment`id, uuid::text, organization_id::text, name, type, secret, created_at, updated_at`;

/** The decrypted credential; throws SecretUnreadable naming it when the current key cannot open it. */
export const openSecret = (config: Config, row: CredentialRow): CredentialSecret => ({
  ...decryptJson<Record<string, string>>(keyOf(config), row.secret, `credential '${row.name}' (${row.uuid})`,
    `send its fields again with PATCH /credentials/${row.uuid}`),
  type: row.type,
}) as CredentialSecret;
/** The decrypted credential, or null when the current key cannot open it. */
export function readSecret(config: Config, row: CredentialRow): CredentialSecret | null {
  try {
    return openSecret(config, row);
  } catch (err) {
    if (err instanceof SecretUnreadable) return null;
    throw err;
  }
}
const seal = (config: Config, s: CredentialSecret) => sql.binary(encryptJson(keyOf(config), s));

/**
 * `{credential_uuid, name, type, <clear fields>, <secret fields masked>, credentials_state, created_at, updated_at}`.
 * A credential the current key cannot open (TELEPHONY_ENCRYPTION_KEY changed) shows no fields and
 * `credentials_state: 'credentials_unreadable'`.
 */
export function credentialView(config: Config, row: CredentialRow) {
  const opened = readSecret(config, row);
  const shown: Record<string, unknown> = {};
  if (opened) {
    const { type: _t, ...fields } = opened as Record<string, string>;
    for (const [k, v] of Object.entries(fields)) shown[k] = SECRET_FIELDS[row.type].includes(k) ? mask(v) : v;
  }
  return {
    credential_uuid: row.uuid, name: row.name, type: row.type, ...shown,
    credentials_state: opened ? 'ok' : 'credentials_unreadable', created_at: row.created_at, updated_at: row.updated_at,
  };
}

/**
 * PATCH merge: with the same type, the given fields replace the stored ones (a secret can be replaced, never read);
 * a new type needs its own fields in full. Returns the candidate for `credentialFields[type]` to parse.
 */
export function mergePatch(stored: CredentialSecret | { type: CredentialType; unreadable: true }, patch: Record<string, unknown>): { type: CredentialType; fields: Record<string, unknown> } {
  const type = (patch.type as CredentialType | undefined) ?? stored.type;
  const given = Object.fromEntries(Object.entries(patch).filter(([k]) => k !== 'name' && k !== 'type'));
  // a new type, or stored fields the current key cannot open: the patch must carry every field
  if (type !== stored.type || 'unreadable' in stored) return { type, fields: given };
  const { type: _t, ...old } = stored;
  return { type, fields: { ...old, ...given } };
}

export async function getCredential(db: Q, orgId: string, uuid: string, lock: '' | 'FOR UPDATE' | 'FOR KEY SHARE' = ''): Promise<CredentialRow | null> {
  const suffix = lock === 'FOR UPDATE' ? sql.fragment`FOR UPDATE` : lock === 'FOR KEY SHARE' ? sql.fragment`FOR KEY SHARE` : sql.fragment``;
  return db.maybeOne(sql.type(credentialRow)`SELECT ${COLS} FROM credentials WHERE uuid = ${uuid} AND organization_id = ${orgId} ${suffix}`);
}

export async function listCredentials(db: Q, orgId: string, limit: number, offset: number): Promise<{ rows: readonly CredentialRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    db.any(sql.type(credentialRow)`SELECT ${COLS} FROM credentials WHERE organization_id = ${orgId} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM credentials WHERE organization_id = ${orgId}`),
  ]);
  return { rows, total };
}

export async function insertCredential(db: Q, config: Config, orgId: string, name: string, secret: CredentialSecret): Promise<CredentialRow> {
  return db.one(sql.type(credentialRow)`
    INSERT INTO credentials (organization_id, name, type, secret) VALUES (${orgId}, ${name}, ${secret.type}, ${seal(config, secret)})
    RETURNING ${COLS}`);
}

export async function updateCredential(db: Q, config: Config, orgId: string, uuid: string, name: string, secret: CredentialSecret): Promise<CredentialRow | null> {
  return db.maybeOne(sql.type(credentialRow)`
    UPDATE credentials SET name = ${name}, type = ${secret.type}, secret = ${seal(config, secret)}, updated_at = now()
    WHERE uuid = ${uuid} AND organization_id = ${orgId} RETURNING ${COLS}`);
}

/** Saved tools (active or archived: archived tools still run in calls that reference them) using a credential. */
export async function toolsUsingCredential(db: Q, orgId: string, uuid: string): Promise<Array<{ uuid: string; name: string; status: string }>> {
  const rows = await db.any(sql.type(z.object({ uuid: z.string(), name: z.string(), status: z.string() }))`
    SELECT uuid::text, name, status FROM tools
    WHERE organization_id = ${orgId} AND definition -> 'config' ->> 'credential_uuid' = ${uuid.toLowerCase()}
    ORDER BY created_at, id`);
  return [...rows];
}
