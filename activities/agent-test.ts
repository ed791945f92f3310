// Activities of the agent-test workflow (workflows/agent-test). `converse` places the run's call and plays the
// simulated caller (activities/simulated-caller.ts); `judgeRun` scores the transcript per criterion with Structured
// Outputs; `finishRun` is the run's one terminal write; `sendTestCompleted` claims and sends test.completed.
//
// The call goes through the public API, exactly as a client's: the run gets its own API key of the organization
// (named `agent-test:<runId>`, removed when the conversation ends and again by the workflow's last step), POSTs
// /call for the agent on the WebSocket transport — the same validation, provider checks, quota, wallet and
// concurrency gates and media-node steering as any call, a normal row in call history that post-call prices and
// debits — and joins the returned audioUrl. The row is tagged `agent_test` so reports can leave test calls out.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { policyFromConfig } from '../core/net/ssrf.ts';
import { createApiKey } from '../core/orgs.ts';
import { hasAdapter, missingCredentials } from '../core/providers.ts';
import { deliverWebhook, prepareWebhook, recordWebhookResult } from '../core/webhook.ts';
import { AGENT_TEST_TAG } from '../core/agent-tests/names.ts';
import { JUDGE_SYSTEM_PROMPT, JudgeAnswerError, judgeUserPrompt, matchVerdicts, VERDICTS_SCHEMA_NAME, verdictsSchema } from '../core/agent-tests/judge.ts';
import { LOCAL_CALLER_MODEL, TERMINAL_STATUSES, testCompletedPayload, type EndedBy, type LlmChoice, type RunRow, type TranscriptLine, type Verdict } from '../core/agent-tests/schemas.ts';
import { claimCompletedEvent, finishRun, loadRun, markRunning, setRunCall, setRunConversation, setRunTranscript, startAttempt, type RunOutcome } from '../core/agent-tests/store.ts';
import { createEngines, type EngineAgentConfig, type EngineFactories } from '../media/services/index.ts';
import { createLlm } from '../media/services/llm/factory.ts';
import type { LlmService } from '../media/services/types.ts';
import { webhookOf } from './post-call.ts';
import { ConversationError, runSimulatedCaller } from './simulated-caller.ts';

export interface AgentTestDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Engine factories for the simulated caller and the judge (tests, bench); default media/services. */
  engines?: Partial<EngineFactories>;
  /** Conversation timing (tests shorten the waits). */
  timing?: { openerWaitMs?: number; agentSilenceMs?: number; agentTurnEndMs?: number; slotWaitMs?: number };
}

const runKeyName = (runId: string) => `agent-test:${runId}`;
const TERMINAL = new Set<string>(TERMINAL_STATUSES);

function heartbeat(details?: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    /* not in an activity context (unit tests) */
  }
}

function cancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

const agentRow = z.object({
  uuid: z.string(),
  status: z.string(),
  config: z.record(z.string(), z.unknown()),
  webhook_secret: z.string().nullable(),
});

/** The public API base the simulated caller uses (AGENT_TEST_API_URL, else PUBLIC_URL), with /api/v1. */
function apiBase(config: Config): string {
  return `${(config.AGENT_TEST_API_URL ?? config.publicUrl).replace(/\/+$/, '')}/api/v1`;
}

/**
 * POST /call's audioUrl, reachable from this worker: a URL on the shared PUBLIC_URL is rewritten onto
 * AGENT_TEST_API_URL when that is set (the worker may not reach the public address); a media node's own address
 * (MEDIA_PUBLIC_URL) is kept.
 */
export function reachableAudioUrl(config: Config, audioUrl: string): string {
  if (!config.AGENT_TEST_API_URL) return audioUrl;
  const u = new URL(audioUrl);
  const pub = new URL(config.publicUrl);
  if (u.host !== pub.host) return audioUrl;
  const target = new URL(config.AGENT_TEST_API_URL);
  u.protocol = target.protocol === 'https:' ? 'wss:' : 'ws:';
  u.host = target.host;
  return u.toString();
}

