// Post-call analysis (AgentConfig `analysis`), an activity of the postCall workflow: the transcript goes to the
// analysis LLM (analysis.llm, else the agent's own) through the same adapters the live pipeline uses, as one
// completeWithSchema request whose schema holds the agent's structured-data schema and the rubric's verdict schema.
// Every answer is validated (ajv, core/agent-config/analysis.ts); one that does not validate is asked again once,
// with the validator's message, and then stored as failed with that message. Vendor outages throw (the workflow
// retries with backoff); refusals (key, model, an engine that cannot answer in a schema) are non-retryable, and
// the workflow then stores the reason with recordAnalysisFailure. The tokens of every request are added to the
// call's usage as an `llm` entry with `purpose: 'analysis'`, so the cost step prices them.
//
// Idempotent: a call whose analysis is already final is left as it is; the usage entry replaces any earlier one.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { analysisMessages, analysisOf, answerSchema, checkAnswer, retryMessage, successOf, type AnalysisConfig } from '../core/agent-config/analysis.ts';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { hasAdapter, missingCredentials } from '../core/providers.ts';
import type { TranscriptEntry } from '../core/summary.ts';
import { createLlm } from '../media/services/llm/factory.ts';
import { QWEN_MODEL } from '../media/services/llm/llama.ts';
import type { ChatMessage, EngineError, LlmService, LlmUsage } from '../media/services/types.ts';

export type AnalysisStatus = 'completed' | 'failed' | 'skipped';

/** What the call shows as `analysis` (GET /calls/{callId}, call.completed). */
export interface CallAnalysis {
  status: AnalysisStatus;
  structuredData: unknown;
  successEvaluation: unknown;
  /** Why it failed or was skipped; null when completed. */
  error: string | null;
  model: { provider: string; model: string } | null;
}

export interface AnalysisDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** The analysis LLM; default: the live pipeline's adapter for the provider (media/services/llm/factory.ts). */
  createLlm?: (config: Config, provider: string, model: string | null) => LlmService;
}

const analysisRow = z.object({
  id: z.string(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  duration_seconds: z.number().nullable(),
  transcript: z.unknown(),
  config_snapshot: z.unknown(),
  analysis: z.unknown(),
});

/** What one model of a provider may be sent: a small local model gets a shorter transcript and answer. */
function limitsFor(provider: string, model: string) {
  return provider === 'local' && model === QWEN_MODEL
    ? { transcriptChars: 12_000, agentPromptChars: 1500, maxTokens: 600 }
    : { transcriptChars: 24_000, agentPromptChars: 4000, maxTokens: 1500 };
}

function heartbeat(details?: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    /* not in an activity context (unit tests) */
  }
}

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

const isFinal = (a: unknown): a is CallAnalysis =>
  !!a && typeof a === 'object' && ['completed', 'failed', 'skipped'].includes((a as { status?: unknown }).status as string);

/** The analysis LLM of a snapshot: analysis.llm, else the agent's llm. */
function analysisTarget(snapshot: unknown, a: AnalysisConfig): { provider: string; model: string | null } {
  if (a.llm) return { provider: a.llm.provider, model: a.llm.model };
  const llm = (snapshot as { llm?: { provider?: unknown; model?: unknown } } | null)?.llm;
  return { provider: typeof llm?.provider === 'string' ? llm.provider : '', model: typeof llm?.model === 'string' ? llm.model : null };
}

function addUsage(total: LlmUsage | null, u: LlmUsage | null): LlmUsage | null {
  if (!u) return total;
  if (!total) return { ...u };
  return {
    promptTokens: total.promptTokens + u.promptTokens,
    completionTokens: total.completionTokens + u.completionTokens,
    ...((total.cacheReadTokens ?? 0) + (u.cacheReadTokens ?? 0) ? { cacheReadTokens: (total.cacheReadTokens ?? 0) + (u.cacheReadTokens ?? 0) } : {}),
    ...((total.cacheCreationTokens ?? 0) + (u.cacheCreationTokens ?? 0) ? { cacheCreationTokens: (total.cacheCreationTokens ?? 0) + (u.cacheCreationTokens ?? 0) } : {}),
  };
}

