// Files: POST /files (multipart upload + register + start ingestion), GET /files/{file_id}, GET /files,
// DELETE /files/{file_id}. Files and knowledge-base documents are one store (the documents table).
import { randomUUID } from 'node:crypto';
import type Router from '@koa/router';
import { z } from 'zod';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import { documentInUse, documentInUseMessage, documentUsers } from '../../core/documents/users.ts';
import { contentTypeFor } from '../../core/storage/index.ts';
import {
  ALLOWED_EXTENSIONS,
  DOCUMENT_COLUMNS,
  documentKey,
  documentRow,
  extensionOf,
  fileRecord,
  getDocument,
  MAX_FILE_BYTES,
  RETRIEVAL_MODES,
  safeFileName,
  UUID_RE,
  type DocumentRow,
  type RetrievalMode,
} from '../../core/documents/records.ts';
import { INGEST_DOCUMENT_WORKFLOW_TYPE, ingestDocumentWorkflowId } from '../../workflows/document-ingestion/messages.ts';
import { requireOrg } from '../middleware/auth.ts';
import { readMultipart, uploadedFileName } from '../middleware/multipart.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import type { ApiDeps } from '../deps.ts';

export const FILE_NOT_FOUND = 'File not found';
const TEMPORAL_UNAVAILABLE = 'Document processing is unavailable: Temporal is not configured';
/** Past this declared request size the upload is refused without reading it. */
const MAX_MULTIPART_REQUEST = 4 * MAX_FILE_BYTES;

export const unsupportedType = (ext: string) => `Unsupported file type '${ext}'. Allowed: ${ALLOWED_EXTENSIONS.join(', ')}`;
export const invalidMode = (mode: string) => `Invalid retrievalMode '${mode}'. Must be one of: ${RETRIEVAL_MODES.join(', ')}`;
export const mimeTypeFor = (filename: string) => contentTypeFor(filename).split(';')[0]!.trim();

export function requireTemporal(deps: ApiDeps) {
  if (!deps.temporal) throw new HttpError(503, TEMPORAL_UNAVAILABLE);
  return deps.temporal;
}

/** Inserts a pending document row for an object already in storage. */
export async function insertDocument(
  deps: ApiDeps,
  d: { id: string; orgId: string; name: string; originalName: string; bytes: number; mimeType: string; retrievalMode: RetrievalMode; storageKey: string },
): Promise<DocumentRow> {
  return deps.db.one(sql.type(documentRow)`
    INSERT INTO documents (id, organization_id, name, original_name, bytes, mime_type, status, retrieval_mode, storage_key)
    VALUES (${d.id}, ${d.orgId}, ${d.name}, ${d.originalName}, ${d.bytes}, ${d.mimeType}, 'pending', ${d.retrievalMode}, ${d.storageKey})
    RETURNING ${DOCUMENT_COLUMNS}`);
}

