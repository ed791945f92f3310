// LlmService.completeWithSchema on every adapter: OpenAI-style Structured Outputs (checked against the official
// `openai` SDK: its zodResponseFormat envelope, and its chat.completions.parse() reading the same fake answer),
// Groq's strict flag, Anthropic's forced tool, Gemini's responseSchema, and the local model's JSON-schema grammar
// (node-llama-cpp, when the model is installed). Answers are checked with ajv (draft 2020-12).
import test from 'ava';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { OpenAiCompatLlm } from '../../../media/services/llm/openai.ts';
import { AnthropicLlm } from '../../../media/services/llm/anthropic.ts';
import { GoogleLlm } from '../../../media/services/llm/google.ts';
import { createLocalLlm, DEMO_CANNOT_STRUCTURE } from '../../../media/services/llm/local.ts';
import { LlamaLlm } from '../../../media/services/llm/llama.ts';
import { grammarSchema } from '../../../media/services/llm/llama-schema.ts';
import { dropNullOptionals, geminiResponseSchema, parseJsonAnswer, strictJsonSchema } from '../../../media/services/llm/schema.ts';
import { withLlmRetries } from '../../../media/services/llm/retry.ts';
import { modelInstalled } from '../../../media/services/model-files.ts';
import type { EngineError, LlmSchemaRequest } from '../../../media/services/types.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fakes/openai-sse.ts';
import { startFakeAnthropic, startFakeGemini, type FakeVendor } from '../../fakes/llm-vendors-sse.ts';

const ajv = new Ajv2020({ allErrors: true, strict: true });
const withQwen = (await modelInstalled('qwen2.5-coder-0.5b-instruct')) ? test.serial : test.skip;

/** The caller's schema: `day` and `notes` optional. */
const SCHEMA = {
  type: 'object',
  properties: {
    confirmed: { type: 'boolean', description: 'Did the caller confirm the appointment?' },
    day: { type: 'string', enum: ['monday', 'tuesday', 'wednesday'] },
    notes: { type: 'array', items: { type: 'string' } },
    visits: { type: 'integer' },
  },
  required: ['confirmed', 'visits'],
  additionalProperties: false,
};
/** The same shape written in zod the way OpenAI's SDK expects optional fields (nullable). */
const ZOD = z.object({
  confirmed: z.boolean().describe('Did the caller confirm the appointment?'),
  day: z.enum(['monday', 'tuesday', 'wednesday']).nullable(),
  notes: z.array(z.string()).nullable(),
  visits: z.number().int(),
});

const messages = [
  { role: 'system' as const, content: 'Extract the answers from the call.' },
  { role: 'user' as const, content: 'Caller: Yes, Tuesday works. It is my second visit.' },
];
const request = (over: Partial<LlmSchemaRequest> = {}): LlmSchemaRequest => ({
  messages, schema: SCHEMA, name: 'call_analysis', temperature: 0, maxTokens: 300, signal: new AbortController().signal, ...over,
});

let openai: FakeOpenAi;
/** an OpenAI-compatible local server (no key) */
let keyless: FakeOpenAi;
let anthropic: FakeVendor;
let gemini: FakeVendor;
test.before(async () => {
  [openai, keyless, anthropic, gemini] = await Promise.all([startFakeOpenAi({ apiKey: 'sk-test' }), startFakeOpenAi(), startFakeAnthropic(), startFakeGemini()]);
});
test.after.always(async () => {
  await Promise.all([openai?.close(), keyless?.close(), anthropic?.close(), gemini?.close()]);
});

test('strict form: every property required, optional ones nullable, no extra properties; nulls dropped again', (t) => {
  const strict = strictJsonSchema(SCHEMA);
  t.deepEqual(strict.required, ['confirmed', 'day', 'notes', 'visits']);
  t.is(strict.additionalProperties, false);
  t.deepEqual((strict.properties as any).day, { type: ['string', 'null'], enum: ['monday', 'tuesday', 'wednesday', null] });
  t.deepEqual((strict.properties as any).notes, { type: ['array', 'null'], items: { type: 'string' } });
  t.deepEqual((strict.properties as any).visits, { type: 'integer' });
  t.deepEqual(SCHEMA.required, ['confirmed', 'visits'], 'the input is not changed');
  t.true(ajv.validateSchema(strict) as boolean);
  t.deepEqual(dropNullOptionals({ confirmed: true, day: null, notes: null, visits: 2 }, SCHEMA), { confirmed: true, visits: 2 });
  t.deepEqual(dropNullOptionals({ confirmed: null, visits: 2 }, SCHEMA), { confirmed: null, visits: 2 }, 'a required null stays (and fails validation)');
  t.deepEqual(parseJsonAnswer('```json\n{"a":1}\n```'), { a: 1 });
  t.is(parseJsonAnswer('{"a":'), undefined);
});

