// OpenAPI path items of agent tests and their runs (api/routes/agent-tests.ts). Request bodies come from the zod
// schemas the routes validate with.
import { z } from 'zod';
import { createRunBody, createTestBody, RUN_MODES, RUN_STATUSES, updateTestBody } from '../../core/agent-tests/schemas.ts';
import { registerOpenApiPaths } from './document.ts';

const json = (schema: z.ZodType) => {
  const s = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete s.$schema;
  return s;
};
const body = (schema: unknown, required = true) => ({ required, content: { 'application/json': { schema } } });
const ok = (schema: unknown, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => ({ description, content: { 'application/json': { schema: { type: 'object', properties: { detail: {} }, required: ['detail'] } } } });
const str = { type: 'string' };
const int = { type: 'integer' };
const uuid = { type: 'string', format: 'uuid' };
const ts = { type: 'string', format: 'date-time' };
const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
const tags = ['Agent tests'];
const agentParam = { name: 'agent_uuid', in: 'path', required: true, schema: uuid };
const testParam = { name: 'test_id', in: 'path', required: true, schema: uuid };
const runParam = { name: 'run_id', in: 'path', required: true, schema: uuid };
const page = [
  { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
  { name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
];
const pageOf = (item: object) => ({
  type: 'object',
  properties: { items: { type: 'array', items: item }, total: int, page: int, perPage: int, totalPages: int },
  required: ['items', 'total', 'page', 'perPage', 'totalPages'],
});
const llm = { type: 'object', properties: { provider: str, model: str }, required: ['provider', 'model'] };
const test = {
  type: 'object',
  properties: {
    id: uuid, agentId: uuid, name: str, scenario: str, criteria: { type: 'array', items: str },
    maxTurns: int, maxDurationS: int, answerTimeoutS: { ...int, description: 'The agent silent this long after the caller spoke: the run ends error' },
    caller: {
      type: 'object',
      description: "The simulated caller's engines, defaults filled in (local Qwen, Whisper and Piper)",
      properties: { llm, stt: { type: 'object', properties: { provider: str, model: str } }, tts: { type: 'object', properties: { provider: str, model: str, voice: str } } },
    },
    judge: { ...llm, description: "The judge's LLM (the caller's unless set)" },
    createdAt: ts, updatedAt: ts,
  },
  required: ['id', 'agentId', 'name', 'scenario', 'criteria', 'maxTurns', 'maxDurationS', 'answerTimeoutS', 'caller', 'judge', 'createdAt', 'updatedAt'],
};
const run = {
  type: 'object',
  properties: {
    id: uuid, testId: uuid, agentId: uuid, mode: { enum: [...RUN_MODES] }, status: { enum: [...RUN_STATUSES] },
    callId: nullable(uuid),
    transcript: { type: 'array', items: { type: 'object', properties: { role: { enum: ['agent', 'caller'] }, text: str, at: ts }, required: ['role', 'text', 'at'] } },
    verdicts: { type: 'array', items: { type: 'object', properties: { criterion: str, passed: { type: 'boolean' }, reason: str }, required: ['criterion', 'passed', 'reason'] } },
    endedBy: nullable({ enum: ['caller', 'agent', 'max_turns', 'time_limit'] }),
    error: nullable(str),
    attempts: { ...int, description: 'Conversations started (a worker lost mid-call starts another)' },
    createdAt: ts, startedAt: nullable(ts), endedAt: nullable(ts),
  },
  required: ['id', 'testId', 'agentId', 'mode', 'status', 'callId', 'transcript', 'verdicts', 'endedBy', 'error', 'attempts', 'createdAt', 'startedAt', 'endedAt'],
};
const notFound = err("'Agent not found', 'Test not found'");

registerOpenApiPaths({
  '/agents/{agent_uuid}/tests': {
    post: {
      tags, summary: 'Create a test: a scenario the simulated caller plays and the criteria the judge scores', parameters: [agentParam],
      requestBody: body(json(createTestBody)),
      responses: { 201: ok(test, 'Created'), 404: err("'Agent not found'"), 422: err('Validation failed (array), including an off-catalog model') },
    },
    get: { tags, summary: "The agent's tests, newest first", parameters: [agentParam, ...page], responses: { 200: ok(pageOf(test)), 404: err("'Agent not found'"), 422: err('Bad page parameters (array)') } },
  },
  '/agents/{agent_uuid}/tests/{test_id}': {
    get: { tags, summary: 'Get a test', parameters: [agentParam, testParam], responses: { 200: ok(test), 404: notFound } },
    patch: {
      tags, summary: 'Change a test (each field replaces; in caller, each engine given replaces that engine; judge: null is the caller\'s LLM)', parameters: [agentParam, testParam],
      requestBody: body(json(updateTestBody)),
      responses: { 200: ok(test), 404: notFound, 422: err('Validation failed (array)') },
    },
    delete: { tags, summary: 'Delete a test (its runs and their calls stay in call history)', parameters: [agentParam, testParam], responses: { 204: { description: 'Deleted' }, 404: notFound } },
  },
  '/agents/{agent_uuid}/tests/{test_id}/runs': {
    post: {
      tags, summary: 'Run the test: the workflow agentTest-<runId> places a real call, plays the caller and judges the transcript', parameters: [agentParam, testParam],
      requestBody: body(json(createRunBody), false),
      responses: {
        202: ok(run, 'Queued'), 400: err('An engine of the agent, the caller or the judge needs a credential that is not set'),
        402: err('Insufficient balance or monthly quota (the POST /call shapes)'), 403: err('Wallet refused'), 404: notFound, 422: err('Validation failed (array)'),
        501: err('An engine without an adapter on this install'), 503: err("'Agent tests are unavailable: Temporal is not configured', or Temporal unreachable (nothing changed: retry)"),
      },
    },
    get: { tags, summary: "The test's runs, newest first", parameters: [agentParam, testParam, ...page], responses: { 200: ok(pageOf(run)), 404: notFound, 422: err('Bad page parameters (array)') } },
  },
  '/agents/{agent_uuid}/tests/{test_id}/runs/{run_id}': {
    get: { tags, summary: 'Get a run: status, the call, the transcript as the caller heard it, one verdict per criterion', parameters: [agentParam, testParam, runParam], responses: { 200: ok(run), 404: err("'Agent not found', 'Test not found', 'Test run not found'") } },
  },
});
