// The documents table as the api shows it (spec "File / document") and the storage-key layout.
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';

export const RETRIEVAL_MODES = ['chunked', 'full_document'] as const;
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number];
export const ALLOWED_EXTENSIONS = ['.pdf', '.docx', '.doc', '.txt', '.json', '.md', '.csv'] as const;

/** POST /files limit. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** Presigned knowledge-base upload limits. */
export const MAX_PRESIGNED_BYTES = 100 * 1024 * 1024;
export const PRESIGNED_EXPIRES_S = 30 * 60;

export const documentRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  original_name: z.string(),
  bytes: z.number(),
  mime_type: z.string(),
  status: z.enum(['pending', 'processing', 'completed', 'failed']),
  error: z.string().nullable(),
  retrieval_mode: z.enum(RETRIEVAL_MODES),
  total_chunks: z.number(),
  storage_key: z.string(),
  ts_config: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DocumentRow = z.infer<typeof documentRow>;

export const DOCUMENT_COLUMNS = sql.fragment`id, organization_id, name, original_name, bytes, mime_type, status, error,
  retrieval_mode, total_chunks, storage_key, ts_config::text AS ts_config, created_at, updated_at`;

export function fileRecord(r: DocumentRow) {
  return {
    id: r.id,
    name: r.name,
    originalName: r.original_name,
    bytes: r.bytes,
    mimeType: r.mime_type,
    status: r.status,
    error: r.error,
    retrievalMode: r.retrieval_mode,
    totalChunks: r.total_chunks,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
export type FileRecord = ReturnType<typeof fileRecord>;

/** Extension with the dot, lower-cased ('' when none). */
export function extensionOf(filename: string): string {
  const base = filename.slice(filename.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 || (dot === 0 && base.length > 1) ? base.slice(dot).toLowerCase() : '';
}

/** A file name safe as a storage-key segment (letters, digits, ._-), keeping the extension. */
export function safeFileName(filename: string): string {
  const base = filename.replace(/\\/g, '/').split('/').pop() ?? '';
  const ext = extensionOf(base);
  const stem = (ext ? base.slice(0, -ext.length) : base)
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+|[._]+$/g, '')
    .slice(0, 100);
  return `${stem || 'document'}${ext.replace(/[^a-z0-9.]/g, '')}`;
}

export const documentPrefix = (orgId: string) => `documents/${orgId}/`;
export const documentKey = (orgId: string, documentId: string, filename: string) => `${documentPrefix(orgId)}${documentId}/${safeFileName(filename)}`;

/** Parses `documents/<org>/<uuid>/<file>`; null when the key is not of that shape. */
export function parseDocumentKey(key: string): { orgId: string; documentId: string; fileName: string } | null {
  const m = /^documents\/([0-9a-f-]{36})\/([0-9a-f-]{36})\/([A-Za-z0-9._-]+)$/i.exec(key);
  return m ? { orgId: m[1]!.toLowerCase(), documentId: m[2]!.toLowerCase(), fileName: m[3]! } : null;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function getDocument(db: Db, orgId: string, id: string): Promise<DocumentRow | null> {
  if (!UUID_RE.test(id)) return null;
  return db.maybeOne(sql.type(documentRow)`
    SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = ${id} AND organization_id = ${orgId} AND deleted_at IS NULL`);
}