export function createAnalysisActivities(deps: AnalysisDeps) {
  const { config, db, logger } = deps;
  const makeLlm = deps.createLlm ?? createLlm;

  /** Writes the result, its filter columns and (when tokens were spent) the usage entry, in one transaction. */
  async function store(callId: string, result: CallAnalysis, usage: { provider: string; model: string; tokens: LlmUsage } | null): Promise<void> {
    await db.transaction(async (tx) => {
      const row = await tx.maybeOne(sql.type(z.object({ usage: z.unknown(), analysis: z.unknown() }))`
        SELECT usage, analysis FROM calls WHERE id = ${callId} FOR UPDATE`);
      if (!row || isFinal(row.analysis)) return;
      let nextUsage = row.usage ?? null;
      if (usage) {
        const u = (row.usage && typeof row.usage === 'object' ? row.usage : {}) as { llm?: unknown };
        const entries = (Array.isArray(u.llm) ? u.llm : u.llm ? [u.llm] : []).filter((e) => (e as { purpose?: unknown } | null)?.purpose !== 'analysis');
        const entry = {
          provider: usage.provider,
          model: usage.model,
          prompt_tokens: usage.tokens.promptTokens,
          completion_tokens: usage.tokens.completionTokens,
          ...(usage.tokens.cacheReadTokens ? { cache_read_tokens: usage.tokens.cacheReadTokens } : {}),
          ...(usage.tokens.cacheCreationTokens ? { cache_creation_tokens: usage.tokens.cacheCreationTokens } : {}),
          purpose: 'analysis',
        };
        nextUsage = { ...u, llm: [...entries, entry] };
      }
      await tx.query(sql.unsafe`
        UPDATE calls SET analysis = ${sql.jsonb(result as never)}, analysis_status = ${result.status},
               analysis_success = ${successOf(result.successEvaluation)}, usage = ${nextUsage === null ? null : sql.jsonb(nextUsage as never)},
               updated_at = now()
        WHERE id = ${callId}`);
    });
  }

  return {
    /**
     * Analyses the call when its agent asks for it (`status` null when it does not). Throws a retryable error on a
     * vendor outage, a non-retryable ApplicationFailure when the analysis cannot run (AnalysisUnavailable,
     * AnalysisRejected).
     */
    async analyzeCall({ callId }: { callId: string }): Promise<{ status: AnalysisStatus | null }> {
      const row = await db.maybeOne(sql.type(analysisRow)`
        SELECT id, status, connection_status, ended_reason, duration_seconds, transcript, config_snapshot, analysis
        FROM calls WHERE id = ${callId}`);
      if (!row) throw ApplicationFailure.nonRetryable(`call ${callId} not found`, 'CallNotFound');
      const a = analysisOf(row.config_snapshot);
      if (!a) return { status: null };
      if (isFinal(row.analysis)) return { status: row.analysis.status };
      const target = analysisTarget(row.config_snapshot, a);
      const transcript = (Array.isArray(row.transcript) ? row.transcript : []) as TranscriptEntry[];
      const spoken = transcript.some((e) => (e.role === 'user' || e.role === 'assistant') && e.content?.trim());
      if (!spoken) {
        const why = row.connection_status && row.connection_status !== 'completed' ? `the call never connected (${row.connection_status})` : 'nothing was said on the call';
        await store(callId, { status: 'skipped', structuredData: null, successEvaluation: null, error: why, model: null }, null);
        return { status: 'skipped' };
      }
      if (!hasAdapter('llm', target.provider)) throw ApplicationFailure.nonRetryable(`no LLM adapter for provider '${target.provider}'`, 'AnalysisUnavailable');
      const missing = missingCredentials(config, target.provider);
      if (missing.length) throw ApplicationFailure.nonRetryable(`analysis LLM '${target.provider}' is not configured: ${missing.join(', ')} is not set`, 'AnalysisUnavailable');
      const llm = makeLlm(config, target.provider, target.model);
      if (!llm.completeWithSchema) throw ApplicationFailure.nonRetryable(`the ${target.provider} LLM '${llm.model}' cannot answer in a JSON schema`, 'AnalysisUnavailable');

      const limits = limitsFor(target.provider, llm.model);
      const agentPrompt = (row.config_snapshot as { systemPrompt?: unknown } | null)?.systemPrompt;
      const prompt = analysisMessages(a, { transcript, durationSeconds: row.duration_seconds, endedReason: row.ended_reason, agentPrompt: typeof agentPrompt === 'string' ? agentPrompt : '' }, limits);
      const messages: ChatMessage[] = [{ role: 'system', content: prompt.system }, { role: 'user', content: prompt.user }];
      const schema = answerSchema(a);
      let tokens: LlmUsage | null = null;
      let model = llm.model;

      let lastText = '';
      const ask = async (): Promise<ReturnType<typeof checkAnswer>> => {
        const beat = setInterval(() => heartbeat('waiting for the analysis LLM'), 1000);
        const cancel = cancellationSignal();
        const timeout = AbortSignal.timeout(150_000);
        try {
          const answer = await llm.completeWithSchema!({
            messages, schema, name: 'call_analysis', temperature: 0, maxTokens: limits.maxTokens, signal: cancel ? AbortSignal.any([cancel, timeout]) : timeout,
          });
          tokens = addUsage(tokens, answer.usage);
          model = llm.model;
          lastText = answer.text;
          if (answer.finishReason === 'refusal') return { ok: false, error: `the model declined to answer: ${answer.text.slice(0, 300)}` };
          const checked = checkAnswer(a, answer.value);
          if (!checked.ok && answer.finishReason === 'length') return { ok: false, error: `the answer was cut off at ${limits.maxTokens} tokens (${checked.error})` };
          return checked;
        } catch (err) {
          const e = (err as { engineError?: EngineError }).engineError;
          if (e && (e.fatal || !e.retryable)) throw ApplicationFailure.nonRetryable(e.message, 'AnalysisRejected');
          throw err;
        } finally {
          clearInterval(beat);
        }
      };

      let checked = await ask();
      if (!checked.ok) {
        logger.info({ callId, error: checked.error }, 'analysis answer did not validate: asking once more');
        messages.push({ role: 'assistant', content: lastText.slice(0, 4000) || '(no answer)' }, { role: 'user', content: retryMessage(checked.error) });
        checked = await ask();
      }
      const used = tokens ? { provider: target.provider, model, tokens } : null;
      const result: CallAnalysis = checked.ok
        ? { status: 'completed', structuredData: checked.structuredData, successEvaluation: checked.successEvaluation, error: null, model: { provider: target.provider, model } }
        : { status: 'failed', structuredData: null, successEvaluation: null, error: checked.error, model: { provider: target.provider, model } };
      await store(callId, result, used);
      return { status: result.status };
    },

    /** A permanent failure of analyzeCall (after its retries): the reason is stored on the call as a failed analysis. */
    async recordAnalysisFailure({ callId, error }: { callId: string; error: string }): Promise<void> {
      const row = await db.maybeOne(sql.type(z.object({ config_snapshot: z.unknown() }))`SELECT config_snapshot FROM calls WHERE id = ${callId}`);
      const a = row ? analysisOf(row.config_snapshot) : null;
      if (!a) return;
      const target = analysisTarget(row!.config_snapshot, a);
      const model = target.provider ? { provider: target.provider, model: target.model ?? '' } : null;
      await store(callId, { status: 'failed', structuredData: null, successEvaluation: null, error: error.slice(0, 1000), model }, null);
    },
  };
}

export type AnalysisActivities = ReturnType<typeof createAnalysisActivities>;
