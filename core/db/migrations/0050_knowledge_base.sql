-- Knowledge base: per-document text-search configuration (language-aware FTS) and the vector fallback.

ALTER TABLE documents ADD COLUMN ts_config regconfig NOT NULL DEFAULT 'english';

-- Cosine similarity of two L2-normalised vectors = their dot product. Used for hybrid retrieval when an
-- embedding provider is configured and pgvector is not installed (embeddings are stored as real[]).
CREATE FUNCTION vas_dot(a real[], b real[]) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT sum(x::double precision * y::double precision) FROM unnest(a, b) AS t(x, y) $$;

-- GET /files filters by status inside an organization.
CREATE INDEX documents_org_status_idx ON documents (organization_id, status) WHERE deleted_at IS NULL;