/** Starts `ingestDocument-<uuid>`; when Temporal refuses, the document is marked failed and the caller gets 503. */
export async function startIngestion(deps: ApiDeps, doc: DocumentRow): Promise<void> {
  const temporal = requireTemporal(deps);
  try {
    await temporal.workflow.start(INGEST_DOCUMENT_WORKFLOW_TYPE, {
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      workflowId: ingestDocumentWorkflowId(doc.id),
      args: [{ documentId: doc.id }],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    deps.logger.error({ err, documentId: doc.id }, 'could not start document ingestion');
    await deps.db.query(sql.unsafe`
      UPDATE documents SET status = 'failed', error = 'Document processing could not be started', updated_at = now()
      WHERE id = ${doc.id}`);
    throw new HttpError(503, 'Document processing is temporarily unavailable');
  }
}

const listQuery = paginationQuery().extend({
  status: z
    .string()
    .optional()
    .transform((v) => (v ? v.split(',') : []))
    .pipe(z.array(z.enum(['pending', 'processing', 'completed', 'failed']))),
});

export function filesRoutes(router: Router, deps: ApiDeps): void {
  const { db, storage } = deps;

  router.post('/files', async (ctx) => {
    const orgId = requireOrg(ctx);
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > MAX_MULTIPART_REQUEST) {
      ctx.set('Connection', 'close');
      throw new HttpError(400, 'File exceeds maximum size of 5MB');
    }
    const { file, fields } = await readMultipart(ctx, { fileField: 'file', maxFileBytes: MAX_FILE_BYTES });
    const filename = uploadedFileName(file);
    if (!file || !filename) throw new HttpError(400, 'Filename is required');
    const modeRaw = fields.retrievalMode ?? '';
    const mode = (modeRaw === '' ? 'chunked' : modeRaw) as RetrievalMode;
    if (!(RETRIEVAL_MODES as readonly string[]).includes(mode)) throw new HttpError(400, invalidMode(modeRaw));
    const ext = extensionOf(filename);
    if (!(ALLOWED_EXTENSIONS as readonly string[]).includes(ext)) throw new HttpError(400, unsupportedType(ext));
    if (file.truncated || file.data.length > MAX_FILE_BYTES) throw new HttpError(400, 'File exceeds maximum size of 5MB');
    requireTemporal(deps);

    const id = randomUUID();
    const key = documentKey(orgId, id, filename);
    const mimeType = mimeTypeFor(filename);
    try {
      await storage.put(key, file.data, { contentType: mimeType });
    } catch (err) {
      ctx.state.log?.error({ err }, 'document upload to storage failed');
      throw new HttpError(500, 'Failed to upload file to storage');
    }
    const doc = await insertDocument(deps, {
      id, orgId, name: safeFileName(filename), originalName: filename, bytes: file.data.length, mimeType, retrievalMode: mode, storageKey: key,
    });
    await startIngestion(deps, doc);
    ctx.status = 201;
    ctx.body = fileRecord(doc);
  });

  router.get('/files', async (ctx) => {
    const orgId = requireOrg(ctx);
    const q = parseOr422(listQuery, ctx.query, 'query');
    const { limit, offset } = pageWindow(q);
    const statusFilter = q.status.length ? sql.fragment`AND status = ANY(${sql.array(q.status, 'text')})` : sql.fragment``;
    const [rows, total] = await Promise.all([
      db.any(sql.type(documentRow)`
        SELECT ${DOCUMENT_COLUMNS} FROM documents
        WHERE organization_id = ${orgId} AND deleted_at IS NULL ${statusFilter}
        ORDER BY created_at DESC, id LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM documents WHERE organization_id = ${orgId} AND deleted_at IS NULL ${statusFilter}`),
    ]);
    ctx.body = envelope(rows.map(fileRecord), total, q);
  });

  router.get('/files/:file_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const doc = await getDocument(db, orgId, ctx.params.file_id ?? '');
    if (!doc) throw new HttpError(404, FILE_NOT_FOUND);
    ctx.body = fileRecord(doc);
  });

  router.delete('/files/:file_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const id = ctx.params.file_id ?? '';
    if (!UUID_RE.test(id)) throw new HttpError(404, FILE_NOT_FOUND);
    const key = await db.transaction(async (tx) => {
      // The row lock waits for agent and tool saves naming the document (they hold it FOR KEY SHARE), then sees them.
      const doc = await tx.maybeOne(sql.type(z.object({ name: z.string() }))`
        SELECT name FROM documents WHERE id = ${id} AND organization_id = ${orgId} AND deleted_at IS NULL FOR UPDATE`);
      if (!doc) return null;
      const users = await documentUsers(tx, orgId, id);
      if (documentInUse(users)) throw new HttpError(409, documentInUseMessage(doc.name, users));
      const k = await tx.maybeOneFirst(sql.type(z.object({ storage_key: z.string() }))`
        UPDATE documents SET deleted_at = now(), updated_at = now()
        WHERE id = ${id} AND organization_id = ${orgId} AND deleted_at IS NULL RETURNING storage_key`);
      if (k) await tx.query(sql.unsafe`DELETE FROM document_chunks WHERE document_id = ${id}`);
      return k;
    });
    if (!key) throw new HttpError(404, FILE_NOT_FOUND);
    await deps.temporal?.workflow.getHandle(ingestDocumentWorkflowId(id)).terminate('document deleted').catch(() => {});
    await storage.delete(key).catch((err: unknown) => ctx.state.log?.warn({ err, key }, 'could not delete document object'));
    ctx.body = { success: true, message: 'File deleted', id };
  });
}
