-- Call history at a million rows: indexes for GET /calls filters and sorts, the rejected-row throttle and the
-- pending-call expiry sweep (bench/history.ts measures them). Every index leads with organization_id (each query
-- is scoped to one organization), except the expiry sweep's, which spans organizations.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Sorts (NULLS LAST in both directions; ties on id). 0002 has (organization_id, ended_at DESC NULLS LAST) and
-- (organization_id, created_at DESC); these add the id tie-break and the other directions/columns.
DROP INDEX IF EXISTS calls_org_ended_idx;
CREATE INDEX calls_org_ended_desc_idx ON calls (organization_id, ended_at DESC NULLS LAST, id DESC);
CREATE INDEX calls_org_ended_asc_idx ON calls (organization_id, ended_at ASC NULLS LAST, id ASC);
DROP INDEX IF EXISTS calls_org_created_idx;
CREATE INDEX calls_org_created_idx ON calls (organization_id, created_at DESC, id DESC);
CREATE INDEX calls_org_duration_idx ON calls (organization_id, duration_seconds DESC NULLS LAST, id DESC);
CREATE INDEX calls_org_cost_idx ON calls (organization_id, cost DESC NULLS LAST, id DESC);

-- Equality filters that narrow a lot.
CREATE INDEX calls_org_agent_idx ON calls (organization_id, agent_uuid, created_at DESC);
CREATE INDEX calls_org_campaign_idx ON calls (organization_id, campaign_id, created_at DESC) WHERE campaign_id IS NOT NULL;
CREATE INDEX calls_org_customer_number_idx ON calls (organization_id, customer_number) WHERE customer_number IS NOT NULL;
CREATE INDEX calls_org_platform_number_idx ON calls (organization_id, platform_number) WHERE platform_number IS NOT NULL;
CREATE INDEX calls_org_status_created_idx ON calls (organization_id, status, created_at DESC);

-- tag (array overlap) and agent_name (case-insensitive substring).
CREATE INDEX calls_tags_idx ON calls USING gin (tags);
CREATE INDEX calls_agent_name_trgm_idx ON calls USING gin (agent_name gin_trgm_ops);

-- Rejected-row throttle: "a row for this org + reason in the last minute?".
CREATE INDEX calls_rejected_idx ON calls (organization_id, connection_status, created_at DESC) WHERE 'rejected' = ANY (tags);

-- Expiry sweep across organizations.
CREATE INDEX calls_pending_created_idx ON calls (created_at) WHERE status = 'pending';
