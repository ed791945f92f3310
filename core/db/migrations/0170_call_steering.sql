-- POST /call steers a call to the least loaded media node by weight.
-- media_nodes.public_url: the node's own public address (MEDIA_PUBLIC_URL) when it has one; NULL = the shared
-- PUBLIC_URL behind the proxy. calls.assigned_node: the node POST /call assigned the pending call to. Until the call
-- joins, its joining weight counts on that node's load (the node's own weighted_load does not have it yet); the
-- assignment is advisory: whichever node claims the row (calls.media_node) serves the call.
ALTER TABLE media_nodes ADD COLUMN public_url text;
ALTER TABLE calls ADD COLUMN assigned_node text;
CREATE INDEX calls_pending_assigned_idx ON calls (assigned_node) WHERE status = 'pending' AND assigned_node IS NOT NULL;
