// Every registered document gets ingested, even when the api process died between registering it and starting its
// workflow: POST /files, process-document and create-from-text store the object, insert the row `pending`, then
// start ingestDocument-<uuid>. A SIGKILL between the INSERT and the start would leave the row `pending` for good (nothing
// else starts that workflow). The sweep starts the workflow of documents still `pending` STALLED_AFTER_S after their
// last change; a workflow that exists already (queued behind a busy worker) is left alone (its id is the business
// key, so the start is refused).
import { WorkflowExecutionAlreadyStartedError, type Client as TemporalClient } from '@temporalio/client';
import { z } from 'zod';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { startSweeper } from '../core/sweeper.ts';
import { INGEST_DOCUMENT_WORKFLOW_TYPE, ingestDocumentWorkflowId } from '../workflows/document-ingestion/messages.ts';

export const STALLED_AFTER_S = 60;

export interface StalledDeps {
  db: Db;
  config: Config;
  logger: Logger;
  temporal: TemporalClient | null;
}

/** Start the ingestion of documents left `pending` without a workflow; returns how many were started. */
export async function restartStalledDocuments(deps: StalledDeps, afterS = STALLED_AFTER_S): Promise<number> {
  const temporal = deps.temporal;
  if (!temporal) return 0;
  const ids = await deps.db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id::text FROM documents
    WHERE status = 'pending' AND deleted_at IS NULL AND updated_at < now() - make_interval(secs => ${afterS})
    ORDER BY updated_at LIMIT 100`);
  let n = 0;
  for (const id of ids) {
    try {
      await temporal.workflow.start(INGEST_DOCUMENT_WORKFLOW_TYPE, {
        taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
        workflowId: ingestDocumentWorkflowId(id),
        args: [{ documentId: id }],
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) continue;
      throw err;
    }
    deps.logger.warn({ documentId: id }, 'document left pending without its ingestion workflow (the api died before starting it): started');
    n += 1;
  }
  return n;
}

/** Run restartStalledDocuments every 15 s (api process; safe on every replica); stop() waits for a sweep in progress. */
export function startStalledDocumentSweeper(deps: StalledDeps): { stop(): Promise<void> } {
  return startSweeper(() => restartStalledDocuments(deps), 15_000, deps.logger, 'stalled-document sweep failed');
}
