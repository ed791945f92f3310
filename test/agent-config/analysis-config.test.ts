// AgentConfig `analysis`: the default (null) materialised, a good schema saved and returned as sent, bad and too
// deep schemas refused with a 400 invalid_agent_config naming the path under `analysis`, nothing persisted on a
// refusal, the analysis model checked against the catalog, and PATCH replacing a schema wholesale. Whatever the
// service accepts compiles in ajv (draft 2020-12), whatever it refuses is not a schema of the supported subset.
import test from 'ava';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { sql } from '../../core/db/pool.ts';
import { structuredSchemaProblems, MAX_SCHEMA_PROPERTIES } from '../../core/agent-config/analysis.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let s: TestServer;
let key: string;

type Body = Record<string, any>;
const base = (over: Body = {}): Body => ({ name: 'Agent', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'soniox' }, tts: { provider: 'elevenlabs' }, ...over });

const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    confirmed: { type: 'boolean', description: 'Did the patient confirm?' },
    day: { type: 'string', enum: ['monday', 'tuesday'] },
    callback: {
      type: 'object',
      properties: { wanted: { type: 'boolean' }, slots: { type: 'array', items: { type: 'string' } } },
      required: ['wanted'],
    },
  },
  required: ['confirmed'],
  additionalProperties: false,
};

test.before(async () => {
  s = await startTestServer({ temporal: false, env: { OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'ak' } });
  key = (await s.createOrg({ ratePerMinute: 1_000_000 })).apiKey;
});
test.after.always(async () => {
  await s?.close();
});

const create = (body: Body) => s.request('POST', '/agents', { key, body });
const details = (r: { body: any }) => r.body.detail.details as Array<{ loc: (string | number)[]; msg: string; type: string }>;

test('analysis defaults to null; a full block is materialised (prompts null, llm null = the agent’s own)', async (t) => {
  const plain = await create(base());
  t.is(plain.status, 201);
  t.is(plain.body.config.analysis, null);
  const r = await create(base({ analysis: { structuredData: { schema: SCHEMA }, successEvaluation: { rubric: 'pass_fail' } } }));
  t.is(r.status, 201, JSON.stringify(r.body));
  t.deepEqual(r.body.config.analysis, { structuredData: { schema: SCHEMA, prompt: null }, successEvaluation: { rubric: 'pass_fail', prompt: null }, llm: null });
  const got = await s.request('GET', `/agents/${r.body.uuid}`, { key });
  t.deepEqual(got.body.config.analysis, r.body.config.analysis);
  t.notThrows(() => new Ajv2020({ strict: true }).compile(got.body.config.analysis.structuredData.schema));
});

test('the analysis model: its default materialised, an unknown one refused as llm.model is', async (t) => {
  const r = await create(base({ analysis: { successEvaluation: { rubric: 'score_1_10', prompt: 'Did they book?' }, llm: { provider: 'anthropic' } } }));
  t.is(r.status, 201, JSON.stringify(r.body));
  t.is(r.body.config.analysis.llm.provider, 'anthropic');
  t.is(typeof r.body.config.analysis.llm.model, 'string');
  t.is(r.body.config.analysis.structuredData, null);
  const bad = await create(base({ analysis: { successEvaluation: { rubric: 'pass_fail' }, llm: { provider: 'openai', model: 'gpt-nonexistent' } } }));
  t.is(bad.status, 400);
  t.deepEqual(details(bad)[0]!.loc, ['analysis', 'llm', 'model']);
  t.regex(details(bad)[0]!.msg, /gpt-nonexistent/);
});

