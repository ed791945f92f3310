// OpenAPI path items of the stored credentials (api/routes/credentials.ts). The request schemas
// come from the same zod schemas the routes parse with.
import { z } from 'zod';
import { CREDENTIAL_TYPES, credentialCreate, SECRET_FIELDS } from '../../core/credentials/store.ts';
import { registerOpenApiPaths } from './document.ts';
import { err, int, json, ok, page, str, ts } from './parts.ts';

const uuidParam = { name: 'credential_uuid', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const tags = ['Credentials'];
const masked = { type: 'string', description: 'masked: "••••" + the last 4 characters ("••••" alone for secrets of 8 characters or fewer)' };

const createSchema = z.toJSONSchema(credentialCreate, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
delete createSchema.$schema;

const record = {
  type: 'object',
  description: `Secrets are never returned, only masked (${CREDENTIAL_TYPES.map((t) => `${t}: ${SECRET_FIELDS[t].join(', ')}`).join('; ')}). Headers sent on every call of a saved HTTP tool whose definition.config.credential_uuid names it: bearer_token → Authorization: Bearer <token>; api_key → <header_name>: <api_key>; basic_auth → Authorization: Basic base64(username:password); custom_header → <header_name>: <header_value>. A credential header replaces a static tool header of the same name.`,
  properties: {
    credential_uuid: { type: 'string', format: 'uuid' }, name: str, type: { enum: [...CREDENTIAL_TYPES] },
    header_name: { ...str, description: 'api_key, custom_header' }, username: { ...str, description: 'basic_auth' },
    token: masked, api_key: masked, password: masked, header_value: masked,
    credentials_state: { enum: ['ok', 'credentials_unreadable'], description: 'credentials_unreadable: the current TELEPHONY_ENCRYPTION_KEY cannot open the stored fields (not shown); send them again with PATCH' },
    created_at: ts, updated_at: ts,
  },
  required: ['credential_uuid', 'name', 'type', 'credentials_state', 'created_at', 'updated_at'],
};

registerOpenApiPaths({
  '/credentials': {
    post: {
      tags, summary: 'Store a credential for saved HTTP tools (encrypted at rest)',
      requestBody: { required: true, content: json(createSchema) },
      responses: { 201: ok(record, 'Created'), 409: err("A credential named '…' already exists in this organization."), 422: err('Validation failed (array)') },
    },
    get: { tags, summary: 'List credentials (secrets masked)', parameters: page, responses: { 200: ok({ type: 'object', properties: { items: { type: 'array', items: record }, total: int, page: int, perPage: int, totalPages: int } }), 422: err('Bad page/per_page') } },
  },
  '/credentials/{credential_uuid}': {
    parameters: [uuidParam],
    get: { tags, summary: 'One credential (secrets masked)', responses: { 200: ok(record), 404: err("'Credential not found'") } },
    patch: {
      tags, summary: 'Rename or replace fields; secrets can be replaced, never read. Changing `type` needs all fields of the new type.',
      requestBody: { required: true, content: json({ type: 'object', properties: { name: { ...str, minLength: 1, maxLength: 255 }, type: { enum: [...CREDENTIAL_TYPES] }, token: str, header_name: str, api_key: str, username: str, password: str, header_value: str } }) },
      responses: { 200: ok(record), 404: err("'Credential not found'"), 409: err('Name taken'), 422: err('Validation failed (array)') },
    },
    delete: { tags, summary: 'Delete a credential no saved tool uses', responses: { 204: { description: 'Deleted' }, 404: err("'Credential not found'"), 409: err('Used by saved tools (named in the detail)') } },
  },
});
