// Document ingestion activities (workflow `ingestDocument-<uuid>`): stream one stored document, extract its text,
// chunk it on structure, and index the chunks (full-text always, embeddings when configured).
//
// Idempotency: chunking is deterministic, chunks are keyed (document_id, chunk_index) and written with
// ON CONFLICT DO UPDATE, and completion deletes any index past the final count in the same transaction that
// marks the document completed. A retried attempt (worker restart, heartbeat timeout) therefore rewrites the
// same rows and never duplicates; it also resumes after the last batch recorded in its heartbeat details.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';
import { StorageNotFoundError } from '../core/storage/index.ts';
import { Chunker, DocumentTooLargeError, FullDocumentCollector, type Chunk } from '../core/documents/chunking.ts';
import { detectTsConfig } from '../core/documents/language.ts';
import { embed, embeddingConfigFrom, vectorLiteral, type EmbeddingConfig } from '../core/documents/embeddings.ts';
import { documentRow, DOCUMENT_COLUMNS } from '../core/documents/records.ts';
import { extractBlocks, ExtractionError, formatOf } from './extract/index.ts';
import type { Config } from '../core/config.ts';

export const NON_RETRYABLE_INGESTION = 'DocumentExtractionError';
const BATCH = 100;
const EMBED_BATCH = 64;

export interface IngestDeps {
  config: Pick<Config, 'EMBEDDING_BASE_URL' | 'EMBEDDING_API_KEY' | 'EMBEDDING_MODEL'>;
  db: Db;
  logger: Logger;
  storage: Storage;
}

export interface IngestHooks {
  /** Records progress (chunks durably written so far). */
  progress?: (written: number) => void;
  /** Chunks below this index were written by an earlier attempt and are not rewritten. */
  resumeFrom?: number;
  signal?: AbortSignal;
}

export type IngestResult = { status: 'completed'; totalChunks: number } | { status: 'skipped'; reason: string };

const fail = (message: string) => ApplicationFailure.nonRetryable(message, NON_RETRYABLE_INGESTION);

let tsConfigs: Set<string> | null = null;
async function availableTsConfigs(db: Db): Promise<Set<string>> {
  tsConfigs ??= new Set(await db.anyFirst(sql.type(z.object({ cfgname: z.string() }))`SELECT cfgname::text FROM pg_ts_config`));
  return tsConfigs;
}

