import test from 'ava';
import { AnthropicLlm, toAnthropic, CALL_CONNECTED } from '../../../media/services/llm/anthropic.ts';
import { GoogleLlm, toGemini } from '../../../media/services/llm/google.ts';
import type { ChatMessage, LlmChunk, LlmRequest, LlmService } from '../../../media/services/types.ts';
import { startFakeAnthropic, startFakeGemini, type FakeVendor } from '../../fakes/llm-vendors-sse.ts';
import { until } from '../../helpers/wait.ts';

let anthropic: FakeVendor;
let gemini: FakeVendor;
test.before(async () => {
  [anthropic, gemini] = await Promise.all([startFakeAnthropic(), startFakeGemini()]);
});
test.after.always(async () => {
  await Promise.all([anthropic?.close(), gemini?.close()]);
});

const tools = [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object', additionalProperties: false, properties: { city: { type: 'string' } }, required: ['city'] } }];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'assistant', content: 'Hello! How can I help?' },
  { role: 'user', content: 'Weather in Paris and Oslo?' },
  { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'get_weather', arguments: '{"city":"Paris"}' }, { id: 't2', name: 'get_weather', arguments: 'not json' }] },
  { role: 'tool', toolCallId: 't1', name: 'get_weather', content: '{"sky":"sunny"}' },
  { role: 'tool', toolCallId: 't2', name: 'get_weather', content: 'rainy' },
];

function req(over: Partial<LlmRequest> = {}): LlmRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], temperature: 1.5, maxTokens: 100, signal: new AbortController().signal, ...over };
}
async function collect(llm: LlmService, r: LlmRequest): Promise<LlmChunk[]> {
  const out: LlmChunk[] = [];
  for await (const c of llm.stream(r)) out.push(c);
  return out;
}

test.serial('anthropic: message mapping (system, user first, merged tool results, tool_use input)', (t) => {
  const { system, messages } = toAnthropic(conversation);
  t.is(system, 'Be brief.');
  t.deepEqual(messages[0], { role: 'user', content: [{ type: 'text', text: CALL_CONNECTED }] });
  t.is(messages[1]!.role, 'assistant');
  t.deepEqual(messages[3]!.content, [
    { type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool_use', id: 't2', name: 'get_weather', input: {} },
  ]);
  t.deepEqual(messages[4], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '{"sky":"sunny"}' }, { type: 'tool_result', tool_use_id: 't2', content: 'rainy' }] });
});

test.serial('anthropic: streams text and assembled tool calls, usage with cache reads, headers and clamped temperature', async (t) => {
  anthropic.reply({ text: ['Let me ', 'check.'], toolCalls: [{ id: 'toolu_1', name: 'get_weather', argumentFragments: ['{"city"', ': "Paris"}'] }], usage: { input: 30, output: 12, cacheRead: 8 } });
  const llm = new AnthropicLlm({ model: 'claude-sonnet-4-5', baseUrl: anthropic.url, apiKey: 'ak' });
  const n = anthropic.requests.length;
  const chunks = await collect(llm, req({ tools, messages: conversation }));
  t.deepEqual(chunks, [
    { type: 'text', delta: 'Let me ' },
    { type: 'text', delta: 'check.' },
    { type: 'tool_call', call: { id: 'toolu_1', name: 'get_weather', arguments: '{"city": "Paris"}' } },
    { type: 'usage', usage: { promptTokens: 38, completionTokens: 12, cacheReadTokens: 8 } },
    { type: 'done', finishReason: 'tool_calls' },
  ]);
  const sent = anthropic.requests[n]!;
  t.is(sent.path, '/v1/messages');
  t.is(sent.headers['x-api-key'], 'ak');
  t.is(sent.headers['anthropic-version'], '2023-06-01');
  t.is(sent.body.temperature, 1);
  t.is(sent.body.stream, true);
  t.is(sent.body.system, 'Be brief.');
  t.deepEqual(sent.body.tools[0].input_schema.required, ['city']);
});

