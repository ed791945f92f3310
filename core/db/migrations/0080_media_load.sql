-- Media nodes report their load with each heartbeat: live calls, the node's configured call capacity, event-loop
-- lag (p99 over the last report interval) and whether it is draining. POST /call refuses with 503 when every live
-- node is at capacity; operators read the table (and each node's /metrics, /readyz) to see where calls run.
ALTER TABLE media_nodes
  ADD COLUMN active_calls integer NOT NULL DEFAULT 0,
  ADD COLUMN capacity integer NOT NULL DEFAULT 0,
  ADD COLUMN loop_lag_ms real NOT NULL DEFAULT 0,
  ADD COLUMN draining boolean NOT NULL DEFAULT false,
  ADD COLUMN load_at timestamptz NOT NULL DEFAULT now();
