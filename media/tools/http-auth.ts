// How a saved HTTP tool authenticates: the stored credential its definition names (config.credential_uuid) becomes
// request headers, read from the store on every invocation (a PATCHed secret applies to the next call of the
// tool). The secret never reaches a log line or the LLM: a failure names the credential id only.
import { isUuid } from '../../core/agent-config/index.ts';
import type { Config } from '../../core/config.ts';
import { getCredential, readSecret, type CredentialSecret } from '../../core/credentials/store.ts';
import type { Db } from '../../core/db/pool.ts';

/** Headers for one request of a tool using `credentialUuid`, or an error message for the LLM and the logs. */
export type ToolAuth = (credentialUuid: string) => Promise<{ headers: Record<string, string> } | { error: string }>;

/** The header a credential type defines. */
export function credentialHeaders(c: CredentialSecret): Record<string, string> {
  switch (c.type) {
    case 'bearer_token':
      return { Authorization: `Bearer ${c.token}` };
    case 'api_key':
      return { [c.header_name]: c.api_key };
    case 'basic_auth':
      return { Authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`, 'utf8').toString('base64')}` };
    case 'custom_header':
      return { [c.header_name]: c.header_value };
  }
}

/** Credentials of `orgId` (a tool of another organization's credential finds nothing). */
export function storedCredentialAuth(db: Db, config: Config, orgId: string): ToolAuth {
  return async (credentialUuid) => {
    let row;
    try {
      row = isUuid(credentialUuid) ? await getCredential(db, orgId, credentialUuid.toLowerCase()) : null;
    } catch {
      return { error: `The stored credential ${credentialUuid} this tool uses could not be read; the request was not sent.` };
    }
    if (!row) return { error: `The stored credential ${credentialUuid} this tool uses was not found; the request was not sent.` };
    const secret = readSecret(config, row);
    if (!secret) return { error: `The stored credential ${credentialUuid} this tool uses cannot be decrypted with the current encryption key; the request was not sent.` };
    return { headers: credentialHeaders(secret) };
  };
}

/** `base` with `extra` applied, a header of `extra` replacing one of `base` whatever its case. */
export function withHeaders(base: Record<string, string>, extra: Record<string, string>): Record<string, string> {
  const names = new Set(Object.keys(extra).map((h) => h.toLowerCase()));
  return { ...Object.fromEntries(Object.entries(base).filter(([h]) => !names.has(h.toLowerCase()))), ...extra };
}
