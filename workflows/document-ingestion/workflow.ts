// ingestDocument: pending → processing → completed | failed. The activity does the work (streaming, heartbeats,
// idempotent chunk writes); the workflow retries transient failures and records the final error.
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { IngestionActivities, IngestResult } from '../../activities/ingestion.ts';
import type { IngestDocumentInput } from './messages.ts';

const { ingestDocumentContent } = proxyActivities<IngestionActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6, nonRetryableErrorTypes: ['DocumentExtractionError'] },
});
const { markDocumentFailed } = proxyActivities<IngestionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 20, maximumInterval: '30 seconds' },
});

function reason(err: unknown): string {
  let e: unknown = err;
  if (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof ApplicationFailure) return e.message;
  if (e instanceof TimeoutFailure) return `Processing timed out (${e.timeoutType})`;
  return `Processing failed: ${e instanceof Error ? e.message : String(e)}`;
}

export async function ingestDocument(input: IngestDocumentInput): Promise<IngestResult | { status: 'failed'; error: string }> {
  try {
    return await ingestDocumentContent(input.documentId);
  } catch (err) {
    const error = reason(err);
    await markDocumentFailed(input.documentId, error);
    return { status: 'failed', error };
  }
}