function detailText(body: unknown): string {
  const d = (body as { detail?: unknown } | null)?.detail;
  if (typeof d === 'string') return d;
  if (d && typeof d === 'object') {
    const o = d as Record<string, unknown>;
    const s = o.message ?? o.error_message ?? o.error;
    if (typeof s === 'string') return s;
  }
  return JSON.stringify(d ?? body).slice(0, 500);
}

/** Why an engine cannot run on this install (no adapter, a credential unset), or null. */
function checkProvider(config: Config, family: 'llm' | 'stt' | 'tts', id: string): string | null {
  if (!hasAdapter(family, id)) return `${family} provider '${id}' is not implemented on this install`;
  const missing = missingCredentials(config, id);
  return missing.length ? `${family} provider '${id}' needs ${missing.join(' and ')}` : null;
}

/** The LLM a choice names: the agents' own adapter (media/services/llm/factory.ts), or a test's override. */
export function buildLlm(config: Config, choice: LlmChoice, overrides?: Partial<EngineFactories>): LlmService {
  const override = overrides?.llm?.[choice.provider];
  if (override) return override({ config, agent: { llm: { provider: choice.provider, model: choice.model }, stt: { provider: 'local', model: null }, tts: { provider: 'local', model: null, voice: null }, languages: ['en'] } });
  if (!hasAdapter('llm', choice.provider)) throw ApplicationFailure.nonRetryable(`llm provider '${choice.provider}' is not available on this install`, 'JudgeFailed');
  return createLlm(config, choice.provider, choice.model);
}

