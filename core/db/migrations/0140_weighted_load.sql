-- Weighted admission: each media node also reports its load weighted by transport × engines
-- (media/admission.ts CALL_WEIGHTS, in units of one local-engine WebSocket call, the unit of `capacity`) and whether
-- its admission would take the lightest join right now. POST /call counts a node available when it is accepting.
ALTER TABLE media_nodes
  ADD COLUMN weighted_load real NOT NULL DEFAULT 0,
  ADD COLUMN accepting boolean NOT NULL DEFAULT true;
