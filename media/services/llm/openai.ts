// OpenAI Chat Completions streaming adapter (docs/engines.md, LLM): `openai`, `groq` and the `local` engine's
// OpenAI-compatible server share it. POST {base}/chat/completions with stream:true and
// stream_options.include_usage; SSE deltas carry content and tool-call fragments (the first fragment of an
// index has id + name, later ones only argument text); the last chunk has choices:[] and usage (Groq may put
// it under x_groq.usage); the stream ends with `data: [DONE]`. Messages never carry `name` and requests never
// send logprobs / logit_bias / n, which Groq rejects.
// completeWithSchema: one non-streaming request with Structured Outputs, `response_format: {type: 'json_schema',
// json_schema: {name, schema, strict}}`, the schema in strict form (schema.ts); strict is sent as true except on
// Groq models without strict support (Groq then makes a best effort, and the caller validates the answer).
import type { ChatMessage, EngineError, LlmChunk, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService, LlmUsage } from '../types.ts';
import { dropNullOptionals, parseJsonAnswer, strictJsonSchema } from './schema.ts';

export interface OpenAiCompatOptions {
  provider: string;
  model: string;
  baseUrl: string;
  apiKey?: string;
  /** Per-request timeout until the response headers arrive (default 30 s). */
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
}

export function engineError(message: string, retryable: boolean, fatal: boolean): Error & { engineError: EngineError } {
  return Object.assign(new Error(message), { engineError: { message, retryable, fatal } });
}

/** HTTP status → engine error classification (401/403 fatal, 429/5xx retryable). */
export function httpEngineError(provider: string, status: number, body: string): Error & { engineError: EngineError } {
  let detail = body.slice(0, 300);
  try {
    const j = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    detail = (typeof j.error === 'string' ? j.error : j.error?.message) ?? j.message ?? detail;
  } catch {
    /* not JSON */
  }
  const retryable = status === 429 || status === 408 || status >= 500;
  const fatal = status === 401 || status === 403 || status === 404;
  return engineError(`${provider} LLM error ${status}: ${detail}`, retryable, fatal);
}

/**
 * POST a JSON body to an LLM vendor. A network failure or the connect timeout becomes a retryable engine error;
 * a non-2xx answer goes through `httpError` (default: httpEngineError). The caller's own abort is rethrown as is.
 */
export async function postJson(opts: {
  fetchImpl: typeof fetch;
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  signal: AbortSignal;
  connectTimeoutMs?: number;
  httpError?: (status: number, body: string) => Error;
}): Promise<Response> {
  const timeout = AbortSignal.timeout(opts.connectTimeoutMs ?? 30_000);
  let res: Response;
  try {
    res = await opts.fetchImpl(opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...opts.headers },
      body: JSON.stringify(opts.body),
      signal: AbortSignal.any([opts.signal, timeout]),
    });
  } catch (err) {
    if (opts.signal.aborted) throw err;
    const msg = timeout.aborted ? 'timed out waiting for a response' : (err as Error).message;
    throw engineError(`${opts.provider} LLM request failed: ${msg}`, true, false);
  }
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    throw (opts.httpError ?? ((status, b) => httpEngineError(opts.provider, status, b)))(res.status, text);
  }
  return res;
}

/** OpenAI reasoning models (GPT-5 family, o1/o3/o4): no temperature, max_completion_tokens instead of max_tokens. */
export function isOpenAiReasoningModel(model: string): boolean {
  return /^(gpt-5|o\d)/.test(model);
}

function toWire(messages: ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    switch (m.role) {
      case 'system':
      case 'user':
        return { role: m.role, content: m.content };
      case 'assistant':
        return m.toolCalls?.length
          ? {
              role: 'assistant',
              content: m.content || null,
              tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
            }
          : { role: 'assistant', content: m.content };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    }
  });
}

