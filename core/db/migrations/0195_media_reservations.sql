-- Room on a media node is reserved before a call is handed out or dialled: calls.reserved_weight is the weight the
-- pending call holds on its assigned node (core/media-nodes.ts reserveMediaNode) until its media arrives or the row
-- leaves pending. media_nodes.local_unit is what a local-engine call weighs on that node (its local engines' cost),
-- so the api can weigh a call it has not handed out yet.
ALTER TABLE calls ADD COLUMN reserved_weight double precision;
ALTER TABLE media_nodes ADD COLUMN local_unit double precision NOT NULL DEFAULT 1;
