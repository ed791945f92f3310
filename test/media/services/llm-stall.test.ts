// A vendor LLM stream that stops sending mid-reply (no bytes, connection open) does not hold the turn forever: after
// the stall bound (STREAM_STALL_MS, 30 s by default; the adapter's connectTimeoutMs when set) the stream is cancelled
// with a retryable engine error, which the session reports as an error event while the call goes on
// (test/media/session/ws-call.test.ts: "a transient LLM error is reported as an error event and the call goes on").
import test from 'ava';
import { OpenAiCompatLlm, STREAM_STALL_MS } from '../../../media/services/llm/openai.ts';
import type { LlmChunk } from '../../../media/services/types.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fakes/openai-sse.ts';
import { until } from '../../helpers/calls.ts';

let fake: FakeOpenAi;
test.before(async () => {
  fake = await startFakeOpenAi({ apiKey: 'sk-test' });
});
test.after.always(async () => {
  await fake?.close();
});

test('a stream stalled mid-reply ends in a retryable engine error after the stall bound; the connection is closed', async (t) => {
  t.is(STREAM_STALL_MS, 30_000);
  fake.reply({ text: ['one ', 'two ', 'three'], stallAfter: 2 });
  const llm = new OpenAiCompatLlm({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: fake.url, apiKey: 'sk-test', connectTimeoutMs: 500 });
  const aborts = fake.clientAborts;
  const got: LlmChunk[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const c of llm.stream({ messages: [{ role: 'user', content: 'Hi' }], tools: [], temperature: 0.3, maxTokens: 50, signal: new AbortController().signal })) got.push(c);
  });
  t.deepEqual(got, [{ type: 'text', delta: 'one ' }, { type: 'text', delta: 'two ' }]);
  t.like((err as { engineError?: unknown }).engineError, { retryable: true, fatal: false });
  t.regex(err!.message, /stalled: no data for 0.5 s/);
  await until(() => fake.clientAborts > aborts || null, 10_000, 'the client to close the stalled connection');
  t.pass();
});
