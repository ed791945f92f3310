// Agent tests: the request bodies (strict: unknown fields refused), the stored shapes with every default filled in,
// and the API's views of a test and of a run. Pure: shared by the api (routes/agent-tests.ts), the worker
// (activities/agent-test.ts) and the CLI (scripts/agent-test.ts).
import { z } from 'zod';
import { findModel, llmEntry, LLM_PROVIDERS, STT_PROVIDERS, sttEntry, TTS_PROVIDERS, ttsEntry, type Family } from '../catalog.ts';
import type { ValidationItem } from '../validation.ts';

/** The in-process Qwen model: the simulated caller's default (the `local` LLM's catalog default is the rule-based demo responder, which cannot play a persona). */
export const LOCAL_CALLER_MODEL = 'qwen2.5-coder-0.5b-instruct';
export const DEMO_MODEL = 'local-demo';
export const DEFAULT_MAX_TURNS = 6;
export const DEFAULT_MAX_DURATION_S = 300;
/** How long the agent may stay silent after the caller's turn before the run ends `error` (local engines on a busy machine answer slowly). */
export const DEFAULT_ANSWER_TIMEOUT_S = 60;

const modelId = z.string().min(1).max(200);
export const llmChoiceSchema = z.strictObject({ provider: z.enum(LLM_PROVIDERS), model: modelId.nullish() });
export const sttChoiceSchema = z.strictObject({ provider: z.enum(STT_PROVIDERS), model: modelId.nullish() });
export const ttsChoiceSchema = z.strictObject({ provider: z.enum(TTS_PROVIDERS), model: modelId.nullish(), voice: z.string().min(1).max(200).nullish() });
export const callerSchema = z.strictObject({ llm: llmChoiceSchema.optional(), stt: sttChoiceSchema.optional(), tts: ttsChoiceSchema.optional() });

const criteriaSchema = z.array(z.string().trim().min(1).max(500)).min(1).max(10);

export const createTestBody = z.strictObject({
  name: z.string().trim().min(1).max(120),
  scenario: z.string().trim().min(1).max(4000),
  criteria: criteriaSchema,
  maxTurns: z.number().int().min(1).max(20).optional(),
  maxDurationS: z.number().int().min(30).max(1800).optional(),
  answerTimeoutS: z.number().int().min(5).max(300).optional(),
  caller: callerSchema.optional(),
  /** The judge's LLM; null or absent: the caller's. */
  judge: llmChoiceSchema.nullish(),
});
export type CreateTestBody = z.infer<typeof createTestBody>;

export const updateTestBody = z.strictObject({
  name: createTestBody.shape.name.optional(),
  scenario: createTestBody.shape.scenario.optional(),
  criteria: criteriaSchema.optional(),
  maxTurns: createTestBody.shape.maxTurns,
  maxDurationS: createTestBody.shape.maxDurationS,
  answerTimeoutS: createTestBody.shape.answerTimeoutS,
  caller: callerSchema.optional(),
  judge: llmChoiceSchema.nullish(),
});
export type UpdateTestBody = z.infer<typeof updateTestBody>;

export const RUN_MODES = ['audio', 'text'] as const;
export type RunMode = (typeof RUN_MODES)[number];
export const createRunBody = z.strictObject({ mode: z.enum(RUN_MODES).optional() });

