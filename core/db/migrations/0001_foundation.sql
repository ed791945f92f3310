-- Foundation: organizations, API keys, request-rate windows, wallet ledger.
CREATE EXTENSION IF NOT EXISTS pgcrypto;

CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  -- Current balance; every change also writes a wallet_transactions row.
  balance_usd numeric(14, 6) NOT NULL DEFAULT 0,
  -- NULL = use the install default (DEFAULT_CONCURRENCY / DEFAULT_RATE_PER_MINUTE).
  concurrency_limit integer CHECK (concurrency_limit >= 1),
  rate_per_minute integer CHECK (rate_per_minute >= 1),
  -- NULL = unlimited.
  monthly_minutes_quota integer CHECK (monthly_minutes_quota >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- NULL: a user-level key with no organization context ('No organization selected').
  organization_id uuid REFERENCES organizations (id) ON DELETE SET NULL,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  key_prefix text NOT NULL,
  -- sha256(key) hex; the key itself is never stored.
  key_hash text NOT NULL UNIQUE,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  archived_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_org_idx ON api_keys (organization_id, id);

-- Request-rate limit state shared by every api replica: one row per organization per minute window.
CREATE UNLOGGED TABLE rate_limit_windows (
  organization_id uuid NOT NULL,
  window_start timestamptz NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (organization_id, window_start)
);

CREATE TABLE wallet_transactions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  amount_usd numeric(14, 6) NOT NULL,
  kind text NOT NULL CHECK (kind IN ('credit', 'call_debit', 'adjustment')),
  call_id uuid,
  note text,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- A call is debited at most once, whatever retries or replays happen.
CREATE UNIQUE INDEX wallet_transactions_call_debit_once ON wallet_transactions (call_id) WHERE kind = 'call_debit';
CREATE INDEX wallet_transactions_org_idx ON wallet_transactions (organization_id, created_at);
