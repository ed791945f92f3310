-- Post-call processing and transfer recordings: exactly-once markers for the events sent by the worker.
ALTER TABLE calls
  ADD COLUMN completed_event_claimed_at timestamptz,   -- call.completed claimed (sent at most once)
  ADD COLUMN post_call_completed_at timestamptz,       -- postCall workflow finished (transfer-recording waits for it)
  ADD COLUMN transfer_recording jsonb,                 -- outcome of the transfer-recording workflow
  ADD COLUMN transfer_event_claimed_at timestamptz;    -- call.transfer_recording.* claimed (sent at most once)
