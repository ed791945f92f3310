-- Agent tests: scenarios per agent, played by a simulated caller as real calls and judged per criterion. A run is the
-- `agentTest-<runId>` Temporal workflow; these rows are its system of record (status, the conversation, verdicts).

CREATE TABLE agent_tests (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  agent_id bigint NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
  scenario text NOT NULL CHECK (length(scenario) BETWEEN 1 AND 4000),
  criteria jsonb NOT NULL,                                      -- string[] (1..10), judged in order
  max_turns integer NOT NULL CHECK (max_turns BETWEEN 1 AND 20),
  max_duration_s integer NOT NULL CHECK (max_duration_s BETWEEN 30 AND 1800),
  answer_timeout_s integer NOT NULL CHECK (answer_timeout_s BETWEEN 5 AND 300),  -- the agent silent this long after the caller: error
  caller jsonb NOT NULL,                                        -- {llm: {provider, model}, stt: {provider, model}, tts: {provider, voice}}
  judge jsonb,                                                  -- {provider, model}; null: the caller's LLM
  deleted_at timestamptz,                                       -- DELETE hides the test; its runs stay with their calls
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_tests_agent_idx ON agent_tests (organization_id, agent_id, created_at DESC) WHERE deleted_at IS NULL;

-- status: queued → running → passed | failed | error (each run reaches one of the last three exactly once).
CREATE TABLE agent_test_runs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  agent_id bigint NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  test_id uuid NOT NULL REFERENCES agent_tests (id) ON DELETE CASCADE,
  mode text NOT NULL CHECK (mode IN ('audio', 'text')),
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'passed', 'failed', 'error')),
  test_snapshot jsonb NOT NULL,                                 -- the test as it was when the run was queued
  call_id uuid REFERENCES calls (id) ON DELETE SET NULL,        -- the call of the latest attempt
  attempts integer NOT NULL DEFAULT 0,                          -- conversations started (a worker lost mid-call starts another)
  transcript jsonb NOT NULL DEFAULT '[]',                       -- [{role: agent|caller, text, at}]
  verdicts jsonb NOT NULL DEFAULT '[]',                         -- [{criterion, passed, reason}]
  ended_by text,                                                -- caller | agent | max_turns | time_limit
  error text,
  completed_event_claimed_at timestamptz,                       -- test.completed is sent at most once
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  ended_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_test_runs_test_idx ON agent_test_runs (organization_id, test_id, created_at DESC);
CREATE INDEX agent_test_runs_call_idx ON agent_test_runs (call_id) WHERE call_id IS NOT NULL;
