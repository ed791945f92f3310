-- Domain tables: agents, saved tools, calls, documents. Later migrations add to these.

CREATE TABLE agents (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,           -- internal int id (campaign agent_id)
  uuid uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),          -- public id
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  config jsonb NOT NULL,                                        -- fully resolved AgentConfig
  webhook_secret text,                                          -- write-only HMAC key
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_org_idx ON agents (organization_id, status, created_at DESC);

CREATE TABLE tools (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  uuid uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  function_name text NOT NULL,                                  -- the name the LLM sees
  description text NOT NULL DEFAULT '',
  category text NOT NULL,
  icon text NOT NULL DEFAULT 'globe',
  icon_color text NOT NULL DEFAULT '#3B82F6',
  definition jsonb NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tools_org_idx ON tools (organization_id, status, category);

CREATE TABLE calls (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  agent_id bigint REFERENCES agents (id) ON DELETE SET NULL,
  agent_uuid uuid,
  agent_name text,                                              -- captured at creation
  transport text NOT NULL CHECK (transport IN ('outbound', 'inbound', 'webrtc', 'websocket', 'web')),
  pipeline_source text NOT NULL DEFAULT 'agent',
  status text NOT NULL CHECK (status IN ('pending', 'active', 'completed', 'error')),
  connection_status text,
  ended_reason text CHECK (ended_reason IN ('user_hangup', 'agent_hangup', 'silence_timeout', 'max_duration', 'voicemail',
                                            'transferred', 'pipeline_error', 'cancelled', 'unknown')),
  campaign_id bigint,
  platform_number text,
  customer_number text,
  telephony_provider text,
  call_source text NOT NULL DEFAULT 'unknown',
  tags text[] NOT NULL DEFAULT '{}',
  config_snapshot jsonb,
  context_variables jsonb NOT NULL DEFAULT '{}',
  logs jsonb NOT NULL DEFAULT '{}',
  telephony_sim boolean NOT NULL DEFAULT false,
  transcript jsonb,
  transcript_url text,
  recording_url text,
  usage jsonb,
  summary text,
  cost numeric(14, 6),
  duration_seconds numeric(12, 2),
  media_node text,                                              -- which media process holds the live call
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  ended_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calls_org_created_idx ON calls (organization_id, created_at DESC);
CREATE INDEX calls_org_ended_idx ON calls (organization_id, ended_at DESC NULLS LAST);
CREATE INDEX calls_live_idx ON calls (organization_id) WHERE status IN ('pending', 'active');

CREATE TABLE documents (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  original_name text NOT NULL,
  bytes bigint NOT NULL DEFAULT 0,
  mime_type text NOT NULL DEFAULT 'application/octet-stream',
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
  error text,
  retrieval_mode text NOT NULL DEFAULT 'chunked' CHECK (retrieval_mode IN ('chunked', 'full_document')),
  total_chunks integer NOT NULL DEFAULT 0,
  storage_key text NOT NULL,
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_org_idx ON documents (organization_id, created_at DESC) WHERE deleted_at IS NULL;

CREATE TABLE document_chunks (
  document_id uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
  chunk_index integer NOT NULL,
  organization_id uuid NOT NULL,
  content text NOT NULL,
  heading text,
  ts_config regconfig NOT NULL DEFAULT 'english',
  tsv tsvector NOT NULL,
  embedding real[],
  PRIMARY KEY (document_id, chunk_index)
);
CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (tsv);
CREATE INDEX document_chunks_org_idx ON document_chunks (organization_id, document_id);
