// A local fake of the OpenAI Chat Completions streaming API (POST /v1/chat/completions, SSE), speaking the wire
// format the real API uses: `data: {chunk}` records with choices[0].delta.content / delta.tool_calls (first
// fragment of a tool call carries index + id + type + function.name and empty arguments, later fragments only
// index + function.arguments), a chunk with finish_reason, a final chunk with choices: [] and usage when
// stream_options.include_usage is set, then `data: [DONE]`. Groq flavour: usage under x_groq.usage instead.
// Non-streaming requests (prewarm, Structured Outputs) get a `chat.completion` object: the reply's `json` as the
// message content (what a `response_format: json_schema` answer carries), or its text, or a `refusal`.
// Scriptable per request: queue replies with `fake.reply(...)`; every request is recorded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenFake, recordRequest, streamRecords, type RecordedRequest } from './http-fake.ts';

export type { RecordedRequest };

export interface FakeToolCall {
  id: string;
  name: string;
  /** the arguments JSON text, split into the fragments to stream */
  argumentFragments: string[];
}

export interface FakeReply {
  /** content deltas, streamed in order */
  text?: string[];
  /** non-streaming answers: this value as JSON text in message.content (Structured Outputs) */
  json?: unknown;
  /** non-streaming answers: message.refusal set and content null (the model declined the schema) */
  refusal?: string;
  toolCalls?: FakeToolCall[];
  finishReason?: string;
  usage?: { prompt_tokens: number; completion_tokens: number; cached?: number };
  /** put usage under x_groq.usage (Groq) instead of the top-level usage chunk */
  groqUsage?: boolean;
  /** answer with this HTTP status and an OpenAI-style error body instead of a stream */
  status?: number;
  errorMessage?: string;
  /** after this many records, stop writing and keep the connection open (to test abort) */
  stallAfter?: number;
  /** after this many records, destroy the connection (no [DONE]) */
  dropAfter?: number;
}

export interface FakeOpenAi {
  /** base URL including /v1, e.g. http://127.0.0.1:1234/v1 */
  url: string;
  requests: RecordedRequest[];
  reply(...r: FakeReply[]): void;
  /** number of streaming responses whose client went away before the end */
  clientAborts: number;
  /** while set, every chat-completions request gets this reply (an outage), before the queue is consulted */
  outage: FakeReply | null;
  close(): Promise<void>;
}

export async function startFakeOpenAi(opts: { defaultReply?: FakeReply; apiKey?: string } = {}): Promise<FakeOpenAi> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const state: { clientAborts: number; outage: FakeReply | null } = { clientAborts: 0, outage: null };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await recordRequest(req, requests);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
      return;
    }
    const r = state.outage ?? queue.shift() ?? opts.defaultReply ?? { text: ['Hello', '!'] };
    if (r.status && r.status >= 400) {
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: r.errorMessage ?? 'error', type: 'server_error' } }));
      return;
    }
    if (!body?.stream) {
      // non-streaming (prewarm, Structured Outputs)
      const content = r.refusal !== undefined ? null : r.json !== undefined ? JSON.stringify(r.json) : (r.text ?? []).join('');
      const u = r.usage ?? { prompt_tokens: 1, completion_tokens: 1 };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-x', object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: body?.model ?? 'unknown', system_fingerprint: 'fp_fake',
          choices: [{ index: 0, message: { role: 'assistant', content, refusal: r.refusal ?? null, annotations: [] }, logprobs: null, finish_reason: r.finishReason ?? 'stop' }],
          usage: { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens, ...(u.cached ? { prompt_tokens_details: { cached_tokens: u.cached } } : {}) },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: 'fp_fake' };
    const records: string[] = [];
    const chunk = (delta: object, finish: string | null = null) => records.push(JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] }));
    chunk({ role: 'assistant', content: '', refusal: null });
    for (const t of r.text ?? []) chunk({ content: t });
    (r.toolCalls ?? []).forEach((tc, index) => {
      chunk({ tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.name, arguments: '' } }] });
      for (const f of tc.argumentFragments) chunk({ tool_calls: [{ index, function: { arguments: f } }] });
    });
    const finish = r.finishReason ?? (r.toolCalls?.length ? 'tool_calls' : 'stop');
    const usage = r.usage ? { prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens, total_tokens: r.usage.prompt_tokens + r.usage.completion_tokens, ...(r.usage.cached ? { prompt_tokens_details: { cached_tokens: r.usage.cached } } : {}) } : null;
    if (r.groqUsage && usage) {
      records.push(JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }], x_groq: { id: 'req_fake', usage } }));
    } else {
      chunk({}, finish);
      if (usage && body.stream_options?.include_usage) records.push(JSON.stringify({ ...base, choices: [], usage }));
    }
    records.push('[DONE]');
    await streamRecords(res, records.map((rec) => `data: ${rec}\n\n`), {
      stallAfter: r.stallAfter,
      dropAfter: r.dropAfter,
      onAbort: () => void state.clientAborts++,
    });
  };

  const server = await listenFake(handle);
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    requests,
    reply: (...r) => void queue.push(...r),
    get clientAborts() {
      return state.clientAborts;
    },
    get outage() {
      return state.outage;
    },
    set outage(r: FakeReply | null) {
      state.outage = r;
    },
    close: server.close,
  };
}
