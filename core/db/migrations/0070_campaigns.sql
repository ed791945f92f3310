-- Campaigns: bulk outbound calling from a CSV (spec "Campaign", "Campaigns"). The `campaign-<id>` Temporal workflow
-- drives dialing; these tables are the system of record for contacts, attempts, counters, state and logs.

CREATE TABLE campaigns (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  state text NOT NULL DEFAULT 'created' CHECK (state IN ('created', 'syncing', 'running', 'paused', 'completed', 'failed')),
  agent_id bigint NOT NULL REFERENCES agents (id),
  source_type text NOT NULL CHECK (source_type = 'csv'),
  source_id text NOT NULL,                                      -- as sent: a POST /files id or a storage key
  source_key text NOT NULL,                                     -- the storage key the CSV was read from
  telephony_configuration_id bigint NOT NULL,                   -- telephony_configs.id whose numbers are the caller IDs (no FK:
                                                                -- deleting a config leaves the campaign, whose dials then fail)
  total_rows integer,                                           -- null until the import ran
  processed_rows integer NOT NULL DEFAULT 0,
  failed_rows integer NOT NULL DEFAULT 0,
  max_concurrency integer NOT NULL CHECK (max_concurrency BETWEEN 1 AND 100),
  retry_config jsonb NOT NULL,
  schedule_config jsonb,                                        -- null: no schedule, dial at any time
  circuit_breaker jsonb NOT NULL,
  executed_count integer NOT NULL DEFAULT 0,                    -- contacts whose dialing is finished
  total_queued_count integer NOT NULL DEFAULT 0,                -- contacts queued for dialing
  logs jsonb NOT NULL DEFAULT '[]',                             -- [{ts, level, event, message, details}]
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  completed_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX campaigns_org_idx ON campaigns (organization_id, id DESC);

-- One row per CSV data row. status: queued (never dialed) → dialing → retry (waiting for next_attempt_at) → done.
CREATE TABLE campaign_contacts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  row_number integer NOT NULL,                                  -- 1 = first data row of the CSV
  phone_number text NOT NULL,                                   -- E.164
  context_variables jsonb NOT NULL DEFAULT '{}',                -- the row's other columns
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'dialing', 'retry', 'done')),
  attempts integer NOT NULL DEFAULT 0,
  last_call_id uuid,
  last_status text,                                             -- the last attempt's connectionStatus
  last_ended_reason text,
  last_duration_seconds numeric(12, 2),
  next_attempt_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (campaign_id, row_number)
);
CREATE INDEX campaign_contacts_queue_idx ON campaign_contacts (campaign_id, id) WHERE status = 'queued';
CREATE INDEX campaign_contacts_retry_idx ON campaign_contacts (campaign_id, next_attempt_at) WHERE status = 'retry';

-- One row per dial attempt (attempt 1 = first dial). The dial key `campaignId:contactId:attempt` is the business key
-- the dial activity hands to placeOutboundCall; the row records when the attempt was due and what came of it.
CREATE TABLE campaign_attempts (
  campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  contact_id bigint NOT NULL REFERENCES campaign_contacts (id) ON DELETE CASCADE,
  attempt integer NOT NULL CHECK (attempt >= 1),
  organization_id uuid NOT NULL,
  caller_id text,                                               -- the pool number reserved for this dial
  scheduled_at timestamptz NOT NULL,                            -- when the attempt became due
  retry_delay_seconds numeric(10, 3),                           -- the formula's delay that scheduled it (null for attempt 1)
  dialed_at timestamptz,
  call_id uuid,
  connection_status text,
  ended_reason text,
  duration_seconds numeric(12, 2),
  failure boolean,                                              -- counted as a failure by the circuit breaker
  ended_at timestamptz,
  PRIMARY KEY (campaign_id, contact_id, attempt)
);
CREATE INDEX campaign_attempts_call_idx ON campaign_attempts (call_id) WHERE call_id IS NOT NULL;
-- Caller IDs reserved by dials that have not created their call row yet (the pool check in activities/campaign.ts).
CREATE INDEX campaign_attempts_reserved_idx ON campaign_attempts (organization_id, caller_id) WHERE call_id IS NULL AND ended_at IS NULL;