test("strict form accepts exactly what the openai SDK's zodResponseFormat schema accepts", (t) => {
  const sdk = zodResponseFormat(ZOD, 'call_analysis');
  t.is(sdk.type, 'json_schema');
  t.true(sdk.json_schema.strict);
  const ours = ajv.compile(strictJsonSchema(SCHEMA));
  const { $schema: _draft07, ...sdkSchema } = sdk.json_schema.schema as Record<string, unknown>;
  const theirs = ajv.compile(sdkSchema);
  const answers = [
    { confirmed: true, day: 'tuesday', notes: ['second visit'], visits: 2 },
    { confirmed: false, day: null, notes: null, visits: 0 },
    { confirmed: true, day: 'friday', notes: null, visits: 1 },
    { confirmed: true, day: 'monday', notes: [], visits: 1.5 },
    { confirmed: true, visits: 1 },
    { confirmed: 'yes', day: null, notes: null, visits: 1 },
    { confirmed: true, day: null, notes: [3], visits: 1 },
    { confirmed: true, day: null, notes: null, visits: 1, extra: 1 },
  ];
  for (const a of answers) t.is(ours(a), theirs(a), JSON.stringify(a));
  t.deepEqual(answers.map((a) => ours(a)), [true, true, false, false, false, false, false, false]);
});

test.serial('openai: Structured Outputs request; the answer read as the official SDK reads it', async (t) => {
  const answer = { confirmed: true, day: 'tuesday', notes: null, visits: 2 };
  openai.reply({ json: answer, usage: { prompt_tokens: 120, completion_tokens: 18, cached: 64 } });
  const llm = new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: openai.url, apiKey: 'sk-test' });
  const n = openai.requests.length;
  const out = await llm.completeWithSchema(request());
  t.deepEqual(out.value, { confirmed: true, day: 'tuesday', visits: 2 });
  t.is(out.finishReason, 'stop');
  t.deepEqual(out.usage, { promptTokens: 120, completionTokens: 18, cacheReadTokens: 64 });
  t.true(ajv.validate(SCHEMA, out.value) as boolean);
  const sent = openai.requests[n]!;
  t.is(sent.path, '/v1/chat/completions');
  t.is(sent.headers.authorization, 'Bearer sk-test');
  t.like(sent.body, { model: 'gpt-4o-mini', stream: false, temperature: 0, max_tokens: 300 });
  t.deepEqual(sent.body.messages, messages);
  t.deepEqual(sent.body.response_format, { type: 'json_schema', json_schema: { name: 'call_analysis', schema: strictJsonSchema(SCHEMA), strict: true } });

  // The official client: same envelope keys, and its parser reads the fake's answer as ours does.
  const sdk = new OpenAI({ apiKey: 'sk-test', baseURL: openai.url, maxRetries: 0 });
  const format = zodResponseFormat(ZOD, 'call_analysis');
  t.deepEqual(Object.keys(sent.body.response_format).sort(), Object.keys(format).sort());
  t.deepEqual(Object.keys(sent.body.response_format.json_schema).sort(), Object.keys(format.json_schema).filter((k) => k !== 'description').sort());
  openai.reply({ json: answer });
  const parsed = await sdk.chat.completions.parse({ model: 'gpt-4o-mini', messages, response_format: format });
  const message = parsed.choices[0]!.message;
  t.deepEqual(message.parsed, answer);
  t.deepEqual(dropNullOptionals(message.parsed, SCHEMA), out.value);
  t.deepEqual(openai.requests.at(-1)!.body.response_format.json_schema.name, sent.body.response_format.json_schema.name);
});

