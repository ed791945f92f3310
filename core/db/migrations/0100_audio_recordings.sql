-- Audio recordings (POST /recordings): uploaded messages that endCall / transferCall / function tools play in a
-- call. The audio is decoded once at upload and kept in storage as a 24 kHz mono s16 WAV (storage_key); archived
-- recordings stay playable by the agents and tools that already reference them, new references are refused.
CREATE TABLE audio_recordings (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL,
  format text NOT NULL CHECK (format IN ('wav', 'mp3', 'ogg', 'webm')),
  duration_seconds numeric(8, 2) NOT NULL,
  original_name text NOT NULL,
  original_bytes bigint NOT NULL,
  storage_key text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  created_at timestamptz NOT NULL DEFAULT now(),
  archived_at timestamptz
);
CREATE INDEX audio_recordings_org_idx ON audio_recordings (organization_id, status, created_at DESC);
