-- Post-call analysis (AgentConfig `analysis`): the result on the call, and the two columns GET /calls filters on
-- (`analysis_status`, `success`), written together with it. Partial indexes: most calls have no analysis.
ALTER TABLE calls ADD COLUMN analysis jsonb;
ALTER TABLE calls ADD COLUMN analysis_status text;
ALTER TABLE calls ADD COLUMN analysis_success boolean;
CREATE INDEX calls_org_analysis_status_idx ON calls (organization_id, analysis_status, created_at DESC) WHERE analysis_status IS NOT NULL;
CREATE INDEX calls_org_analysis_success_idx ON calls (organization_id, analysis_success, created_at DESC) WHERE analysis_success IS NOT NULL;
