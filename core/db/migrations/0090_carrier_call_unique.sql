-- One call per carrier call: a carrier that retries its inbound webhook (same CallSid / CallUUID / call_control_id /
-- uuid) must find the call it already admitted, never create a second row or take a second concurrency slot. The
-- unique index is the guarantee under parallel retries (the losing insert rolls back its gate transaction).
-- Rejected inbound attempts carry the carrier call id too, so a retried refusal is answered from its row.
-- Older duplicates (none are expected) keep their id in logs.duplicate_carrier_call_id; the first row keeps it.
WITH dup AS (
  SELECT id, carrier_call_id FROM (
    SELECT id, carrier_call_id, row_number() OVER (PARTITION BY telephony_provider, carrier_call_id ORDER BY created_at, id) AS n
    FROM calls WHERE carrier_call_id IS NOT NULL
  ) x WHERE n > 1
)
UPDATE calls c SET logs = c.logs || jsonb_build_object('duplicate_carrier_call_id', dup.carrier_call_id), carrier_call_id = NULL
FROM dup WHERE c.id = dup.id;

DROP INDEX IF EXISTS calls_carrier_call_idx;
CREATE UNIQUE INDEX calls_carrier_call_uniq ON calls (telephony_provider, carrier_call_id) WHERE carrier_call_id IS NOT NULL;