/** Parse an SSE body into `data:` payloads (multi-line data joined by \n), yielding as they complete. */
export async function* sseData(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncIterable<{ event?: string; data: string }> {
  const decoder = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  let event: string | undefined;
  const reader = body.getReader();
  const onAbort = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (data.length) yield { ...(event !== undefined ? { event } : {}), data: data.join('\n') };
          data = [];
          event = undefined;
        } else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        // comments (":") and other fields are ignored
      }
    }
    if (data.length) yield { ...(event !== undefined ? { event } : {}), data: data.join('\n') };
  } finally {
    signal.removeEventListener('abort', onAbort);
    reader.releaseLock?.();
  }
}

interface WireChunk {
  choices?: { index?: number; delta?: { content?: string | null; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] }; finish_reason?: string | null }[];
  usage?: WireUsage | null;
  x_groq?: { usage?: WireUsage };
  error?: { message?: string };
}
interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
}

interface WireCompletion {
  choices?: { message?: { content?: string | null; refusal?: string | null }; finish_reason?: string | null }[];
  usage?: WireUsage | null;
  x_groq?: { usage?: WireUsage };
}

/** Groq models that enforce `strict: true` Structured Outputs (others answer best effort). */
const GROQ_STRICT_MODELS = /^openai\/gpt-oss-/;

function usageOf(u: WireUsage): LlmUsage {
  const out: LlmUsage = { promptTokens: u.prompt_tokens ?? 0, completionTokens: u.completion_tokens ?? 0 };
  const cached = u.prompt_tokens_details?.cached_tokens;
  if (cached) out.cacheReadTokens = cached;
  return out;
}

