// Google Gemini streaming adapter (docs/engines.md, LLM `google`): POST
// {base}/v1beta/models/{model}:streamGenerateContent?alt=sse with x-goog-api-key. Each SSE record is a whole
// GenerateContentResponse: candidates[0].content.parts[] with `text` or `functionCall{name, args, id?}`,
// finishReason, usageMetadata{promptTokenCount, candidatesTokenCount, cachedContentTokenCount}; there is no
// [DONE] (the stream simply ends). Mapping: system messages → systemInstruction; assistant → role `model`
// (tool calls as functionCall parts); tool results → user turns of functionResponse parts (JSON object results
// as is, anything else as {result}); consecutive turns of one role are merged. JSON-Schema keys Gemini refuses
// ($schema, additionalProperties) are dropped from tool parameters. Finish reasons are reported in the OpenAI
// vocabulary (STOP → stop, or tool_calls when the reply called a function; MAX_TOKENS → length).
// completeWithSchema: one non-streaming :generateContent with generationConfig.responseMimeType
// 'application/json' and the caller's schema as responseSchema (schema.ts); the answer is the candidate's text.
import type { ChatMessage, LlmChunk, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService, LlmUsage } from '../types.ts';
import { geminiResponseSchema, parseJsonAnswer } from './schema.ts';
import { engineError, postJson, sseData } from './openai.ts';

export interface GoogleOptions {
  model: string;
  baseUrl: string;
  apiKey?: string;
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
}

type Part = { text: string } | { functionCall: { name: string; args: unknown; id?: string } } | { functionResponse: { name: string; response: unknown; id?: string } };
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

function cleanSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(cleanSchema);
  if (!s || typeof s !== 'object') return s;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (k !== '$schema' && k !== 'additionalProperties') out[k] = cleanSchema(v);
  return out;
}

export function toGemini(messages: ChatMessage[]): { system: string; contents: Content[] } {
  const system: string[] = [];
  const contents: Content[] = [];
  const push = (role: Content['role'], parts: Part[]) => {
    if (!parts.length) return;
    const last = contents[contents.length - 1];
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === 'system') system.push(m.content);
    else if (m.role === 'user') push('user', m.content ? [{ text: m.content }] : []);
    else if (m.role === 'assistant') {
      const parts: Part[] = m.content ? [{ text: m.content }] : [];
      for (const c of m.toolCalls ?? []) {
        let args: unknown = {};
        try {
          const parsed = JSON.parse(c.arguments || '{}') as unknown;
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed;
        } catch {
          /* invalid JSON from the model */
        }
        parts.push({ functionCall: { name: c.name, args } });
      }
      push('model', parts);
    } else {
      let response: unknown;
      try {
        const parsed = JSON.parse(m.content) as unknown;
        response = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { result: parsed };
      } catch {
        response = { result: m.content };
      }
      push('user', [{ functionResponse: { name: m.name, response } }]);
    }
  }
  if (contents.length === 0) contents.push({ role: 'user', parts: [{ text: '(The call has connected.)' }] });
  return { system: system.join('\n\n'), contents };
}

function googleHttpError(status: number, body: string): Error {
  let message = body.slice(0, 300);
  let reason = '';
  try {
    const j = JSON.parse(body) as { error?: { message?: string; status?: string; details?: { reason?: string }[] } };
    message = j.error?.message ?? message;
    reason = `${j.error?.status ?? ''} ${(j.error?.details ?? []).map((d) => d.reason ?? '').join(' ')}`;
  } catch {
    /* not JSON */
  }
  const badKey = /API_KEY_INVALID|API key not valid/i.test(`${reason} ${message}`);
  const fatal = status === 401 || status === 403 || status === 404 || badKey;
  const retryable = !fatal && (status === 429 || status === 408 || status >= 500);
  return engineError(`google LLM error ${status}: ${message}`, retryable, fatal);
}