test('bad schemas: 400 invalid_agent_config naming the path under analysis; nothing is saved', async (t) => {
  const cases: Array<[unknown, (string | number)[], RegExp]> = [
    [{ type: 'array', items: { type: 'string' } }, ['type'], /must be of type 'object'/],
    [{ type: 'object', properties: { a: { type: 'date' } } }, ['properties', 'a', 'type'], /type must be one of/],
    [{ type: 'object', properties: { a: { type: 'string', pattern: '^x' } } }, ['properties', 'a', 'pattern'], /not allowed/],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] }, ['required', 0], /'b' is not defined/],
    [{ type: 'object', properties: { a: { type: 'integer', enum: ['x'] } } }, ['properties', 'a', 'enum', 0], /not of type 'integer'/],
    [{ type: 'object', properties: { a: { type: 'array' } } }, ['properties', 'a'], /needs 'items'/],
    [{ type: 'object', properties: { a: { description: 'no type' } } }, ['properties', 'a'], /'type' or an 'enum'/],
    [{ type: 'object', properties: { 'a b': { type: 'string' } } }, ['properties', 'a b'], /Property names/],
    [{ type: 'object', properties: { a: { type: 'string', properties: {} } } }, ['properties', 'a', 'properties'], /only allowed when type is 'object'/],
    [{ type: 'object', properties: {}, additionalProperties: true }, ['additionalProperties'], /only be false/],
    [{ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: {} }, ['$schema'], /2020-12/],
    [{ type: 'object', properties: Object.fromEntries(Array.from({ length: MAX_SCHEMA_PROPERTIES + 1 }, (_, i) => [`p${i}`, { type: 'string' }])) }, [], /At most 50 properties/],
  ];
  for (const [schema, path, msg] of cases) {
    const r = await create(base({ name: 'Refused', analysis: { structuredData: { schema } } }));
    t.is(r.status, 400, JSON.stringify(schema));
    t.is(r.body.detail.error, 'invalid_agent_config');
    const d = details(r);
    const hit = d.find((x) => JSON.stringify(x.loc) === JSON.stringify(['analysis', 'structuredData', 'schema', ...path]));
    t.truthy(hit, `${JSON.stringify(schema)} → ${JSON.stringify(d)}`);
    t.regex(hit?.msg ?? '', msg);
  }
  t.is(await s.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE name = 'Refused'`), 0);
});

test('too deep: objects and arrays nest at most 3 levels (root included); 3 is accepted', async (t) => {
  const three = { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } } } } } };
  t.is((await create(base({ analysis: { structuredData: { schema: three } } }))).status, 201);
  const four = { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'object', properties: { c: { type: 'object', properties: { d: { type: 'string' } } } } } } } } };
  const r = await create(base({ analysis: { structuredData: { schema: four } } }));
  t.is(r.status, 400);
  const hit = details(r).find((x) => JSON.stringify(x.loc) === JSON.stringify(['analysis', 'structuredData', 'schema', 'properties', 'a', 'properties', 'b', 'properties', 'c', 'type']));
  t.truthy(hit, JSON.stringify(details(r)));
  t.regex(hit!.msg, /at most 3 levels/);
});

test('unknown fields and bad rubrics are refused (strict like the rest)', async (t) => {
  const r1 = await create(base({ analysis: { structuredData: { schema: SCHEMA }, summaryPlan: {} } }));
  t.is(r1.status, 400);
  t.deepEqual(details(r1)[0]!.loc, ['analysis', 'summaryPlan']);
  const r2 = await create(base({ analysis: { successEvaluation: { rubric: 'stars' } } }));
  t.is(r2.status, 400);
  t.deepEqual(details(r2)[0]!.loc, ['analysis', 'successEvaluation', 'rubric']);
  const r3 = await create(base({ analysis: { structuredData: { schema: SCHEMA, prompt: 'x'.repeat(5001) } } }));
  t.is(r3.status, 400);
  t.deepEqual(details(r3)[0]!.loc, ['analysis', 'structuredData', 'prompt']);
});

test('PATCH replaces the schema wholesale and keeps the rest of the block', async (t) => {
  const r = await create(base({ analysis: { structuredData: { schema: SCHEMA, prompt: 'Be brief.' }, successEvaluation: { rubric: 'pass_fail' } } }));
  const next = { type: 'object', properties: { rating: { type: 'integer' } }, required: ['rating'] };
  const p = await s.request('PATCH', `/agents/${r.body.uuid}`, { key, body: { analysis: { structuredData: { schema: next } } } });
  t.is(p.status, 200, JSON.stringify(p.body));
  t.deepEqual(p.body.config.analysis.structuredData, { schema: next, prompt: 'Be brief.' });
  t.deepEqual(p.body.config.analysis.successEvaluation, { rubric: 'pass_fail', prompt: null });
  const bad = await s.request('PATCH', `/agents/${r.body.uuid}`, { key, body: { analysis: { structuredData: { schema: { type: 'object', properties: { x: { type: 'uuid' } } } } } } });
  t.is(bad.status, 400);
  const got = await s.request('GET', `/agents/${r.body.uuid}`, { key });
  t.deepEqual(got.body.config.analysis.structuredData.schema, next, 'a refused PATCH changes nothing');
  const off = await s.request('PATCH', `/agents/${r.body.uuid}`, { key, body: { analysis: null } });
  t.is(off.body.config.analysis, null);
});

test('every schema the checker accepts compiles in ajv; random refusals are refused by ajv or outside the subset', (t) => {
  const ajv = new Ajv2020({ strict: true });
  const accepted = [SCHEMA, { type: 'object', properties: {} }, { type: 'object', properties: { e: { enum: ['a', 1, true] } } }];
  for (const schema of accepted) {
    t.deepEqual(structuredSchemaProblems(schema), []);
    t.notThrows(() => ajv.compile(schema));
  }
  t.deepEqual(structuredSchemaProblems(null), [{ path: [], message: 'The schema must be a JSON Schema object' }]);
  t.true(structuredSchemaProblems({ type: 'object', properties: { a: { type: 'string', minLength: 'x' } } }).length > 0);
});
