import test from 'ava';
import { loadConfig } from '../../../core/config.ts';
import { OpenAiCompatLlm } from '../../../media/services/llm/openai.ts';
import { DemoLlm, demoReply, createLocalLlm } from '../../../media/services/llm/local.ts';
import { createEngines, EngineUnavailableError } from '../../../media/services/index.ts';
import type { LlmChunk, LlmRequest, LlmService } from '../../../media/services/types.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fakes/openai-sse.ts';
import { until } from '../../helpers/wait.ts';

let fake: FakeOpenAi;
test.before(async () => {
  fake = await startFakeOpenAi({ apiKey: 'sk-test' });
});
test.after.always(async () => {
  await fake?.close();
});

const tools = [{ name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];

function req(over: Partial<LlmRequest> = {}): LlmRequest {
  return { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], tools: [], temperature: 0.3, maxTokens: 50, signal: new AbortController().signal, ...over };
}

async function collect(llm: LlmService, r: LlmRequest): Promise<LlmChunk[]> {
  const out: LlmChunk[] = [];
  for await (const c of llm.stream(r)) out.push(c);
  return out;
}

const openai = (over: Partial<ConstructorParameters<typeof OpenAiCompatLlm>[0]> = {}) =>
  new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: fake.url, apiKey: 'sk-test', ...over });

test.serial('openai: streams text deltas, then usage, then done; request has stream + include_usage + tools', async (t) => {
  fake.reply({ text: ['Hel', 'lo', ' there.'], usage: { prompt_tokens: 12, completion_tokens: 3, cached: 4 } });
  const n = fake.requests.length;
  const chunks = await collect(openai(), req({ tools }));
  t.deepEqual(chunks, [
    { type: 'text', delta: 'Hel' },
    { type: 'text', delta: 'lo' },
    { type: 'text', delta: ' there.' },
    { type: 'usage', usage: { promptTokens: 12, completionTokens: 3, cacheReadTokens: 4 } },
    { type: 'done', finishReason: 'stop' },
  ]);
  const sent = fake.requests[n]!;
  t.is(sent.path, '/v1/chat/completions');
  t.is(sent.headers.authorization, 'Bearer sk-test');
  t.is(sent.body.stream, true);
  t.deepEqual(sent.body.stream_options, { include_usage: true });
  t.is(sent.body.model, 'gpt-4o-mini');
  t.is(sent.body.max_tokens, 50);
  t.is(sent.body.temperature, 0.3);
  t.is(sent.body.tools[0].type, 'function');
  t.is(sent.body.tools[0].function.name, 'get_weather');
});

test.serial('openai: tool-call fragments are assembled into complete calls (two parallel calls, in index order)', async (t) => {
  fake.reply({
    text: ['Let me check.'],
    toolCalls: [
      { id: 'call_A', name: 'get_weather', argumentFragments: ['{"ci', 'ty": "Par', 'is"}'] },
      { id: 'call_B', name: 'get_weather', argumentFragments: ['{"city":', ' "Oslo"}'] },
    ],
    usage: { prompt_tokens: 20, completion_tokens: 9 },
  });
  const chunks = await collect(openai(), req({ tools }));
  const calls = chunks.filter((c) => c.type === 'tool_call');
  t.deepEqual(calls, [
    { type: 'tool_call', call: { id: 'call_A', name: 'get_weather', arguments: '{"city": "Paris"}' } },
    { type: 'tool_call', call: { id: 'call_B', name: 'get_weather', arguments: '{"city": "Oslo"}' } },
  ]);
  t.deepEqual(chunks.at(-1), { type: 'done', finishReason: 'tool_calls' });
  t.true(chunks.some((c) => c.type === 'usage'));
});