test.serial('openai: a refusal, a cut-off answer and vendor errors', async (t) => {
  const llm = new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: openai.url, apiKey: 'sk-test' });
  openai.reply({ refusal: "I can't help with that." });
  const refused = await llm.completeWithSchema(request());
  t.deepEqual([refused.value, refused.text, refused.finishReason], [undefined, "I can't help with that.", 'refusal']);

  // The official client reports the same refusal on the same answer.
  openai.reply({ refusal: "I can't help with that." });
  const sdk = new OpenAI({ apiKey: 'sk-test', baseURL: openai.url, maxRetries: 0 });
  const viaSdk = await sdk.chat.completions.parse({ model: 'gpt-4o-mini', messages, response_format: zodResponseFormat(ZOD, 'call_analysis') });
  t.is(viaSdk.choices[0]!.message.refusal, refused.text);
  t.is(viaSdk.choices[0]!.message.parsed, null);

  openai.reply({ text: ['{"confirmed": tr'], finishReason: 'length' });
  const cut = await llm.completeWithSchema(request());
  t.deepEqual([cut.value, cut.finishReason], [undefined, 'length']);

  openai.reply({ status: 503, errorMessage: 'overloaded' });
  const busy = await t.throwsAsync(llm.completeWithSchema(request()));
  t.like((busy as { engineError?: EngineError }).engineError, { retryable: true, fatal: false });
  const badKey = new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: openai.url, apiKey: 'wrong' });
  const refusedKey = await t.throwsAsync(badKey.completeWithSchema(request()));
  t.like((refusedKey as { engineError?: EngineError }).engineError, { retryable: false, fatal: true });
});

test.serial('openai reasoning models get max_completion_tokens; groq sends strict only where Groq enforces it', async (t) => {
  openai.reply({ json: { confirmed: true, visits: 1 } }, { json: { confirmed: true, visits: 1 } }, { json: { confirmed: true, visits: 1 } });
  const n = openai.requests.length;
  await new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-5-mini', baseUrl: openai.url, apiKey: 'sk-test' }).completeWithSchema(request());
  await new OpenAiCompatLlm({ provider: 'groq', model: 'llama-3.3-70b-versatile', baseUrl: openai.url, apiKey: 'sk-test' }).completeWithSchema(request());
  await new OpenAiCompatLlm({ provider: 'groq', model: 'openai/gpt-oss-120b', baseUrl: openai.url, apiKey: 'sk-test' }).completeWithSchema(request());
  const [gpt5, llama, oss] = openai.requests.slice(n).map((r) => r.body);
  t.is(gpt5.max_completion_tokens, 300);
  t.is(gpt5.temperature, undefined);
  t.false(llama.response_format.json_schema.strict);
  t.true(oss.response_format.json_schema.strict);
});