export class GoogleLlm implements LlmService {
  readonly provider = 'google';
  readonly model: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly o: GoogleOptions) {
    this.model = o.model;
    this.fetchImpl = o.fetch ?? fetch;
  }

  private url(method: string): string {
    return `${this.o.baseUrl.replace(/\/+$/, '')}/v1beta/models/${encodeURIComponent(this.model)}:${method}`;
  }

  private post(url: string, body: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.o.apiKey) headers['x-goog-api-key'] = this.o.apiKey;
    return postJson({ fetchImpl: this.fetchImpl, provider: 'google', url, headers, body, signal, connectTimeoutMs: this.o.connectTimeoutMs, httpError: googleHttpError });
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    if (req.signal.aborted) return;
    const { system, contents } = toGemini(req.messages);
    const body: Record<string, unknown> = { contents, generationConfig: { temperature: req.temperature, maxOutputTokens: req.maxTokens } };
    if (system) body.systemInstruction = { parts: [{ text: system }] };
    if (req.tools.length)
      body.tools = [{ functionDeclarations: req.tools.map((t) => ({ name: t.name, description: t.description, parameters: cleanSchema(t.parameters) })) }];
    let res: Response;
    try {
      res = await this.post(`${this.url('streamGenerateContent')}?alt=sse`, body, req.signal);
    } catch (err) {
      if (req.signal.aborted) return;
      throw err;
    }
    if (!res.body) throw engineError('google LLM returned no body', true, false);
    let usage: LlmUsage | null = null;
    let finish: string | null = null;
    let calls = 0;
    try {
      for await (const { data } of sseData(res.body, req.signal)) {
        if (req.signal.aborted) return;
        let r: any;
        try {
          r = JSON.parse(data);
        } catch {
          throw engineError('google LLM sent an unreadable stream record', true, false);
        }
        if (r.error) throw engineError(`google LLM stream error: ${r.error.message ?? ''}`, true, false);
        const cand = r.candidates?.[0];
        for (const p of cand?.content?.parts ?? []) {
          if (typeof p.text === 'string' && p.text && !p.thought) yield { type: 'text', delta: p.text };
          else if (p.functionCall) {
            calls++;
            yield { type: 'tool_call', call: { id: p.functionCall.id ?? `call_${calls}`, name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) } };
          }
        }
        if (cand?.finishReason) finish = cand.finishReason;
        const u = r.usageMetadata;
        if (u) {
          usage = { promptTokens: u.promptTokenCount ?? 0, completionTokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) };
          if (u.cachedContentTokenCount) usage.cacheReadTokens = u.cachedContentTokenCount;
        }
      }
    } catch (err) {
      if (req.signal.aborted) return;
      if ((err as { engineError?: unknown }).engineError) throw err;
      throw engineError(`google LLM stream broke: ${(err as Error).message}`, true, false);
    }
    if (req.signal.aborted) return;
    if (!finish) throw engineError('google LLM stream ended early', true, false);
    if (finish === 'SAFETY' || finish === 'RECITATION' || finish === 'PROHIBITED_CONTENT' || finish === 'BLOCKLIST')
      throw engineError(`google LLM stopped the reply (${finish})`, false, false);
    if (usage) yield { type: 'usage', usage };
    yield { type: 'done', finishReason: calls ? 'tool_calls' : finish === 'MAX_TOKENS' ? 'length' : 'stop' };
  }

  async completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    const { system, contents } = toGemini(req.messages);
    const body: Record<string, unknown> = {
      contents,
      generationConfig: {
        temperature: req.temperature,
        maxOutputTokens: req.maxTokens,
        responseMimeType: 'application/json',
        responseSchema: geminiResponseSchema(req.schema),
      },
    };
    if (system) body.systemInstruction = { parts: [{ text: system }] };
    const res = await this.post(this.url('generateContent'), body, req.signal);
    let json: any;
    try {
      json = await res.json();
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw engineError(`google LLM sent an unreadable answer: ${(err as Error).message}`, true, false);
    }
    const cand = json?.candidates?.[0];
    const u = json?.usageMetadata;
    let usage: LlmUsage | null = null;
    if (u) {
      usage = { promptTokens: u.promptTokenCount ?? 0, completionTokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0) };
      if (u.cachedContentTokenCount) usage.cacheReadTokens = u.cachedContentTokenCount;
    }
    const finish: string = cand?.finishReason ?? (json?.promptFeedback?.blockReason ? 'SAFETY' : 'STOP');
    const text = ((cand?.content?.parts ?? []) as Array<{ text?: string; thought?: boolean }>).filter((p) => !p.thought).map((p) => p.text ?? '').join('');
    if (finish === 'SAFETY' || finish === 'RECITATION' || finish === 'PROHIBITED_CONTENT' || finish === 'BLOCKLIST') return { value: undefined, text, usage, finishReason: 'refusal' };
    return { value: parseJsonAnswer(text), text, usage, finishReason: finish === 'MAX_TOKENS' ? 'length' : 'stop' };
  }

  async prewarm(): Promise<void> {
    const res = await this.post(this.url('countTokens'), { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, new AbortController().signal);
    await res.arrayBuffer().catch(() => undefined);
  }
}