export function createAgentTestActivities(deps: AgentTestDeps) {
  const { config, db, logger } = deps;
  const policy = policyFromConfig(config);
  const timing = deps.timing ?? {};

  const mustLoad = async (runId: string): Promise<RunRow> => {
    const run = await loadRun(db, runId);
    if (!run) throw ApplicationFailure.nonRetryable(`test run ${runId} not found`, 'RunNotFound');
    return run;
  };

  const revokeKey = (run: Pick<RunRow, 'id' | 'organization_id'>) =>
    db.query(sql.unsafe`DELETE FROM api_keys WHERE organization_id = ${run.organization_id} AND name = ${runKeyName(run.id)}`);

  /** POST /call for the agent through the public API; waits for a slot while the concurrency gate says 429. */
  async function placeCall(run: RunRow, key: string, signal: AbortSignal | undefined): Promise<{ callId: string; audioUrl: string }> {
    const waitUntil = Date.now() + (timing.slotWaitMs ?? 10 * 60_000);
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${apiBase(config)}/call`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ agentId: run.agent_uuid, transport: 'websocket' }),
          ...(signal ? { signal } : {}),
        });
      } catch (err) {
        // the api cannot be reached right now: Temporal retries the activity
        throw ApplicationFailure.retryable(`the public API at ${apiBase(config)} could not be reached: ${(err as Error).message}`, 'ApiUnreachable');
      }
      const body: unknown = await res.json().catch(() => null);
      if (res.ok) {
        const b = body as { callId?: unknown; audioUrl?: unknown };
        if (typeof b?.callId !== 'string' || typeof b.audioUrl !== 'string') throw ApplicationFailure.retryable('POST /call answered without a callId and audioUrl', 'ApiUnreachable');
        return { callId: b.callId, audioUrl: b.audioUrl };
      }
      // the concurrency gate, the request rate, or every media node full: wait for room like a campaign does
      if ((res.status === 429 || res.status === 503) && Date.now() < waitUntil) {
        heartbeat({ waitingFor: 'a call slot', status: res.status });
        await new Promise((r) => setTimeout(r, Math.min(15_000, 1000 * 2 ** Math.min(attempt, 4))));
        continue;
      }
      if (res.status >= 500 && res.status !== 503) throw ApplicationFailure.retryable(`POST /call failed: ${res.status} ${detailText(body)}`, 'ApiUnreachable');
      throw ApplicationFailure.nonRetryable(`the call was refused: ${res.status} ${detailText(body)}`, 'CallRefused');
    }
  }

  return {
    /** queued → running; what the workflow needs to go on (or that the run has ended already). */
    async startRun({ runId }: { runId: string }): Promise<{ ended: boolean; status: string; callId: string | null; mode: string; maxDurationS: number }> {
      const run = await markRunning(db, runId);
      if (!run) throw ApplicationFailure.nonRetryable(`test run ${runId} not found`, 'RunNotFound');
      return { ended: TERMINAL.has(run.status), status: run.status, callId: run.call_id, mode: run.mode, maxDurationS: run.test_snapshot.maxDurationS };
    },

    /** One conversation on a real call: place it, play the simulated caller, store the transcript. */
    async converse({ runId }: { runId: string }): Promise<{ callId: string; endedBy: EndedBy; turns: number }> {
      const run = await mustLoad(runId);
      if (TERMINAL.has(run.status)) throw ApplicationFailure.nonRetryable(`test run ${runId} has ended already`, 'RunNotFound');
      const snap = run.test_snapshot;
      const agent = await db.maybeOne(sql.type(agentRow)`
        SELECT uuid::text AS uuid, status, config, webhook_secret FROM agents WHERE id = ${run.agent_id} AND organization_id = ${run.organization_id}`);
      if (!agent || agent.status !== 'active') throw ApplicationFailure.nonRetryable('the agent was archived or deleted', 'CallRefused');
      const ac = agent.config as { languages?: string[]; systemPrompt?: string; greeting?: { firstMessages?: string[]; speakFirst?: string; agentDelayS?: number } };

      // the caller's engines and the judge can run here before a call is placed (a call that cannot be played or
      // judged is not billed)
      const needed = run.mode === 'audio' ? (['llm', 'stt', 'tts'] as const) : (['llm'] as const);
      for (const family of needed) {
        const check = checkProvider(config, family, snap.caller[family].provider);
        if (check) throw ApplicationFailure.nonRetryable(`the simulated caller cannot run: ${check}`, 'CallerEngineFailed');
      }
      const judgeCheck = checkProvider(config, 'llm', snap.judge.provider);
      if (judgeCheck) throw ApplicationFailure.nonRetryable(`the judge cannot run: ${judgeCheck}`, 'JudgeFailed');
      const engineAgent: EngineAgentConfig = {
        llm: { provider: snap.caller.llm.provider, model: snap.caller.llm.model },
        stt: { provider: snap.caller.stt.provider, model: snap.caller.stt.model },
        tts: { provider: snap.caller.tts.provider, model: snap.caller.tts.model, voice: snap.caller.tts.voice },
        languages: ac.languages?.length ? ac.languages : ['en'],
        // the caller hears the agent: the agent's own words are the local recogniser's vocabulary
        ...(ac.systemPrompt ? { systemPrompt: ac.systemPrompt } : {}),
        ...(ac.greeting?.firstMessages ? { greeting: { firstMessages: ac.greeting.firstMessages } } : {}),
      };
      let engines;
      try {
        engines = run.mode === 'audio' ? createEngines(config, engineAgent, deps.engines) : { llm: buildLlm(config, snap.caller.llm, deps.engines) };
      } catch (err) {
        throw ApplicationFailure.nonRetryable(`the simulated caller cannot run: ${(err as Error).message}`, 'CallerEngineFailed');
      }

      // the in-process local model, loaded before the call (a first turn that waits for it would be a slow caller);
      // where it is not installed the local engine falls back to the demo responder, which cannot play a caller
      if (snap.caller.llm.provider === 'local' && snap.caller.llm.model === LOCAL_CALLER_MODEL) {
        heartbeat({ loading: snap.caller.llm.model });
        await engines.llm.prewarm?.();
        if (engines.llm.model !== LOCAL_CALLER_MODEL) {
          throw ApplicationFailure.nonRetryable(`the simulated caller cannot run: the local model ${LOCAL_CALLER_MODEL} is not installed (npm run setup:llm)`, 'CallerEngineFailed');
        }
      }

      const attempt = await startAttempt(db, runId);
      const signal = cancellation();
      await revokeKey(run);
      const { key } = await createApiKey(db, run.organization_id, runKeyName(runId));
      try {
        const call = await placeCall(run, key, signal);
        await db.query(sql.unsafe`
          UPDATE calls SET tags = CASE WHEN ${AGENT_TEST_TAG} = ANY(tags) THEN tags ELSE array_append(tags, ${AGENT_TEST_TAG}) END,
                 logs = jsonb_set(logs, '{agent_test}', ${sql.jsonb({ runId, testId: run.test_id, attempt, mode: run.mode })}),
                 updated_at = now()
          WHERE id = ${call.callId} AND organization_id = ${run.organization_id}`);
        await setRunCall(db, runId, call.callId);
        heartbeat({ attempt, callId: call.callId });

        // transcript writes in order, one at a time (the console shows the conversation as it goes)
        let saving: Promise<unknown> = Promise.resolve();
        const save = (lines: readonly TranscriptLine[]) => {
          const copy = [...lines];
          saving = saving.then(() => setRunTranscript(db, runId, copy)).catch((err: unknown) => logger.warn({ err, runId }, 'could not store the transcript so far'));
        };
        const speakFirst = ac.greeting?.speakFirst === 'user';
        try {
          const result = await runSimulatedCaller({
            audioUrl: reachableAudioUrl(config, call.audioUrl),
            apiKey: key,
            mode: run.mode,
            scenario: snap.scenario,
            maxTurns: snap.maxTurns,
            maxDurationMs: snap.maxDurationS * 1000,
            languages: engineAgent.languages,
            llm: engines.llm,
            ...('stt' in engines ? { stt: engines.stt, tts: engines.tts } : {}),
            openerWaitMs: timing.openerWaitMs ?? (speakFirst ? 1500 : 10_000 + (ac.greeting?.agentDelayS ?? 0) * 1000),
            agentSilenceMs: timing.agentSilenceMs ?? snap.answerTimeoutS * 1000,
            ...(timing.agentTurnEndMs ? { agentTurnEndMs: timing.agentTurnEndMs } : {}),
            onLine: (_line, all) => save(all),
            onTick: ({ turns }) => heartbeat({ attempt, callId: call.callId, turns }),
            ...(signal ? { signal } : {}),
          });
          await saving;
          await setRunConversation(db, runId, result.transcript, result.endedBy);
          return { callId: call.callId, endedBy: result.endedBy, turns: result.turns };
        } catch (err) {
          await saving;
          if (!(err instanceof ConversationError)) throw err;
          switch (err.kind) {
            case 'agent_silent':
              throw ApplicationFailure.nonRetryable(err.message, 'AgentDidNotAnswer');
            case 'caller_engine':
              if (err.retryable) throw ApplicationFailure.retryable(err.message, 'CallerEngineUnavailable');
              throw ApplicationFailure.nonRetryable(err.message, 'CallerEngineFailed');
            case 'connect':
              if (err.retryable) throw ApplicationFailure.retryable(err.message, 'CallUnreachable');
              throw ApplicationFailure.nonRetryable(err.message, 'CallRefused');
            case 'call_failed':
              throw ApplicationFailure.nonRetryable(err.message, 'CallRefused');
            default:
              throw err;
          }
        }
      } finally {
        await revokeKey(run).catch((err: unknown) => logger.warn({ err, runId }, 'could not remove the run API key: the workflow removes it'));
      }
    },

    /** The verdicts, one per criterion in order, from the judge's Structured Outputs answer. */
    async judgeRun({ runId }: { runId: string }): Promise<{ verdicts: Verdict[] }> {
      const run = await mustLoad(runId);
      const snap = run.test_snapshot;
      const llm = buildLlm(config, snap.judge, deps.engines);
      if (!llm.completeWithSchema) {
        throw ApplicationFailure.nonRetryable(`the judge's LLM (${snap.judge.provider} / ${snap.judge.model}) cannot answer with a schema: choose another judge model`, 'JudgeFailed');
      }
      const endedBy = (run.ended_by as EndedBy | null) ?? null;
      const signal = cancellation() ?? new AbortController().signal;
      /** One request for these criteria (indices into the test's): their verdicts, null where the answer gave none. */
      const ask = async (which: number[]): Promise<Array<Verdict | null>> => {
        const criteria = which.map((i) => snap.criteria[i]!);
        const answer = await llm.completeWithSchema!({
          messages: [
            { role: 'system', content: JUDGE_SYSTEM_PROMPT },
            { role: 'user', content: judgeUserPrompt({ scenario: snap.scenario, criteria, transcript: run.transcript, endedBy }) },
          ],
          schema: verdictsSchema(criteria),
          name: VERDICTS_SCHEMA_NAME,
          temperature: 0,
          maxTokens: 300 + 150 * criteria.length,
          signal,
        });
        if (answer.finishReason === 'refusal') throw ApplicationFailure.nonRetryable(`the judge refused: ${answer.text.slice(0, 300)}`, 'JudgeFailed');
        return matchVerdicts(answer.value, criteria);
      };
      heartbeat();
      const beat = setInterval(() => heartbeat(), 5000);
      try {
        // all criteria in one request; each criterion that answer left out is asked once more on its own (engines
        // that do not enforce the array's length: small local models)
        const verdicts = await ask(snap.criteria.map((_, i) => i));
        for (const i of verdicts.flatMap((v, k) => (v ? [] : [k]))) verdicts[i] = (await ask([i]))[0] ?? null;
        const missing = verdicts.findIndex((v) => !v);
        if (missing >= 0) throw new JudgeAnswerError(`the judge gave no verdict for criterion ${missing + 1} ("${snap.criteria[missing]!.slice(0, 80)}")`);
        return { verdicts: verdicts as Verdict[] };
      } catch (err) {
        if (err instanceof ApplicationFailure) throw err;
        // a malformed answer may come out right on another try; past the retries the run ends `error` with this
        if (err instanceof JudgeAnswerError) throw ApplicationFailure.retryable(err.message, 'JudgeAnswerInvalid');
        const e = (err as { engineError?: { retryable?: boolean; fatal?: boolean; message?: string } }).engineError;
        if (e && (e.fatal || !e.retryable)) throw ApplicationFailure.nonRetryable(`the judge's LLM failed: ${(err as Error).message}`, 'JudgeFailed');
        throw err;
      } finally {
        clearInterval(beat);
      }
    },

    /** The run's one terminal write (a repeated call changes nothing). */
    async finishRun(o: { runId: string } & RunOutcome): Promise<boolean> {
      const { runId, ...outcome } = o;
      return finishRun(db, runId, outcome);
    },

    /** The run's key for the public API is removed (also when its worker was lost mid-conversation). */
    async revokeRunKey({ runId }: { runId: string }): Promise<void> {
      const run = await loadRun(db, runId);
      if (run) await revokeKey(run);
    },

    /**
     * test.completed to the agent's webhook, at most once: the delivery is claimed on the run row (the request's
     * body is written only once the claim has committed, core/webhook.ts deliverWebhook).
     */
    async sendTestCompleted({ runId }: { runId: string }): Promise<{ outcome: 'sent' | 'failed' | 'no_webhook' | 'already_sent' }> {
      const run = await mustLoad(runId);
      if (run.completed_event_claimed_at !== null) return { outcome: 'already_sent' };
      const agent = await db.maybeOne(sql.type(agentRow)`
        SELECT uuid::text AS uuid, status, config, webhook_secret FROM agents WHERE id = ${run.agent_id} AND organization_id = ${run.organization_id}`);
      const webhook = agent ? webhookOf(agent.config) : null;
      const prepared = webhook ? await prepareWebhook({ url: webhook.url, headers: webhook.headers, secret: agent!.webhook_secret, payload: testCompletedPayload(run), policy, logger }, true) : null;
      let settle: (claimed: boolean) => void = () => {};
      const delivery = prepared ? deliverWebhook(prepared, new Promise<boolean>((r) => (settle = r))) : null;
      let claimed: boolean;
      try {
        claimed = await claimCompletedEvent(db, runId);
      } catch (err) {
        settle(false);
        await delivery;
        throw err;
      }
      settle(claimed);
      const result = await delivery;
      if (!claimed) return { outcome: 'already_sent' };
      if (!result) return { outcome: 'no_webhook' };
      if (run.call_id) await recordWebhookResult(db, run.call_id, 'test.completed', result).catch((err: unknown) => logger.warn({ err, runId }, 'could not record the test.completed delivery'));
      return { outcome: result.ok ? 'sent' : 'failed' };
    },
  };
}

export type AgentTestActivities = ReturnType<typeof createAgentTestActivities>;
