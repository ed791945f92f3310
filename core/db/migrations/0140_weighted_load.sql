-- Weighted admission (issue 24): each media node also reports its load weighted by transport × engines
-- (core/media-nodes.ts CALL_WEIGHTS, in units of one local-engine WebSocket call, the unit of `capacity`).
-- POST /call counts a node as available while weighted_load + the lightest call fits its capacity.
ALTER TABLE media_nodes ADD COLUMN weighted_load real NOT NULL DEFAULT 0;
