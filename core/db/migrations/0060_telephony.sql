-- Telephony: carrier configurations (credentials encrypted at rest, core/telephony/crypto.ts), phone numbers,
-- API-first inbound bindings, and the carrier columns of phone-call rows.

CREATE TABLE telephony_configs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  provider text NOT NULL,
  credentials bytea NOT NULL,                                   -- AES-256-GCM of the credential JSON
  account_ref text,                                             -- non-secret account id (Twilio AccountSid)
  amd_enabled boolean NOT NULL DEFAULT false,
  is_default_outbound boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name)
);
CREATE UNIQUE INDEX telephony_configs_one_default_idx ON telephony_configs (organization_id) WHERE is_default_outbound;
CREATE INDEX telephony_configs_account_idx ON telephony_configs (provider, account_ref);

CREATE TABLE phone_numbers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  telephony_config_id bigint NOT NULL REFERENCES telephony_configs (id) ON DELETE CASCADE,
  address text NOT NULL,                                        -- as sent
  address_normalized text NOT NULL,                             -- E.164, or the SIP URI
  address_type text NOT NULL CHECK (address_type IN ('pstn', 'sip')),
  label text,
  inbound_agent_id bigint REFERENCES agents (id) ON DELETE SET NULL,
  inbound_assigned_at timestamptz,                              -- latest assignment wins across organizations
  is_active boolean NOT NULL DEFAULT true,
  is_default_caller_id boolean NOT NULL DEFAULT false,
  extra_metadata jsonb NOT NULL DEFAULT '{}',
  carrier_ref text,                                             -- carrier id of the number (Twilio PhoneNumberSid)
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, address_normalized)
);
CREATE INDEX phone_numbers_config_idx ON phone_numbers (telephony_config_id, id);
CREATE INDEX phone_numbers_address_idx ON phone_numbers (address_normalized);

CREATE TABLE inbound_bindings (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  provider text NOT NULL,
  address text NOT NULL,
  address_normalized text NOT NULL,
  agent_id bigint REFERENCES agents (id) ON DELETE SET NULL,
  agent_uuid uuid,
  agent_name text,
  agent_snapshot jsonb NOT NULL,                                -- resolved config, contextVariables baked in
  context_variables jsonb NOT NULL DEFAULT '{}',
  credentials bytea,                                            -- encrypted inline credentials (null: config's)
  account_ref text,
  telephony_config_id bigint REFERENCES telephony_configs (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, provider, address_normalized)
);
CREATE INDEX inbound_bindings_address_idx ON inbound_bindings (provider, address_normalized, updated_at DESC);

ALTER TABLE calls
  ADD COLUMN carrier_call_id text,                              -- Twilio CallSid / Smartflo stream callSid
  ADD COLUMN telephony_config_id bigint REFERENCES telephony_configs (id) ON DELETE SET NULL,
  ADD COLUMN inbound_binding_id bigint REFERENCES inbound_bindings (id) ON DELETE SET NULL,
  ADD COLUMN carrier_credentials bytea,                         -- encrypted inline credentials of this call
  ADD COLUMN dial_key text UNIQUE,                              -- business key: exactly-once dials
  ADD COLUMN answered_by text,                                  -- carrier AMD result (human, machine_start, ...)
  ADD COLUMN carrier_status text;                               -- last raw carrier status
CREATE INDEX calls_carrier_call_idx ON calls (telephony_provider, carrier_call_id) WHERE carrier_call_id IS NOT NULL;
