// Agent-test rows: tests (scenarios of one agent) and their runs. Shared by the api (routes/agent-tests.ts) and the
// worker (activities/agent-test.ts). Every tenant lookup filters by organization and agent; the worker's lookups
// are by run id (the workflow's business key). A run reaches a terminal status once: finishRun only moves a run
// that is not terminal yet, so a retried or re-run activity cannot end it twice.
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import {
  runRow,
  testRow,
  TERMINAL_STATUSES,
  type EndedBy,
  type LlmChoice,
  type RunMode,
  type RunRow,
  type RunStatus,
  type TestRow,
  type TestSnapshot,
  type TranscriptLine,
  type Verdict,
} from './schemas.ts';

type Queryable = Pick<Db, 'one' | 'maybeOne' | 'any' | 'oneFirst' | 'query'>;

export const TEST_NOT_FOUND = 'Test not found';
export const RUN_NOT_FOUND = 'Test run not found';

const TEST_SELECT = sql.fragment`
  SELECT t.id::text AS id, t.organization_id::text AS organization_id, t.agent_id, a.uuid::text AS agent_uuid, t.name,
         t.scenario, t.criteria, t.max_turns, t.max_duration_s, t.answer_timeout_s, t.caller, t.judge, t.created_at, t.updated_at
  FROM agent_tests t JOIN agents a ON a.id = t.agent_id`;

const RUN_SELECT = sql.fragment`
  SELECT r.id::text AS id, r.organization_id::text AS organization_id, r.agent_id, a.uuid::text AS agent_uuid,
         r.test_id::text AS test_id, r.mode, r.status, r.test_snapshot, r.call_id::text AS call_id, r.attempts,
         r.transcript, r.verdicts, r.ended_by, r.error, r.completed_event_claimed_at, r.created_at, r.started_at,
         r.ended_at
  FROM agent_test_runs r JOIN agents a ON a.id = r.agent_id`;

/** A test as created: a run's snapshot, with the judge left to the caller's LLM when null. */
export type NewTest = Omit<TestSnapshot, 'judge'> & { judge: LlmChoice | null };

export async function insertTest(db: Queryable, orgId: string, agentId: number, t: NewTest): Promise<TestRow> {
  const id = await db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO agent_tests (organization_id, agent_id, name, scenario, criteria, max_turns, max_duration_s, answer_timeout_s, caller, judge)
    VALUES (${orgId}, ${agentId}, ${t.name}, ${t.scenario}, ${sql.jsonb(t.criteria)}, ${t.maxTurns}, ${t.maxDurationS}, ${t.answerTimeoutS},
            ${sql.jsonb(t.caller as never)}, ${t.judge === null ? null : sql.jsonb(t.judge as never)})
    RETURNING id::text AS id`);
  return db.one(sql.type(testRow)`${TEST_SELECT} WHERE t.id = ${id}`);
}

export async function listTests(db: Queryable, orgId: string, agentId: number, window: { limit: number; offset: number }) {
  const where = sql.fragment`t.organization_id = ${orgId} AND t.agent_id = ${agentId} AND t.deleted_at IS NULL`;
  const [rows, total] = await Promise.all([
    db.any(sql.type(testRow)`${TEST_SELECT} WHERE ${where} ORDER BY t.created_at DESC, t.id DESC LIMIT ${window.limit} OFFSET ${window.offset}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM agent_tests t WHERE ${where}`),
  ]);
  return { rows, total };
}

export function getTest(db: Queryable, orgId: string, agentId: number, testId: string, forUpdate = false): Promise<TestRow | null> {
  return db.maybeOne(sql.type(testRow)`${TEST_SELECT}
    WHERE t.id = ${testId} AND t.organization_id = ${orgId} AND t.agent_id = ${agentId} AND t.deleted_at IS NULL
    ${forUpdate ? sql.fragment`FOR UPDATE OF t` : sql.fragment``}`);
}

export async function updateTest(db: Queryable, testId: string, t: NewTest): Promise<TestRow> {
  await db.query(sql.unsafe`
    UPDATE agent_tests SET name = ${t.name}, scenario = ${t.scenario}, criteria = ${sql.jsonb(t.criteria)},
           max_turns = ${t.maxTurns}, max_duration_s = ${t.maxDurationS}, answer_timeout_s = ${t.answerTimeoutS}, caller = ${sql.jsonb(t.caller as never)},
           judge = ${t.judge === null ? null : sql.jsonb(t.judge as never)}, updated_at = now()
    WHERE id = ${testId}`);
  return db.one(sql.type(testRow)`${TEST_SELECT} WHERE t.id = ${testId}`);
}

/** Hides the test (its runs and their calls stay). True when a live test was deleted. */
export async function deleteTest(db: Queryable, orgId: string, agentId: number, testId: string): Promise<boolean> {
  const r = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
    UPDATE agent_tests SET deleted_at = now(), updated_at = now()
    WHERE id = ${testId} AND organization_id = ${orgId} AND agent_id = ${agentId} AND deleted_at IS NULL
    RETURNING id::text AS id`);
  return r !== null;
}

