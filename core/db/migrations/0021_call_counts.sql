-- Exact totals for GET /calls without counting hundreds of thousands of rows per request.
--
-- 1. call_counts: per organization, the number of calls in each (transport, status, connection_status,
--    ended_reason, call_source) group, kept exact by statement-level triggers with transition tables (one grouped
--    upsert per INSERT/UPDATE/DELETE statement, in the same transaction as the change, rows locked in key order so
--    concurrent updates cannot deadlock). A total whose filters touch only these columns is a sum over a few
--    dozen counter rows. NULL connection_status / ended_reason are stored as ''.
-- 2. call_agent_names: the distinct captured agent names of each organization. The agent_name substring filter
--    first matches these few names, then counts/filters calls by equality on an index.
-- 3. call_counts_daily: the same per UTC day, for totals over date ranges (whole days summed, the two partial
--    boundary days counted on calls).
-- 4. calls_org_created_cover_idx: created_at order with the low-cardinality filter columns and tags included, so
--    counts over a date range (or with tag / enum filters) are index-only scans.

CREATE TABLE call_counts (
  organization_id uuid NOT NULL,
  transport text NOT NULL,
  status text NOT NULL,
  connection_status text NOT NULL,
  ended_reason text NOT NULL,
  call_source text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (organization_id, transport, status, connection_status, ended_reason, call_source)
);

-- The same groups per UTC day of created_at: totals over a date range add whole days from here and count only
-- the two partial boundary days on calls.
CREATE TABLE call_counts_daily (
  organization_id uuid NOT NULL,
  day date NOT NULL,
  transport text NOT NULL,
  status text NOT NULL,
  connection_status text NOT NULL,
  ended_reason text NOT NULL,
  call_source text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (organization_id, day, transport, status, connection_status, ended_reason, call_source)
);

CREATE TABLE call_agent_names (
  organization_id uuid NOT NULL,
  agent_name text NOT NULL,
  PRIMARY KEY (organization_id, agent_name)
);

-- Statement-level: one grouped delta per statement (-1 per old row, +1 per new row); groups netting to zero
-- (updates that change no grouped column) write nothing. Upserts go in key order, so concurrent statements
-- lock counter rows in the same order.
CREATE FUNCTION calls_aggregates_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH delta AS (
    SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date AS day, transport, status,
           COALESCE(connection_status, '') AS connection_status, COALESCE(ended_reason, '') AS ended_reason, call_source, 1 AS d
    FROM new_rows
  ), by_day AS (
    SELECT organization_id, day, transport, status, connection_status, ended_reason, call_source, sum(d) AS n
    FROM delta GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(d) <> 0
  ), total AS (
    INSERT INTO call_counts AS c (organization_id, transport, status, connection_status, ended_reason, call_source, n)
    SELECT organization_id, transport, status, connection_status, ended_reason, call_source, sum(n)
    FROM by_day GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (organization_id, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n
  )
  INSERT INTO call_counts_daily AS c (organization_id, day, transport, status, connection_status, ended_reason, call_source, n)
  SELECT * FROM by_day ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (organization_id, day, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n;
  INSERT INTO call_agent_names (organization_id, agent_name)
  SELECT DISTINCT organization_id, agent_name FROM new_rows WHERE agent_name IS NOT NULL ORDER BY 1, 2
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE FUNCTION calls_aggregates_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH delta AS (
    SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date AS day, transport, status,
           COALESCE(connection_status, '') AS connection_status, COALESCE(ended_reason, '') AS ended_reason, call_source, -1 AS d
    FROM old_rows
    UNION ALL
    SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date AS day, transport, status,
           COALESCE(connection_status, '') AS connection_status, COALESCE(ended_reason, '') AS ended_reason, call_source, 1 AS d
    FROM new_rows
  ), by_day AS (
    SELECT organization_id, day, transport, status, connection_status, ended_reason, call_source, sum(d) AS n
    FROM delta GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(d) <> 0
  ), total AS (
    INSERT INTO call_counts AS c (organization_id, transport, status, connection_status, ended_reason, call_source, n)
    SELECT organization_id, transport, status, connection_status, ended_reason, call_source, sum(n)
    FROM by_day GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (organization_id, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n
  )
  INSERT INTO call_counts_daily AS c (organization_id, day, transport, status, connection_status, ended_reason, call_source, n)
  SELECT * FROM by_day ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (organization_id, day, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n;
  INSERT INTO call_agent_names (organization_id, agent_name)
  SELECT DISTINCT organization_id, agent_name FROM new_rows WHERE agent_name IS NOT NULL ORDER BY 1, 2
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE FUNCTION calls_aggregates_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH delta AS (
    SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date AS day, transport, status,
           COALESCE(connection_status, '') AS connection_status, COALESCE(ended_reason, '') AS ended_reason, call_source, -1 AS d
    FROM old_rows
  ), by_day AS (
    SELECT organization_id, day, transport, status, connection_status, ended_reason, call_source, sum(d) AS n
    FROM delta GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(d) <> 0
  ), total AS (
    INSERT INTO call_counts AS c (organization_id, transport, status, connection_status, ended_reason, call_source, n)
    SELECT organization_id, transport, status, connection_status, ended_reason, call_source, sum(n)
    FROM by_day GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0 ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (organization_id, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n
  )
  INSERT INTO call_counts_daily AS c (organization_id, day, transport, status, connection_status, ended_reason, call_source, n)
  SELECT * FROM by_day ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (organization_id, day, transport, status, connection_status, ended_reason, call_source) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;

CREATE TRIGGER calls_aggregates_insert AFTER INSERT ON calls
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION calls_aggregates_on_insert();
CREATE TRIGGER calls_aggregates_update AFTER UPDATE ON calls
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION calls_aggregates_on_update();
CREATE TRIGGER calls_aggregates_delete AFTER DELETE ON calls
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION calls_aggregates_on_delete();

-- Rows that existed before this migration.
INSERT INTO call_counts (organization_id, transport, status, connection_status, ended_reason, call_source, n)
SELECT organization_id, transport, status, COALESCE(connection_status, ''), COALESCE(ended_reason, ''), call_source, count(*)
FROM calls GROUP BY 1, 2, 3, 4, 5, 6;
INSERT INTO call_counts_daily (organization_id, day, transport, status, connection_status, ended_reason, call_source, n)
SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date, transport, status, COALESCE(connection_status, ''), COALESCE(ended_reason, ''), call_source, count(*)
FROM calls GROUP BY 1, 2, 3, 4, 5, 6, 7;
INSERT INTO call_agent_names (organization_id, agent_name)
SELECT DISTINCT organization_id, agent_name FROM calls WHERE agent_name IS NOT NULL;

CREATE INDEX calls_org_agent_name_idx ON calls (organization_id, agent_name);
DROP INDEX IF EXISTS calls_org_status_created_idx;
CREATE INDEX calls_org_created_cover_idx ON calls (organization_id, created_at)
  INCLUDE (transport, status, connection_status, ended_reason, call_source, tags);

-- tag=rejected (the rejected attempts view): a partial index in created_at order covering the common filters.
-- It also serves the rejected-row throttle lookup (organization + last minute).
DROP INDEX IF EXISTS calls_rejected_idx;
CREATE INDEX calls_rejected_idx ON calls (organization_id, created_at DESC, id DESC)
  INCLUDE (transport, status, connection_status, ended_reason, call_source) WHERE 'rejected' = ANY (tags);
