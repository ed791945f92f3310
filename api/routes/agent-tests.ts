// Agent tests: scenarios per agent (create, list, get, PATCH, DELETE) and their runs (start, list, get). A run is
// the Temporal workflow `agentTest-<runId>` (workflows/agent-test): a simulated caller talks with the agent on a real
// call and a judge scores the transcript per criterion. Strict bodies (unknown fields are refused), the 422 array
// for validation failures, the pagination envelope, and organization scoping: another organization's agent, test
// or run is a 404.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { isUuid, loadAgent, type AgentConfig } from '../../core/agent-config/index.ts';
import {
  catalogIssues,
  createRunBody,
  createTestBody,
  DEFAULT_ANSWER_TIMEOUT_S,
  DEFAULT_MAX_DURATION_S,
  DEFAULT_MAX_TURNS,
  resolveCaller,
  resolveJudge,
  runView,
  testSnapshot,
  testView,
  updateTestBody,
  type CallerEngines,
  type LlmChoice,
} from '../../core/agent-tests/schemas.ts';
import {
  deleteTest,
  discardRun,
  getRun,
  getTest,
  insertRun,
  insertTest,
  listRuns,
  listTests,
  RUN_NOT_FOUND,
  TEST_NOT_FOUND,
  updateTest,
  type NewTest,
} from '../../core/agent-tests/store.ts';
import { checkQuotaAndWallet } from '../../core/calls/gates.ts';
import { HttpError } from '../../core/http-error.ts';
import { checkAgentProviders, hasAdapter, missingCredentials } from '../../core/providers.ts';
import { to422, type ValidationItem } from '../../core/validation.ts';
import { AGENT_TEST_WORKFLOW_TYPE, agentTestSearchAttributes, agentTestWorkflowId } from '../../workflows/agent-test/messages.ts';
import type { ApiDeps } from '../deps.ts';
import { requireOrg } from '../middleware/auth.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import { parseOr422 } from '../parse.ts';
import { AGENT_NOT_FOUND } from './agents.ts';

export const AGENT_TESTS_NEED_TEMPORAL = 'Agent tests are unavailable: Temporal is not configured';

const pageQuery = paginationQuery();

function catalogOr422(caller: CallerEngines, judge: LlmChoice | null): void {
  const items: ValidationItem[] = catalogIssues(caller, judge);
  if (items.length) throw new HttpError(422, to422(items));
}

/** 501 (no adapter) or 400 (a vendor key unset) when one of these engines cannot run on this install. */
function checkRunnable(config: object, who: string, engines: Array<{ family: 'llm' | 'stt' | 'tts'; provider: string }>): void {
  for (const { family, provider } of engines) {
    if (!hasAdapter(family, provider)) throw new HttpError(501, `${who}: ${family} provider '${provider}' is not implemented on this install`);
  }
  for (const { family, provider } of engines) {
    const missing = missingCredentials(config, provider);
    if (missing.length) throw new HttpError(400, `${who}: ${family} provider '${provider}' needs ${missing.join(' and ')}`);
  }
}