// ── runs ────────────────────────────────────────────────────────────────────────────────────────────────
export async function insertRun(db: Queryable, r: { orgId: string; agentId: number; testId: string; mode: RunMode; snapshot: TestSnapshot }): Promise<RunRow> {
  const id = await db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO agent_test_runs (organization_id, agent_id, test_id, mode, test_snapshot)
    VALUES (${r.orgId}, ${r.agentId}, ${r.testId}, ${r.mode}, ${sql.jsonb(r.snapshot as never)})
    RETURNING id::text AS id`);
  return loadRun(db, id) as Promise<RunRow>;
}

/** Removes a run that never started (its workflow could not be started). */
export async function discardRun(db: Queryable, runId: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM agent_test_runs WHERE id = ${runId} AND status = 'queued' AND attempts = 0`);
}

export async function listRuns(db: Queryable, orgId: string, testId: string, window: { limit: number; offset: number }) {
  const where = sql.fragment`r.organization_id = ${orgId} AND r.test_id = ${testId}`;
  const [rows, total] = await Promise.all([
    db.any(sql.type(runRow)`${RUN_SELECT} WHERE ${where} ORDER BY r.created_at DESC, r.id DESC LIMIT ${window.limit} OFFSET ${window.offset}`),
    db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM agent_test_runs r WHERE ${where}`),
  ]);
  return { rows, total };
}

export function getRun(db: Queryable, orgId: string, testId: string, runId: string): Promise<RunRow | null> {
  return db.maybeOne(sql.type(runRow)`${RUN_SELECT} WHERE r.id = ${runId} AND r.organization_id = ${orgId} AND r.test_id = ${testId}`);
}

export function loadRun(db: Queryable, runId: string): Promise<RunRow | null> {
  return db.maybeOne(sql.type(runRow)`${RUN_SELECT} WHERE r.id = ${runId}`);
}

/** queued → running (idempotent); returns the row. */
export async function markRunning(db: Queryable, runId: string): Promise<RunRow | null> {
  await db.query(sql.unsafe`
    UPDATE agent_test_runs SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
    WHERE id = ${runId} AND status = 'queued'`);
  return loadRun(db, runId);
}

/** A conversation starts (again, after a lost worker): the attempt counter goes up and the transcript starts over. */
export async function startAttempt(db: Queryable, runId: string): Promise<number> {
  return db.oneFirst(sql.type(z.object({ attempts: z.number() }))`
    UPDATE agent_test_runs SET attempts = attempts + 1, transcript = '[]', call_id = NULL, ended_by = NULL, updated_at = now()
    WHERE id = ${runId} RETURNING attempts`);
}

export async function setRunCall(db: Queryable, runId: string, callId: string): Promise<void> {
  await db.query(sql.unsafe`UPDATE agent_test_runs SET call_id = ${callId}, updated_at = now() WHERE id = ${runId}`);
}

/** The conversation so far (the console shows it while the run is live). */
export async function setRunTranscript(db: Queryable, runId: string, transcript: TranscriptLine[]): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE agent_test_runs SET transcript = ${sql.jsonb(transcript as never)}, updated_at = now()
    WHERE id = ${runId} AND status NOT IN ('passed', 'failed', 'error')`);
}

/** The finished conversation: its transcript and how it ended (what the judge reads). */
export async function setRunConversation(db: Queryable, runId: string, transcript: TranscriptLine[], endedBy: EndedBy): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE agent_test_runs SET transcript = ${sql.jsonb(transcript as never)}, ended_by = ${endedBy}, updated_at = now()
    WHERE id = ${runId} AND status NOT IN ('passed', 'failed', 'error')`);
}

export interface RunOutcome {
  status: Extract<RunStatus, 'passed' | 'failed' | 'error'>;
  verdicts?: Verdict[];
  error?: string | null;
  endedBy?: EndedBy | null;
  transcript?: TranscriptLine[];
}

/** The run's one terminal write. True when this call ended it; false when it had ended already. */
export async function finishRun(db: Queryable, runId: string, o: RunOutcome): Promise<boolean> {
  const r = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
    UPDATE agent_test_runs
    SET status = ${o.status}, verdicts = ${sql.jsonb((o.verdicts ?? []) as never)}, error = ${o.error ?? null},
        ended_by = COALESCE(${o.endedBy ?? null}, ended_by),
        transcript = ${o.transcript ? sql.jsonb(o.transcript as never) : sql.fragment`transcript`},
        started_at = COALESCE(started_at, now()), ended_at = now(), updated_at = now()
    WHERE id = ${runId} AND status <> ALL(${sql.array([...TERMINAL_STATUSES], 'text')})
    RETURNING id::text AS id`);
  return r !== null;
}

/** Claims the run's test.completed delivery (at most once). True for the one claim that wins. */
export async function claimCompletedEvent(db: Queryable, runId: string): Promise<boolean> {
  const r = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
    UPDATE agent_test_runs SET completed_event_claimed_at = now(), updated_at = now()
    WHERE id = ${runId} AND completed_event_claimed_at IS NULL AND status <> ALL(${sql.array(['queued', 'running'], 'text')})
    RETURNING id::text AS id`);
  return r !== null;
}