test.serial('anthropic: HTTP and in-stream errors are classified', async (t) => {
  const llm = new AnthropicLlm({ model: 'm', baseUrl: anthropic.url, apiKey: 'bad' });
  anthropic.reply({ status: 401, errorBody: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } });
  const e1 = await t.throwsAsync(collect(llm, req()));
  t.like((e1 as any).engineError, { fatal: true, retryable: false });
  t.regex(e1!.message, /invalid x-api-key/);
  anthropic.reply({ text: ['Hi'], streamError: { type: 'overloaded_error', message: 'Overloaded' } });
  const got: LlmChunk[] = [];
  const e2 = await t.throwsAsync(async () => {
    for await (const c of llm.stream(req())) got.push(c);
  });
  t.like((e2 as any).engineError, { retryable: true, fatal: false });
  t.deepEqual(got, [{ type: 'text', delta: 'Hi' }]);
});

test.serial('anthropic: abort closes the stream', async (t) => {
  anthropic.reply({ text: ['a', 'b', 'c'], stallAfter: 4 });
  const llm = new AnthropicLlm({ model: 'm', baseUrl: anthropic.url, apiKey: 'ak' });
  const ac = new AbortController();
  const before = anthropic.clientAborts;
  const got: LlmChunk[] = [];
  for await (const c of llm.stream(req({ signal: ac.signal }))) {
    got.push(c);
    ac.abort();
  }
  t.is(got.length, 1);
  await until(() => anthropic.clientAborts > before, { what: 'the client to abort its request', timeoutMs: 5000, everyMs: 10 });
  t.is(anthropic.clientAborts, before + 1);
});

test.serial('google: mapping (systemInstruction, model role, functionResponse objects, schema cleaned)', (t) => {
  const { system, contents } = toGemini(conversation);
  t.is(system, 'Be brief.');
  t.is(contents[0]!.role, 'model');
  t.deepEqual(contents[2]!.parts, [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: {} } }]);
  t.deepEqual(contents[3], { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'sunny' } } }, { functionResponse: { name: 'get_weather', response: { result: 'rainy' } } }] });
});

test.serial('google: streams text, function calls and usage; request shape', async (t) => {
  gemini.reply({ text: ['It is ', 'sunny.'], usage: { input: 21, output: 4 } });
  const llm = new GoogleLlm({ model: 'gemini-2.5-flash', baseUrl: gemini.url, apiKey: 'gk' });
  const n = gemini.requests.length;
  const chunks = await collect(llm, req({ tools, messages: conversation }));
  t.deepEqual(chunks, [
    { type: 'text', delta: 'It is ' },
    { type: 'text', delta: 'sunny.' },
    { type: 'usage', usage: { promptTokens: 21, completionTokens: 4 } },
    { type: 'done', finishReason: 'stop' },
  ]);
  const sent = gemini.requests[n]!;
  t.is(sent.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  t.is(sent.headers['x-goog-api-key'], 'gk');
  t.deepEqual(sent.body.systemInstruction, { parts: [{ text: 'Be brief.' }] });
  t.deepEqual(sent.body.generationConfig, { temperature: 1.5, maxOutputTokens: 100 });
  t.false('additionalProperties' in sent.body.tools[0].functionDeclarations[0].parameters);

  gemini.reply({ toolCalls: [{ id: 'x', name: 'get_weather', argumentFragments: ['{"city":"Oslo"}'] }] });
  const calls = await collect(llm, req({ tools }));
  t.deepEqual(calls[0], { type: 'tool_call', call: { id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' } });
  t.deepEqual(calls.at(-1), { type: 'done', finishReason: 'tool_calls' });
});

test.serial('google: an invalid key (400 API_KEY_INVALID) is fatal, 429 retryable', async (t) => {
  const llm = new GoogleLlm({ model: 'gemini-2.5-flash', baseUrl: gemini.url, apiKey: 'bad' });
  gemini.reply({ status: 400, errorBody: { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } } });
  const e1 = await t.throwsAsync(collect(llm, req()));
  t.like((e1 as any).engineError, { fatal: true });
  gemini.reply({ status: 429, errorBody: { error: { code: 429, message: 'Resource exhausted', status: 'RESOURCE_EXHAUSTED' } } });
  const e2 = await t.throwsAsync(collect(llm, req()));
  t.like((e2 as any).engineError, { retryable: true, fatal: false });
});