export function agentTestsRoutes(router: Router, deps: ApiDeps): void {
  const { db, config } = deps;

  const agentOf = async (ctx: ParameterizedContext, org: string) => {
    const uuid = ctx.params.agent_uuid;
    const agent = isUuid(uuid) ? await loadAgent(db, org, uuid.toLowerCase()) : null;
    if (!agent) throw new HttpError(404, AGENT_NOT_FOUND);
    return agent;
  };
  const testOf = async (ctx: ParameterizedContext, org: string, agentId: number, forUpdate = false, q: Parameters<typeof getTest>[0] = db) => {
    const id = ctx.params.test_id;
    const test = isUuid(id) ? await getTest(q, org, agentId, id.toLowerCase(), forUpdate) : null;
    if (!test) throw new HttpError(404, TEST_NOT_FOUND);
    return test;
  };

  router.post('/agents/:agent_uuid/tests', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    const body = parseOr422(createTestBody, ctx.request.body ?? {});
    const caller = resolveCaller(body.caller);
    const judge = resolveJudge(body.judge);
    catalogOr422(caller, judge);
    const row = await insertTest(db, org, agent.id, {
      name: body.name,
      scenario: body.scenario,
      criteria: body.criteria,
      maxTurns: body.maxTurns ?? DEFAULT_MAX_TURNS,
      maxDurationS: body.maxDurationS ?? DEFAULT_MAX_DURATION_S,
      answerTimeoutS: body.answerTimeoutS ?? DEFAULT_ANSWER_TIMEOUT_S,
      caller,
      judge,
    });
    ctx.status = 201;
    ctx.body = testView(row);
  });

  router.get('/agents/:agent_uuid/tests', async (ctx) => {
    const org = requireOrg(ctx);
    const q = parseOr422(pageQuery, ctx.query, 'query');
    const agent = await agentOf(ctx, org);
    const { rows, total } = await listTests(db, org, agent.id, pageWindow(q));
    ctx.body = envelope(rows.map(testView), total, q);
  });

  router.get('/agents/:agent_uuid/tests/:test_id', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    ctx.body = testView(await testOf(ctx, org, agent.id));
  });

  router.patch('/agents/:agent_uuid/tests/:test_id', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    const body = parseOr422(updateTestBody, ctx.request.body ?? {});
    const row = await db.transaction(async (trx) => {
      const current = await testOf(ctx, org, agent.id, true, trx);
      // fields replace; in `caller`, each engine given replaces that engine (its omitted model or voice is the default)
      const caller = resolveCaller({
        llm: body.caller?.llm ?? current.caller.llm,
        stt: body.caller?.stt ?? current.caller.stt,
        tts: body.caller?.tts ?? current.caller.tts,
      });
      const judge = body.judge === undefined ? current.judge : resolveJudge(body.judge);
      catalogOr422(caller, judge);
      const next: NewTest = {
        name: body.name ?? current.name,
        scenario: body.scenario ?? current.scenario,
        criteria: body.criteria ?? current.criteria,
        maxTurns: body.maxTurns ?? current.max_turns,
        maxDurationS: body.maxDurationS ?? current.max_duration_s,
        answerTimeoutS: body.answerTimeoutS ?? current.answer_timeout_s,
        caller,
        judge,
      };
      return updateTest(trx, current.id, next);
    });
    ctx.body = testView(row);
  });

  router.delete('/agents/:agent_uuid/tests/:test_id', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    const id = ctx.params.test_id;
    if (!isUuid(id) || !(await deleteTest(db, org, agent.id, id.toLowerCase()))) throw new HttpError(404, TEST_NOT_FOUND);
    ctx.status = 204;
  });

  // ── runs ──────────────────────────────────────────────────────────────────────────────────────────────
  router.post('/agents/:agent_uuid/tests/:test_id/runs', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    const test = await testOf(ctx, org, agent.id);
    const body = parseOr422(createRunBody, ctx.request.body ?? {});
    const mode = body.mode ?? 'audio';
    if (!deps.temporal) throw new HttpError(503, AGENT_TESTS_NEED_TEMPORAL);
    // refused now rather than minutes later in the run: the agent's engines (as POST /call checks them), the
    // caller's and the judge's, the quota and the wallet (the concurrency gate is POST /call's: the run waits for a slot)
    const runnable = checkAgentProviders(config, agent.config as AgentConfig);
    if (!runnable.ok) throw new HttpError(runnable.status, runnable.detail);
    const snapshot = testSnapshot(test);
    checkRunnable(config, 'the simulated caller', mode === 'audio'
      ? (['llm', 'stt', 'tts'] as const).map((family) => ({ family, provider: snapshot.caller[family].provider }))
      : [{ family: 'llm', provider: snapshot.caller.llm.provider }]);
    checkRunnable(config, 'the judge', [{ family: 'llm', provider: snapshot.judge.provider }]);
    const gate = await checkQuotaAndWallet(db, config, org);
    if (gate) throw new HttpError(gate.status, gate.detail);

    const run = await insertRun(db, { orgId: org, agentId: agent.id, testId: test.id, mode, snapshot });
    try {
      await deps.temporal.workflow.start(AGENT_TEST_WORKFLOW_TYPE, {
        workflowId: agentTestWorkflowId(run.id),
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ runId: run.id }],
        typedSearchAttributes: agentTestSearchAttributes({ organizationId: org, agentId: agent.uuid }),
      });
    } catch (err) {
      // nothing was started: the run is not kept (Temporal unreachable answers 503, api/middleware/errors.ts)
      await discardRun(db, run.id).catch((e: unknown) => ctx.state.log.warn({ err: e, runId: run.id }, 'could not discard the unstarted run'));
      throw err;
    }
    ctx.status = 202;
    ctx.body = runView(run);
  });

  router.get('/agents/:agent_uuid/tests/:test_id/runs', async (ctx) => {
    const org = requireOrg(ctx);
    const q = parseOr422(pageQuery, ctx.query, 'query');
    const agent = await agentOf(ctx, org);
    const test = await testOf(ctx, org, agent.id);
    const { rows, total } = await listRuns(db, org, test.id, pageWindow(q));
    ctx.body = envelope(rows.map(runView), total, q);
  });

  router.get('/agents/:agent_uuid/tests/:test_id/runs/:run_id', async (ctx) => {
    const org = requireOrg(ctx);
    const agent = await agentOf(ctx, org);
    const test = await testOf(ctx, org, agent.id);
    const id = ctx.params.run_id;
    const run = isUuid(id) ? await getRun(db, org, test.id, id.toLowerCase()) : null;
    if (!run) throw new HttpError(404, RUN_NOT_FOUND);
    ctx.body = runView(run);
  });
}