/** Processes one document end to end. Throws ApplicationFailure(nonRetryable) for problems of the file itself. */
export async function ingestOneDocument(deps: IngestDeps, documentId: string, hooks: IngestHooks = {}): Promise<IngestResult> {
  const { db, storage } = deps;
  const doc = await db.maybeOne(sql.type(documentRow)`
    UPDATE documents SET status = 'processing', error = NULL, updated_at = now()
    WHERE id = ${documentId} AND deleted_at IS NULL AND status <> 'completed'
    RETURNING ${DOCUMENT_COLUMNS}`);
  if (!doc) return { status: 'skipped', reason: 'document deleted, missing or already completed' };

  const format = formatOf(doc.storage_key);
  if (!format) throw fail(`Unsupported file type '${doc.storage_key.slice(doc.storage_key.lastIndexOf('.'))}'`);
  const source = {
    stream: () => storage.getStream(doc.storage_key),
    buffer: () => storage.get(doc.storage_key),
  };
  const embedCfg: EmbeddingConfig | null = embeddingConfigFrom(deps.config);
  const resumeFrom = hooks.resumeFrom ?? 0;
  let tsConfig: string | null = null;
  let written = 0;
  let pending: Chunk[] = [];

  const writeBatch = async (batch: Chunk[]) => {
    if (!batch.length) return;
    hooks.signal?.throwIfAborted();
    tsConfig ??= detectTsConfig(batch.map((c) => c.content).join('\n').slice(0, 5000), await availableTsConfigs(db));
    const last = batch[batch.length - 1]!.index;
    const todo = batch.filter((c) => c.index >= resumeFrom);
    if (todo.length) {
      let vectors: (string | null)[] = todo.map(() => null);
      if (embedCfg) {
        vectors = [];
        for (let i = 0; i < todo.length; i += EMBED_BATCH) {
          const part = todo.slice(i, i + EMBED_BATCH);
          const vs = await embed(embedCfg, part.map((c) => c.content), hooks.signal);
          vectors.push(...vs.map(vectorLiteral));
        }
      }
      await db.query(sql.unsafe`
        INSERT INTO document_chunks (document_id, chunk_index, organization_id, content, heading, ts_config, tsv, embedding)
        SELECT ${doc.id}, t.idx, ${doc.organization_id}, t.content, NULLIF(t.heading, ''), ${tsConfig}::regconfig,
               to_tsvector(${tsConfig}::regconfig, t.content), t.emb::real[]
        FROM unnest(${sql.array(todo.map((c) => c.index), 'int4')}, ${sql.array(todo.map((c) => c.content), 'text')},
                    ${sql.array(todo.map((c) => c.heading ?? ''), 'text')}, ${sql.array(vectors, 'text')}) AS t(idx, content, heading, emb)
        WHERE EXISTS (SELECT 1 FROM documents WHERE id = ${doc.id} AND deleted_at IS NULL)
        ON CONFLICT (document_id, chunk_index) DO UPDATE
          SET content = EXCLUDED.content, heading = EXCLUDED.heading, ts_config = EXCLUDED.ts_config,
              tsv = EXCLUDED.tsv, embedding = EXCLUDED.embedding`);
    }
    written = last + 1;
    hooks.progress?.(written);
  };

  let total = 0;
  try {
    if (doc.retrieval_mode === 'full_document') {
      const collector = new FullDocumentCollector();
      for await (const block of extractBlocks(format, source)) collector.push(block);
      const chunks = collector.end();
      await writeBatch(chunks);
      total = chunks.length;
    } else {
      const chunker = new Chunker();
      for await (const block of extractBlocks(format, source)) {
        pending.push(...chunker.push(block));
        if (pending.length >= BATCH) {
          await writeBatch(pending);
          pending = [];
        }
      }
      pending.push(...chunker.end());
      await writeBatch(pending);
      total = chunker.emitted;
    }
  } catch (err) {
    if (err instanceof ExtractionError || err instanceof DocumentTooLargeError) throw fail(err.message);
    if (err instanceof StorageNotFoundError) throw fail('The uploaded file was not found in storage');
    throw err;
  }
  if (total === 0) throw fail('No text could be extracted from the document');

  const finished = await db.transaction(async (tx) => {
    const live = await tx.maybeOneFirst(sql.type(z.object({ live: z.boolean() }))`
      SELECT deleted_at IS NULL AS live FROM documents WHERE id = ${doc.id} FOR UPDATE`);
    if (!live) {
      await tx.query(sql.unsafe`DELETE FROM document_chunks WHERE document_id = ${doc.id}`);
      return false;
    }
    await tx.query(sql.unsafe`DELETE FROM document_chunks WHERE document_id = ${doc.id} AND chunk_index >= ${total}`);
    await tx.query(sql.unsafe`
      UPDATE documents SET status = 'completed', error = NULL, total_chunks = ${total},
        ts_config = ${tsConfig ?? 'english'}::regconfig, updated_at = now()
      WHERE id = ${doc.id}`);
    return true;
  });
  deps.logger.info({ documentId, totalChunks: total, tsConfig, finished }, 'document ingested');
  return finished ? { status: 'completed', totalChunks: total } : { status: 'skipped', reason: 'document deleted during ingestion' };
}

export async function markDocumentFailed(db: Db, documentId: string, error: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(sql.unsafe`DELETE FROM document_chunks WHERE document_id = ${documentId}`);
    await tx.query(sql.unsafe`
      UPDATE documents SET status = 'failed', error = ${error.slice(0, 1000)}, total_chunks = 0, updated_at = now()
      WHERE id = ${documentId} AND status <> 'completed'`);
  });
}

export function createIngestionActivities(deps: IngestDeps) {
  return {
    async ingestDocumentContent(documentId: string): Promise<IngestResult> {
      const ctx = Context.current();
      const details = ctx.info.heartbeatDetails as { written?: number } | undefined;
      let written = typeof details?.written === 'number' ? details.written : 0;
      ctx.heartbeat({ written });
      const timer = setInterval(() => ctx.heartbeat({ written }), 2_000);
      try {
        return await ingestOneDocument(deps, documentId, {
          resumeFrom: written,
          signal: ctx.cancellationSignal,
          progress: (n) => {
            written = n;
            ctx.heartbeat({ written });
          },
        });
      } finally {
        clearInterval(timer);
      }
    },
    async markDocumentFailed(documentId: string, error: string): Promise<void> {
      await markDocumentFailed(deps.db, documentId, error);
    },
  };
}
export type IngestionActivities = ReturnType<typeof createIngestionActivities>;
