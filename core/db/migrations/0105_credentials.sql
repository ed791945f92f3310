-- Stored external credentials for saved HTTP tools (definition.config.credential_uuid). The whole field set of a
-- credential (secret and non-secret fields) is sealed with AES-256-GCM like telephony configurations
-- (core/secrets.ts); responses show the non-secret fields and mask the secrets.
CREATE TABLE credentials (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),          -- public id (credential_uuid)
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  type text NOT NULL CHECK (type IN ('bearer_token', 'api_key', 'basic_auth', 'custom_header')),
  secret bytea NOT NULL,                                        -- AES-256-GCM of the credential's fields (JSON)
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);
CREATE INDEX credentials_org_idx ON credentials (organization_id, created_at DESC, id DESC);

-- Which saved tools use a credential (DELETE /credentials/{uuid} refuses while any does).
CREATE INDEX tools_credential_idx ON tools (organization_id, ((definition -> 'config' ->> 'credential_uuid')))
  WHERE definition -> 'config' ->> 'credential_uuid' IS NOT NULL;

-- connectionStatus takes only the spec's values: a monthly-quota refusal is the spec's 402 insufficient_balance
-- variant (the quota message stays in logs.validation_error). Rows written before with the non-spec value follow.
UPDATE calls SET connection_status = 'insufficient_balance', updated_at = now() WHERE connection_status = 'quota_exceeded';

-- Transcripts take only the spec's roles (user, assistant, tool): keypresses an earlier version stored as
-- transcript entries {role: 'dtmf', digit, content, t_ms, timestamp} move to logs.dtmf [{digit, t_ms, timestamp}].
-- (Every SET expression reads the row as it was, so both see the old transcript.)
UPDATE calls SET
  logs = logs || jsonb_build_object('dtmf', COALESCE(logs->'dtmf', '[]'::jsonb) || (
    SELECT jsonb_agg(jsonb_build_object('digit', e->>'digit', 't_ms', e->'t_ms', 'timestamp', e->>'timestamp') ORDER BY i)
    FROM jsonb_array_elements(transcript) WITH ORDINALITY AS x(e, i) WHERE e->>'role' = 'dtmf')),
  transcript = (SELECT COALESCE(jsonb_agg(e ORDER BY i), '[]'::jsonb)
    FROM jsonb_array_elements(transcript) WITH ORDINALITY AS x(e, i) WHERE e->>'role' IS DISTINCT FROM 'dtmf'),
  updated_at = now()
WHERE jsonb_typeof(transcript) = 'array' AND transcript @> '[{"role": "dtmf"}]';
