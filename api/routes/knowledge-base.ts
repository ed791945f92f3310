// Knowledge base: presigned upload URL (100 MB, 30 minutes), process an uploaded object, create from text.
// Bodies are snake_case; unknown fields are ignored; schema failures are 422 arrays.
import { randomUUID } from 'node:crypto';
import type Router from '@koa/router';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import {
  ALLOWED_EXTENSIONS,
  DOCUMENT_COLUMNS,
  documentKey,
  documentRow,
  extensionOf,
  fileRecord,
  MAX_PRESIGNED_BYTES,
  parseDocumentKey,
  PRESIGNED_EXPIRES_S,
  RETRIEVAL_MODES,
  safeFileName,
} from '../../core/documents/records.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import type { ApiDeps } from '../deps.ts';
import type { PresignedPost } from '../../core/storage/index.ts';
import { insertDocument, mimeTypeFor, requireTemporal, startIngestion, unsupportedType } from './files.ts';

const uploadUrlBody = z.object({
  filename: z.string().trim().min(1).max(255),
  mime_type: z.string().trim().min(1).max(255),
});
const processBody = z.object({
  document_uuid: z.uuid(),
  s3_key: z.string().min(1).max(1024),
  retrieval_mode: z.enum(RETRIEVAL_MODES).default('chunked'),
});
const fromTextBody = z.object({
  name: z.string().trim().min(1).max(255).optional(),
  text: z.string().refine((s) => s.trim().length > 0, 'Text must not be empty').pipe(z.string().max(1_000_000)),
  retrieval_mode: z.enum(RETRIEVAL_MODES).default('chunked'),
});

const checkExtension = (filename: string) => {
  const ext = extensionOf(filename);
  if (!(ALLOWED_EXTENSIONS as readonly string[]).includes(ext)) throw new HttpError(400, unsupportedType(ext));
};

export function knowledgeBaseRoutes(router: Router, deps: ApiDeps): void {
  const { db, storage } = deps;

  router.post('/knowledge-base/upload-url', async (ctx) => {
    const orgId = requireOrg(ctx);
    const body = parseOr422(uploadUrlBody, ctx.request.body ?? {});
    checkExtension(body.filename);
    const documentUuid = randomUUID();
    const key = documentKey(orgId, documentUuid, body.filename);
    const presign = { contentType: body.mime_type, maxBytes: MAX_PRESIGNED_BYTES, expiresInS: PRESIGNED_EXPIRES_S };
    let uploadUrl: string;
    let uploadForm: PresignedPost | undefined;
    try {
      uploadUrl = await storage.presignPut(key, presign);
      // S3 cannot cap the size of a presigned PUT; the spec's PUT URL stays (the object's size is checked again at
      // process-document), and `upload_form` is the same upload as a presigned POST whose policy the bucket
      // enforces: more than 100 MB is refused by S3 itself, at upload time. Local storage caps the PUT itself.
      uploadForm = await storage.presignPost?.(key, presign);
    } catch (err) {
      ctx.state.log?.error({ err }, 'presign failed');
      throw new HttpError(500, 'Failed to generate presigned upload URL');
    }
    ctx.body = { upload_url: uploadUrl, document_uuid: documentUuid, s3_key: key, ...(uploadForm ? { upload_form: uploadForm } : {}) };
  });

  router.post('/knowledge-base/process-document', async (ctx) => {
    const orgId = requireOrg(ctx);
    const body = parseOr422(processBody, ctx.request.body ?? {});
    const documentId = body.document_uuid.toLowerCase();
    const parsed = parseDocumentKey(body.s3_key);
    if (!parsed || parsed.orgId !== orgId.toLowerCase() || parsed.documentId !== documentId) {
      throw new HttpError(400, "s3_key does not belong to this document_uuid in this organization (expected 'documents/<organization>/<document_uuid>/<file>' from /knowledge-base/upload-url)");
    }
    checkExtension(parsed.fileName);
    requireTemporal(deps);

    const existing = await db.maybeOne(sql.type(documentRow)`
      SELECT ${DOCUMENT_COLUMNS} FROM documents WHERE id = ${documentId}`);
    if (existing && (existing.organization_id !== orgId || existing.storage_key !== body.s3_key)) {
      throw new HttpError(409, 'document_uuid is already used by another document');
    }
    if (existing && existing.status !== 'failed') {
      // Already registered (retried call): idempotent.
      ctx.body = fileRecord(existing);
      return;
    }
    const st = await storage.stat(body.s3_key);
    if (!st) throw new HttpError(404, 'Uploaded file not found: PUT the file to upload_url first');
    if (st.bytes > MAX_PRESIGNED_BYTES) {
      await storage.delete(body.s3_key).catch(() => {});
      throw new HttpError(400, 'File exceeds maximum size of 100MB');
    }
    let doc;
    if (existing) {
      doc = await db.one(sql.type(documentRow)`
        UPDATE documents SET status = 'pending', error = NULL, total_chunks = 0, bytes = ${st.bytes},
          retrieval_mode = ${body.retrieval_mode}, deleted_at = NULL, updated_at = now()
        WHERE id = ${documentId} RETURNING ${DOCUMENT_COLUMNS}`);
    } else {
      doc = await insertDocument(deps, {
        id: documentId, orgId, name: parsed.fileName, originalName: parsed.fileName, bytes: st.bytes,
        mimeType: mimeTypeFor(parsed.fileName), retrievalMode: body.retrieval_mode, storageKey: body.s3_key,
      });
    }
    await startIngestion(deps, doc);
    ctx.status = 201;
    ctx.body = fileRecord(doc);
  });

  router.post('/knowledge-base/create-from-text', async (ctx) => {
    const orgId = requireOrg(ctx);
    const body = parseOr422(fromTextBody, ctx.request.body ?? {});
    requireTemporal(deps);
    const name = body.name ?? 'Untitled document';
    const ext = extensionOf(name);
    const fileName = ext === '.txt' || ext === '.md' ? name : `${name}.txt`;
    const id = randomUUID();
    const key = documentKey(orgId, id, fileName);
    const data = Buffer.from(body.text, 'utf8');
    try {
      await storage.put(key, data, { contentType: mimeTypeFor(fileName) });
    } catch (err) {
      ctx.state.log?.error({ err }, 'document upload to storage failed');
      throw new HttpError(500, 'Failed to upload file to storage');
    }
    const doc = await insertDocument(deps, {
      id, orgId, name, originalName: safeFileName(fileName), bytes: data.length, mimeType: mimeTypeFor(fileName),
      retrievalMode: body.retrieval_mode, storageKey: key,
    });
    await startIngestion(deps, doc);
    ctx.status = 201;
    ctx.body = fileRecord(doc);
  });
}
