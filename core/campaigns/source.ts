// The contact source of a campaign: `source_id` is the `id` POST /files returned for a CSV, or the storage key of
// the presigned-upload flow (`documents/<organization>/<uuid>/<file>.csv`). Both resolve, within the organization,
// to one storage object, which is read and validated as a contact CSV.
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import { parseDocumentKey, UUID_RE } from '../documents/records.ts';
import type { Storage } from '../storage/index.ts';
import { StorageNotFoundError } from '../storage/index.ts';
import { CsvError, parseContactsCsv, type Contact } from './csv.ts';

/** Largest contact CSV read (a presigned upload may be up to 100 MB; contacts are capped by row count too). */
export const MAX_SOURCE_BYTES = 50 * 1024 * 1024;

export class SourceError extends Error {}

export async function resolveSourceKey(db: Pick<Db, 'maybeOneFirst'>, storage: Storage, orgId: string, sourceId: string): Promise<string> {
  const id = sourceId.trim();
  if (UUID_RE.test(id)) {
    const key = await db.maybeOneFirst(sql.type(z.object({ storage_key: z.string() }))`
      SELECT storage_key FROM documents WHERE id = ${id} AND organization_id = ${orgId} AND deleted_at IS NULL`);
    if (!key) throw new SourceError(`source_id '${id}' was not found: upload the CSV with POST /files and pass the returned id`);
    if (!key.toLowerCase().endsWith('.csv')) throw new SourceError(`source_id '${id}' is not a CSV file`);
    return key;
  }
  const parsed = parseDocumentKey(id);
  if (!parsed || parsed.orgId !== orgId.toLowerCase()) {
    throw new SourceError(`source_id '${id.slice(0, 200)}' is neither a file id from POST /files nor a storage key of this organization`);
  }
  if (!parsed.fileName.toLowerCase().endsWith('.csv')) throw new SourceError(`source_id '${id.slice(0, 200)}' is not a CSV file`);
  if (!(await storage.exists(id))) throw new SourceError(`source_id '${id.slice(0, 200)}' was not found in storage: upload the CSV first`);
  return id;
}

/** Reads and validates the CSV at `key`. Throws SourceError (missing, too large) or CsvError (content). */
export async function readContacts(storage: Storage, key: string): Promise<Contact[]> {
  const stat = await storage.stat(key);
  if (!stat) throw new SourceError('the contact CSV is no longer in storage');
  if (stat.bytes > MAX_SOURCE_BYTES) throw new SourceError(`the contact CSV is ${stat.bytes} bytes; at most ${MAX_SOURCE_BYTES} are read`);
  let data: Buffer;
  try {
    data = await storage.get(key);
  } catch (err) {
    if (err instanceof StorageNotFoundError) throw new SourceError('the contact CSV is no longer in storage');
    throw err;
  }
  return parseContactsCsv(data);
}

export { CsvError };
