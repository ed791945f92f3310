-- Outbound dials: when the carrier request was sent (claimed just before it goes out). A dial retried after its
-- worker died between writing the row and sending the request (dial_started_at NULL, no carrier call id) is sent
-- then with the same row; one whose request may have left is never sent twice (core/telephony/outbound.ts).
ALTER TABLE calls ADD COLUMN dial_started_at timestamptz;
-- rows from before this column: their dial may have left, so they count as started
UPDATE calls SET dial_started_at = created_at WHERE dial_key IS NOT NULL;
