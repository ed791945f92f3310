-- The api's recovery sweeps: ended calls whose post-call hand-off was lost with the process
-- that ended them (core/calls/missed-post-call.ts), and documents left pending without their ingestion workflow
-- (api/stalled-documents.ts). Both look at a handful of rows among many: partial indexes keep the sweeps cheap.
CREATE INDEX calls_post_call_missing_idx ON calls (ended_at) WHERE post_call_completed_at IS NULL AND status IN ('completed', 'error');
CREATE INDEX documents_pending_idx ON documents (updated_at) WHERE status = 'pending' AND deleted_at IS NULL;
