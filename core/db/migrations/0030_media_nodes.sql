-- Media processes announce themselves with a heartbeat; a call row left 'active' by a node whose heartbeat is
-- stale (process crashed or was killed) is reconciled by any live node (status error, endedReason pipeline_error).
CREATE TABLE media_nodes (
  node_id text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calls_media_node_active_idx ON calls (media_node) WHERE status = 'active';