export const RUN_STATUSES = ['queued', 'running', 'passed', 'failed', 'error'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_STATUSES: readonly RunStatus[] = ['passed', 'failed', 'error'];

/** Engines with their defaults resolved: what is stored and shown. */
export interface LlmChoice { provider: string; model: string }
export interface CallerEngines {
  llm: LlmChoice;
  stt: { provider: string; model: string };
  tts: { provider: string; model: string; voice: string };
}

/** What a run needs of its test, frozen on the run row when it is queued (a later PATCH does not change a run). */
export interface TestSnapshot {
  name: string;
  scenario: string;
  criteria: string[];
  maxTurns: number;
  maxDurationS: number;
  answerTimeoutS: number;
  caller: CallerEngines;
  /** the judge's LLM (the caller's when the test names none) */
  judge: LlmChoice;
}

export interface TranscriptLine {
  role: 'agent' | 'caller';
  text: string;
  at: string;
}
export interface Verdict {
  criterion: string;
  passed: boolean;
  reason: string;
}
/** Why the conversation stopped. */
export type EndedBy = 'caller' | 'agent' | 'max_turns' | 'time_limit';

function defaultModel(family: Family, provider: string): string {
  if (family === 'llm') return provider === 'local' ? LOCAL_CALLER_MODEL : llmEntry(provider)!.defaultModel;
  return (family === 'stt' ? sttEntry(provider) : ttsEntry(provider))!.defaultModel;
}

/** The caller's engines with every default filled in (`local` for each family). */
type CallerInput = {
  llm?: { provider: string; model?: string | null | undefined };
  stt?: { provider: string; model?: string | null | undefined };
  tts?: { provider: string; model?: string | null | undefined; voice?: string | null | undefined };
};

export function resolveCaller(c: CallerInput | undefined): CallerEngines {
  const llm = c?.llm ?? { provider: 'local' };
  const stt = c?.stt ?? { provider: 'local' };
  const tts = c?.tts ?? { provider: 'local' };
  const ttsModel = tts.model ?? defaultModel('tts', tts.provider);
  return {
    llm: { provider: llm.provider, model: llm.model ?? defaultModel('llm', llm.provider) },
    stt: { provider: stt.provider, model: stt.model ?? defaultModel('stt', stt.provider) },
    tts: { provider: tts.provider, model: ttsModel, voice: tts.voice ?? ttsEntry(tts.provider)!.defaultVoice ?? 'default' },
  };
}

export function resolveJudge(j: { provider: string; model?: string | null | undefined } | null | undefined): LlmChoice | null {
  return j ? { provider: j.provider, model: j.model ?? defaultModel('llm', j.provider) } : null;
}

/**
 * Models and voices against the catalog (the agent's own rule: an off-catalog model is refused). Returns 422 items
 * located at the body path of the field.
 */
export function catalogIssues(caller: CallerEngines, judge: LlmChoice | null): ValidationItem[] {
  const items: ValidationItem[] = [];
  const model = (family: Family, provider: string, id: string, path: (string | number)[]) => {
    if (!findModel(family, provider, id)) items.push({ type: 'value_error', path, msg: `Model '${id}' is not available for ${family} provider '${provider}'. See GET /agents/models/available.`, input: id });
  };
  model('llm', caller.llm.provider, caller.llm.model, ['caller', 'llm', 'model']);
  // the rule-based demo responder neither follows a persona nor answers with a schema
  const demo = (c: LlmChoice, path: (string | number)[], role: string) => {
    if (c.provider === 'local' && c.model === DEMO_MODEL) items.push({ type: 'value_error', path, msg: `'${DEMO_MODEL}' is the rule-based demo responder and cannot ${role}: use '${LOCAL_CALLER_MODEL}' or a vendor model`, input: c.model });
  };
  demo(caller.llm, ['caller', 'llm', 'model'], judge ? 'play a caller' : 'play a caller or judge');
  model('stt', caller.stt.provider, caller.stt.model, ['caller', 'stt', 'model']);
  model('tts', caller.tts.provider, caller.tts.model, ['caller', 'tts', 'model']);
  const voices = ttsEntry(caller.tts.provider)?.voices;
  if (voices && !voices.includes(caller.tts.voice)) {
    items.push({ type: 'value_error', path: ['caller', 'tts', 'voice'], msg: `Voice '${caller.tts.voice}' is not available for tts provider '${caller.tts.provider}': one of ${voices.join(', ')}`, input: caller.tts.voice });
  }
  if (judge) {
    model('llm', judge.provider, judge.model, ['judge', 'model']);
    demo(judge, ['judge', 'model'], 'judge');
  }
  return items;
}

// ── rows and views ──────────────────────────────────────────────────────────────────────────────────────
export const testRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number(),
  agent_uuid: z.string(),
  name: z.string(),
  scenario: z.string(),
  criteria: z.array(z.string()),
  max_turns: z.number(),
  max_duration_s: z.number(),
  answer_timeout_s: z.number(),
  caller: z.custom<CallerEngines>((v) => v !== null && typeof v === 'object'),
  judge: z.custom<LlmChoice | null>((v) => v === null || typeof v === 'object'),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TestRow = z.infer<typeof testRow>;

export function testSnapshot(r: TestRow): TestSnapshot {
  return { name: r.name, scenario: r.scenario, criteria: r.criteria, maxTurns: r.max_turns, maxDurationS: r.max_duration_s, answerTimeoutS: r.answer_timeout_s, caller: r.caller, judge: r.judge ?? r.caller.llm };
}

export function testView(r: TestRow) {
  return {
    id: r.id,
    agentId: r.agent_uuid,
    name: r.name,
    scenario: r.scenario,
    criteria: r.criteria,
    maxTurns: r.max_turns,
    maxDurationS: r.max_duration_s,
    answerTimeoutS: r.answer_timeout_s,
    caller: r.caller,
    judge: r.judge ?? r.caller.llm,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export const runRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.number(),
  agent_uuid: z.string(),
  test_id: z.string(),
  mode: z.enum(RUN_MODES),
  status: z.enum(RUN_STATUSES),
  test_snapshot: z.custom<TestSnapshot>((v) => v !== null && typeof v === 'object'),
  call_id: z.string().nullable(),
  attempts: z.number(),
  transcript: z.array(z.custom<TranscriptLine>()),
  verdicts: z.array(z.custom<Verdict>()),
  ended_by: z.string().nullable(),
  error: z.string().nullable(),
  completed_event_claimed_at: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});
export type RunRow = z.infer<typeof runRow>;

export function runView(r: RunRow) {
  return {
    id: r.id,
    testId: r.test_id,
    agentId: r.agent_uuid,
    mode: r.mode,
    status: r.status,
    callId: r.call_id,
    transcript: r.transcript,
    verdicts: r.verdicts,
    endedBy: r.ended_by,
    error: r.error,
    attempts: r.attempts,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
  };
}
export type RunView = ReturnType<typeof runView>;

/** The `test.completed` webhook payload. */
export function testCompletedPayload(r: RunRow) {
  return {
    event: 'test.completed' as const,
    runId: r.id,
    testId: r.test_id,
    testName: r.test_snapshot.name,
    agentId: r.agent_uuid,
    mode: r.mode,
    status: r.status,
    callId: r.call_id,
    verdicts: r.verdicts,
    transcript: r.transcript,
    endedBy: r.ended_by,
    error: r.error,
    startedAt: r.started_at,
    endedAt: r.ended_at,
  };
}