export class OpenAiCompatLlm implements LlmService {
  readonly provider: string;
  readonly model: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly o: OpenAiCompatOptions) {
    this.provider = o.provider;
    this.model = o.model;
    this.fetchImpl = o.fetch ?? fetch;
  }

  private url(): string {
    return `${this.o.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  private post(body: Record<string, unknown>, signal: AbortSignal, accept = 'text/event-stream'): Promise<Response> {
    const headers: Record<string, string> = { accept };
    if (this.o.apiKey) headers.authorization = `Bearer ${this.o.apiKey}`;
    return postJson({ fetchImpl: this.fetchImpl, provider: this.provider, url: this.url(), headers, body, signal, connectTimeoutMs: this.o.connectTimeoutMs });
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    if (req.signal.aborted) return;
    const body: Record<string, unknown> = {
      model: this.model,
      messages: toWire(req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (this.provider === 'openai' && isOpenAiReasoningModel(this.model)) {
      // GPT-5 and o-series: only the default temperature, max_completion_tokens (which also counts reasoning),
      // and the least reasoning the model allows so the first token comes fast enough for a voice turn.
      body.max_completion_tokens = req.maxTokens;
      body.reasoning_effort = this.model.startsWith('gpt-5') ? 'minimal' : 'low';
    } else {
      body.temperature = req.temperature;
      body.max_tokens = req.maxTokens;
    }
    if (req.tools.length) {
      body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
      body.tool_choice = 'auto';
    }
    let res: Response;
    try {
      res = await this.post(body, req.signal);
    } catch (err) {
      if (req.signal.aborted) return;
      throw err;
    }
    if (!res.body) throw engineError(`${this.provider} LLM returned no body`, true, false);

    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finish = 'stop';
    let sawFinish = false;
    let sawDone = false;
    let usage: LlmUsage | null = null;
    const flushCalls = function* (): Generator<LlmChunk> {
      for (const [, c] of [...calls.entries()].sort((a, b) => a[0] - b[0])) yield { type: 'tool_call', call: { id: c.id, name: c.name, arguments: c.args } };
      calls.clear();
    };
    try {
      for await (const { data } of sseData(res.body, req.signal)) {
        if (req.signal.aborted) return;
        if (data === '[DONE]') {
          sawDone = true;
          break;
        }
        let chunk: WireChunk;
        try {
          chunk = JSON.parse(data) as WireChunk;
        } catch {
          throw engineError(`${this.provider} LLM sent an unreadable stream chunk`, true, false);
        }
        if (chunk.error) throw engineError(`${this.provider} LLM stream error: ${chunk.error.message ?? 'unknown'}`, true, false);
        for (const choice of chunk.choices ?? []) {
          const d = choice.delta;
          if (d?.content) yield { type: 'text', delta: d.content };
          for (const tc of d?.tool_calls ?? []) {
            let c = calls.get(tc.index);
            if (!c) {
              c = { id: tc.id ?? `call_${tc.index}`, name: '', args: '' };
              calls.set(tc.index, c);
            }
            if (tc.id) c.id = tc.id;
            if (tc.function?.name) c.name += tc.function.name;
            if (tc.function?.arguments) c.args += tc.function.arguments;
          }
          if (choice.finish_reason) {
            finish = choice.finish_reason;
            sawFinish = true;
            yield* flushCalls();
          }
        }
        const u = chunk.usage ?? chunk.x_groq?.usage;
        if (u) usage = usageOf(u);
      }
    } catch (err) {
      if (req.signal.aborted) return;
      if ((err as { engineError?: unknown }).engineError) throw err;
      throw engineError(`${this.provider} LLM stream broke: ${(err as Error).message}`, true, false);
    }
    if (req.signal.aborted) return;
    if (!sawDone && !sawFinish) {
      // the connection ended before the protocol's end marker: treat as a truncated response
      throw engineError(`${this.provider} LLM stream ended early`, true, false);
    }
    yield* flushCalls();
    if (usage) yield { type: 'usage', usage };
    yield { type: 'done', finishReason: finish };
  }

  async completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    const strict = this.provider !== 'groq' || GROQ_STRICT_MODELS.test(this.model);
    const body: Record<string, unknown> = {
      model: this.model,
      messages: toWire(req.messages),
      stream: false,
      response_format: { type: 'json_schema', json_schema: { name: req.name, schema: strictJsonSchema(req.schema), strict } },
    };
    if (this.provider === 'openai' && isOpenAiReasoningModel(this.model)) {
      body.max_completion_tokens = req.maxTokens;
      body.reasoning_effort = this.model.startsWith('gpt-5') ? 'minimal' : 'low';
    } else {
      body.temperature = req.temperature;
      body.max_tokens = req.maxTokens;
    }
    const res = await this.post(body, req.signal, 'application/json');
    let json: WireCompletion;
    try {
      json = (await res.json()) as WireCompletion;
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw engineError(`${this.provider} LLM sent an unreadable answer: ${(err as Error).message}`, true, false);
    }
    const choice = json.choices?.[0];
    const usage = json.usage ?? json.x_groq?.usage;
    const out = { usage: usage ? usageOf(usage) : null };
    if (!choice?.message) throw engineError(`${this.provider} LLM answer has no message`, true, false);
    if (typeof choice.message.refusal === 'string' && choice.message.refusal) return { ...out, value: undefined, text: choice.message.refusal, finishReason: 'refusal' };
    const text = typeof choice.message.content === 'string' ? choice.message.content : '';
    const parsed = parseJsonAnswer(text);
    return { ...out, value: parsed === undefined ? undefined : dropNullOptionals(parsed, req.schema), text, finishReason: choice.finish_reason ?? 'stop' };
  }

  async prewarm(): Promise<void> {
    // One tiny request (max 1 token) to open the TLS connection and warm the provider's caches.
    const ac = new AbortController();
    const limit = this.provider === 'openai' && isOpenAiReasoningModel(this.model) ? { max_completion_tokens: 16 } : { max_tokens: 1 };
    const res = await this.post({ model: this.model, messages: [{ role: 'user', content: 'hi' }], ...limit, stream: false }, ac.signal);
    await res.arrayBuffer().catch(() => undefined);
  }
}
