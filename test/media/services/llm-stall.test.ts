// A vendor LLM stream that stops sending mid-reply (no bytes, connection open) does not hold the turn forever: the
// request's timeout (connectTimeoutMs, 30 s by default, media/services/llm/openai.ts postJson) covers the whole
// response including its body, so the stream is cancelled with a retryable engine error, which the session reports
// as an error event while the call goes on (test/media/session/ws-call.test.ts: "a transient LLM error is reported as
// an error event and the call goes on"). The bound: 30 s from the request.
import test from 'ava';
import { OpenAiCompatLlm } from '../../../media/services/llm/openai.ts';
import type { LlmChunk } from '../../../media/services/types.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fakes/openai-sse.ts';
import { until } from '../../helpers/wait.ts';

let fake: FakeOpenAi;
test.before(async () => {
  fake = await startFakeOpenAi({ apiKey: 'sk-test' });
});
test.after.always(async () => {
  await fake?.close();
});

test('a stream stalled mid-reply ends in a retryable engine error after the stall bound; the connection is closed', async (t) => {
  fake.reply({ text: ['one ', 'two ', 'three'], stallAfter: 2 });
  const llm = new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: fake.url, apiKey: 'sk-test', connectTimeoutMs: 500 });
  const aborts = fake.clientAborts;
  const got: LlmChunk[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const c of llm.stream({ messages: [{ role: 'user', content: 'Hi' }], tools: [], temperature: 0.3, maxTokens: 50, signal: new AbortController().signal })) got.push(c);
  });
  // what came before the stall was delivered; the rest never came
  t.true(got.length >= 1 && got.length < 3, JSON.stringify(got));
  t.deepEqual(got, (['one ', 'two '] as const).slice(0, got.length).map((delta) => ({ type: 'text', delta })));
  t.like((err as { engineError?: unknown }).engineError, { retryable: true, fatal: false });
  t.regex(err!.message, /openai LLM stream broke: .*timeout/);
  await until(() => fake.clientAborts > aborts || null, { what: 'the client to close the stalled connection', timeoutMs: 10_000 });
  t.pass();
});