test.serial('anthropic: one forced tool whose input_schema is the schema; the answer is its input', async (t) => {
  anthropic.reply({ toolCalls: [{ id: 'toolu_1', name: 'call_analysis', argumentFragments: ['{"confirmed": true, "day": "monday", "visits": 1}'] }], usage: { input: 200, output: 30, cacheRead: 50 } });
  const llm = new AnthropicLlm({ model: 'claude-haiku-4-5', baseUrl: anthropic.url, apiKey: 'ak' });
  const n = anthropic.requests.length;
  const out = await llm.completeWithSchema(request({ temperature: 1.6 }));
  t.deepEqual(out.value, { confirmed: true, day: 'monday', visits: 1 });
  t.deepEqual(out.usage, { promptTokens: 250, completionTokens: 30, cacheReadTokens: 50 });
  const sent = anthropic.requests[n]!;
  t.is(sent.path, '/v1/messages');
  t.is(sent.body.stream, undefined);
  t.is(sent.body.temperature, 1);
  t.is(sent.body.system, 'Extract the answers from the call.');
  t.deepEqual(sent.body.tool_choice, { type: 'tool', name: 'call_analysis' });
  t.deepEqual(sent.body.tools, [{ name: 'call_analysis', description: 'Record the answer in exactly this shape.', input_schema: SCHEMA }]);

  anthropic.reply({ text: ['I would rather not.'], stopReason: 'end_turn' });
  const noTool = await llm.completeWithSchema(request());
  t.deepEqual([noTool.value, noTool.text], [undefined, 'I would rather not.']);
  anthropic.reply({ status: 529, errorBody: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
  const err = await t.throwsAsync(llm.completeWithSchema(request()));
  t.like((err as { engineError?: EngineError }).engineError, { retryable: true });
});

test.serial('google: generateContent with responseMimeType application/json and the schema as responseSchema', async (t) => {
  gemini.reply({ text: ['{"confirmed": false, "visits": 3, "notes": ["call back"]}'], usage: { input: 90, output: 12 } });
  const llm = new GoogleLlm({ model: 'gemini-2.5-flash', baseUrl: gemini.url, apiKey: 'gk' });
  const n = gemini.requests.length;
  const out = await llm.completeWithSchema(request());
  t.deepEqual(out.value, { confirmed: false, visits: 3, notes: ['call back'] });
  t.deepEqual(out.usage, { promptTokens: 90, completionTokens: 12 });
  const sent = gemini.requests[n]!;
  t.is(sent.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  t.is(sent.headers['x-goog-api-key'], 'gk');
  t.like(sent.body.generationConfig, { temperature: 0, maxOutputTokens: 300, responseMimeType: 'application/json' });
  t.deepEqual(sent.body.generationConfig.responseSchema, geminiResponseSchema(SCHEMA));
  t.deepEqual(sent.body.generationConfig.responseSchema.propertyOrdering, ['confirmed', 'day', 'notes', 'visits']);
  t.is(sent.body.generationConfig.responseSchema.properties.day.type, 'STRING');
  t.is(sent.body.generationConfig.responseSchema.additionalProperties, undefined);
  t.deepEqual(sent.body.systemInstruction, { parts: [{ text: 'Extract the answers from the call.' }] });

  gemini.reply({ text: ['{"confirmed": tr'], stopReason: 'MAX_TOKENS' });
  const cut = await llm.completeWithSchema(request());
  t.deepEqual([cut.value, cut.finishReason], [undefined, 'length']);
});

test.serial('the retry wrapper passes completeWithSchema through; the demo responder refuses it as fatal', async (t) => {
  openai.reply({ json: { confirmed: true, visits: 4 } });
  const wrapped = withLlmRetries(new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: openai.url, apiKey: 'sk-test' }));
  t.deepEqual((await wrapped.completeWithSchema!(request())).value, { confirmed: true, visits: 4 });
  const demo = createLocalLlm({ LOCAL_LLM_BASE_URL: undefined, LOCAL_LLM_MODEL: undefined }, 'local-demo');
  t.is(demo.completeWithSchema, undefined);
  // qwen without its model file falls back to the demo responder, which cannot answer in a schema (this runs
  // before the test below loads the installed model: loading is once per process)
  const missing = createLocalLlm({ LOCAL_LLM_BASE_URL: undefined, LOCAL_LLM_MODEL: undefined }, 'qwen2.5-coder-0.5b-instruct', undefined, '/nonexistent-models-dir');
  const err = await t.throwsAsync(missing.completeWithSchema!(request()));
  t.is(err?.message, DEMO_CANNOT_STRUCTURE);
  t.like((err as { engineError?: EngineError }).engineError, { retryable: false, fatal: true });
  // an OpenAI-compatible local server (LOCAL_LLM_BASE_URL) gets Structured Outputs too
  keyless.reply({ json: { confirmed: false, visits: 0 } });
  const server = createLocalLlm({ LOCAL_LLM_BASE_URL: keyless.url, LOCAL_LLM_MODEL: 'llama3.2' }, 'llama3.2');
  t.deepEqual((await server.completeWithSchema!(request())).value, { confirmed: false, visits: 0 });
  t.is(keyless.requests.at(-1)!.body.model, 'llama3.2');
  t.true(keyless.requests.at(-1)!.body.response_format.json_schema.strict);
});

test('the local grammar schema: every property emitted, optional ones may be null, strings bounded', (t) => {
  t.deepEqual(grammarSchema(strictJsonSchema(SCHEMA)), {
    type: 'object',
    properties: {
      confirmed: { type: 'boolean', description: 'Did the caller confirm the appointment?' },
      day: { enum: ['monday', 'tuesday', 'wednesday', null] },
      notes: { oneOf: [{ type: 'array', items: { type: 'string', maxLength: 400 } }, { type: 'null' }] },
      visits: { type: 'integer' },
    },
  });
});

withQwen('local: the installed model answers under the JSON-schema grammar, and the answer validates', async (t) => {
  const llm = new LlamaLlm();
  const call = [
    { role: 'system' as const, content: 'You read a phone call transcript and fill in the requested fields. Answer with JSON only.' },
    {
      role: 'user' as const,
      content:
        'Transcript:\nAgent: Hello, this is Acme Dental. I am calling to confirm your cleaning appointment.\n' +
        'Caller: Yes, I can come. Tuesday is fine. This will be my second visit.\nAgent: Great, see you Tuesday.',
    },
  ];
  const out = await llm.completeWithSchema(request({ messages: call, maxTokens: 200 }));
  const validate = ajv.compile(SCHEMA);
  t.true(validate(out.value), `${out.text} ${JSON.stringify(validate.errors)}`);
  t.true(out.usage!.promptTokens > 20);
  t.true(out.usage!.completionTokens > 3);
  t.is(out.finishReason, 'stop');
});