test.serial('openai: assistant tool calls and tool results go out in the wire format (no name on messages)', async (t) => {
  fake.reply({ text: ['Sunny.'] });
  const n = fake.requests.length;
  await collect(openai(), req({
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_A', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
      { role: 'tool', toolCallId: 'call_A', name: 'get_weather', content: '{"sky":"sunny"}' },
    ],
  }));
  const msgs = fake.requests[n]!.body.messages;
  t.deepEqual(msgs[1], { role: 'assistant', content: null, tool_calls: [{ id: 'call_A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
  t.deepEqual(msgs[2], { role: 'tool', tool_call_id: 'call_A', content: '{"sky":"sunny"}' });
  t.false(msgs.some((m: Record<string, unknown>) => 'name' in m));
});

test.serial('openai GPT-5: max_completion_tokens, no temperature, minimal reasoning; prewarm is one tiny request', async (t) => {
  fake.reply({ text: ['Hi.'] });
  const n = fake.requests.length;
  const llm = openai({ model: 'gpt-5-mini' });
  await collect(llm, req());
  const body = fake.requests[n]!.body;
  t.is(body.max_completion_tokens, 50);
  t.false('max_tokens' in body);
  t.false('temperature' in body);
  t.is(body.reasoning_effort, 'minimal');
  await llm.prewarm();
  t.is(fake.requests[n + 1]!.body.stream, false);
  t.is(fake.requests[n + 1]!.body.max_completion_tokens, 16);
});

test.serial('groq: usage under x_groq.usage is read', async (t) => {
  fake.reply({ text: ['Hi.'], usage: { prompt_tokens: 7, completion_tokens: 2 }, groqUsage: true });
  const groq = new OpenAiCompatLlm({ provider: 'groq', model: 'llama-3.3-70b-versatile', baseUrl: fake.url, apiKey: 'sk-test' });
  const chunks = await collect(groq, req());
  t.deepEqual(chunks.find((c) => c.type === 'usage'), { type: 'usage', usage: { promptTokens: 7, completionTokens: 2 } });
});

test.serial('errors: 401 is fatal, 429 and 500 retryable, with the vendor message', async (t) => {
  const bad = openai({ apiKey: 'sk-wrong' });
  const e401 = await t.throwsAsync(collect(bad, req()));
  t.deepEqual((e401 as any).engineError.fatal, true);
  t.deepEqual((e401 as any).engineError.retryable, false);
  t.regex((e401 as any).engineError.message, /401.*Incorrect API key/);

  fake.reply({ status: 429, errorMessage: 'Rate limit reached' });
  const e429 = await t.throwsAsync(collect(openai(), req()));
  t.like((e429 as any).engineError, { retryable: true, fatal: false });
  t.regex(e429!.message, /429.*Rate limit/);

  fake.reply({ status: 503, errorMessage: 'overloaded' });
  const e503 = await t.throwsAsync(collect(openai(), req()));
  t.like((e503 as any).engineError, { retryable: true, fatal: false });
});

test.serial('errors: connection refused is retryable; a stream cut before its end is an error', async (t) => {
  const down = new OpenAiCompatLlm({ provider: 'openai', model: 'm', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'x' });
  const e = await t.throwsAsync(collect(down, req()));
  t.like((e as any).engineError, { retryable: true, fatal: false });

  fake.reply({ text: ['a', 'b', 'c'], dropAfter: 2 });
  const cut = await t.throwsAsync(collect(openai(), req()));
  t.truthy((cut as any).engineError);
});

test.serial('abort: the stream stops at once and the connection is closed', async (t) => {
  fake.reply({ text: ['one ', 'two ', 'three'], stallAfter: 2 });
  const ac = new AbortController();
  const got: LlmChunk[] = [];
  const aborts = fake.clientAborts;
  for await (const c of openai().stream(req({ signal: ac.signal }))) {
    got.push(c);
    ac.abort();
  }
  t.deepEqual(got, [{ type: 'text', delta: 'one ' }]);
  await until(() => fake.clientAborts > aborts, { what: 'the client to abort its request', timeoutMs: 5000, everyMs: 10 });
  t.is(fake.clientAborts, aborts + 1);
});

test.serial('local LLM with LOCAL_LLM_BASE_URL talks to the OpenAI-compatible server with LOCAL_LLM_MODEL', async (t) => {
  const server = await startFakeOpenAi(); // no key, like Ollama
  try {
    server.reply({ text: ['from ', 'the server'] });
    const llm = createLocalLlm({ LOCAL_LLM_BASE_URL: server.url, LOCAL_LLM_MODEL: 'llama3.2' }, 'local-demo');
    const chunks = await collect(llm, req());
    t.is(chunks.filter((c) => c.type === 'text').map((c) => (c as { delta: string }).delta).join(''), 'from the server');
    t.is(server.requests[0]!.body.model, 'llama3.2');
    t.is(server.requests[0]!.headers.authorization, undefined);
  } finally {
    await server.close();
  }
});

test('demo responder: greets, answers arithmetic, ends the call on goodbye via the end-call tool', async (t) => {
  t.deepEqual(demoReply([{ role: 'system', content: 'x' }], []), { text: 'Hello! How can I help you today?' });
  t.deepEqual(demoReply([{ role: 'user', content: 'what is two plus 3?' }], []), { text: 'That makes 5.' });
  t.deepEqual(demoReply([{ role: 'user', content: 'Okay, goodbye!' }], ['end_call']), { toolCall: { name: 'end_call', arguments: '{}' } });
  t.deepEqual(demoReply([{ role: 'user', content: 'bye' }], []), { text: 'Goodbye! Thanks for calling.' });
  t.regex((demoReply([{ role: 'user', content: 'I need a plumber' }], []) as { text: string }).text, /I heard: "I need a plumber"/);

  const demo = new DemoLlm('local-demo');
  const chunks = await collect(demo, req({ messages: [{ role: 'user', content: 'hello there' }] }));
  const text = chunks.filter((c) => c.type === 'text').map((c) => (c as { delta: string }).delta);
  t.true(text.length > 3, 'streams word by word');
  t.is(text.join(''), 'Hello! How can I help you today?');
  t.deepEqual(chunks.at(-1), { type: 'done', finishReason: 'stop' });
  const endCall = await collect(demo, req({ messages: [{ role: 'user', content: 'that is all, bye' }], tools: [{ name: 'end_call', description: 'end', parameters: {} }] }));
  t.is(endCall[0]!.type, 'tool_call');
});

test('registry: local engines by default, unknown / adapter-less providers throw the install error, overrides win', (t) => {
  const config = loadConfig({});
  const agent = { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local', model: 'pocketsphinx' }, tts: { provider: 'local', model: 'espeak-ng', voice: null }, languages: ['en'] };
  const e = createEngines(config, agent);
  t.is(e.llm.provider, 'local');
  t.is(e.stt.provider, 'local');
  t.is(e.tts.provider, 'local');
  t.is(e.tts.voice, 'en-us');
  const err = t.throws(() => createEngines(config, { ...agent, stt: { provider: 'nosuch-stt', model: 'x' } }), { instanceOf: EngineUnavailableError });
  t.is(err!.message, "provider 'nosuch-stt' is not available on this install");
  t.throws(() => createEngines(config, { ...agent, tts: { provider: 'nosuch-tts', model: null, voice: null } }), { message: "provider 'nosuch-tts' is not available on this install" });
  // the vendor ids have adapters now
  t.is(createEngines(config, { ...agent, stt: { provider: 'soniox', model: 'stt-rt-v5' } }).stt.provider, 'soniox');
  t.is(createEngines(config, { ...agent, llm: { provider: 'anthropic', model: null } }).llm.model, 'claude-haiku-4-5');
  const fakeStt = { provider: 'soniox', model: 'x', hasTurnDetection: true, open: async () => { throw new Error('unused'); } };
  const withOverride = createEngines(config, { ...agent, stt: { provider: 'soniox', model: 'x' } }, { stt: { soniox: () => fakeStt } });
  t.is(withOverride.stt, fakeStt);
  const oa = createEngines(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }), { ...agent, llm: { provider: 'openai', model: 'gpt-4o' } });
  t.is(oa.llm.provider, 'openai');
  t.is(oa.llm.model, 'gpt-4o');
});
