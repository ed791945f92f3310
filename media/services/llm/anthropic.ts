// Anthropic Messages API streaming adapter (docs/engines.md, LLM `anthropic`): POST {base}/v1/messages with
// x-api-key + anthropic-version and stream:true. SSE events: message_start{message.usage},
// content_block_start{content_block: text | tool_use{id,name}}, content_block_delta{text_delta |
// input_json_delta{partial_json}}, content_block_stop, message_delta{delta.stop_reason, usage.output_tokens},
// message_stop, ping, error. Tool-use blocks are assembled and emitted at their content_block_stop.
// Mapping: system messages → `system`; tool results → user turns of tool_result blocks; consecutive turns of
// one role are merged; a conversation that does not start with the caller gets a neutral first user turn
// (the API wants the user first). temperature is clamped to 0..1. Stop reasons are reported in the OpenAI
// vocabulary the pipeline uses (end_turn → stop, tool_use → tool_calls, max_tokens → length).
// completeWithSchema: one non-streaming request offering a single tool whose input_schema is the caller's schema,
// forced with tool_choice {type: 'tool', name}; the answer is that tool_use block's `input`.
import type { ChatMessage, LlmChunk, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService, LlmUsage } from '../types.ts';
import { engineError, postJson, sseData } from './openai.ts';

export interface AnthropicOptions {
  model: string;
  baseUrl: string;
  apiKey?: string;
  version?: string;
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

export const CALL_CONNECTED = '(The call has connected.)';

export function toAnthropic(messages: ChatMessage[]): { system: string; messages: Turn[] } {
  const system: string[] = [];
  const turns: Turn[] = [];
  const push = (role: Turn['role'], blocks: Block[]) => {
    if (!blocks.length) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        system.push(m.content);
        break;
      case 'user':
        push('user', m.content ? [{ type: 'text', text: m.content }] : []);
        break;
      case 'assistant': {
        const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
        for (const c of m.toolCalls ?? []) {
          let input: unknown = {};
          try {
            const parsed = JSON.parse(c.arguments || '{}') as unknown;
            if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) input = parsed;
          } catch {
            /* invalid JSON from the model: send an empty input */
          }
          blocks.push({ type: 'tool_use', id: c.id, name: c.name, input });
        }
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }]);
        break;
    }
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', content: [{ type: 'text', text: CALL_CONNECTED }] });
  return { system: system.join('\n\n'), messages: turns };
}

const STOP: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', tool_use: 'tool_calls', max_tokens: 'length' };

export class AnthropicLlm implements LlmService {
  readonly provider = 'anthropic';
  readonly model: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly o: AnthropicOptions) {
    this.model = o.model;
    this.fetchImpl = o.fetch ?? fetch;
  }

  private post(body: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { 'anthropic-version': this.o.version ?? '2023-06-01' };
    if (this.o.apiKey) headers['x-api-key'] = this.o.apiKey;
    const url = `${this.o.baseUrl.replace(/\/+$/, '')}/v1/messages`;
    return postJson({ fetchImpl: this.fetchImpl, provider: 'anthropic', url, headers, body, signal, connectTimeoutMs: this.o.connectTimeoutMs });
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    if (req.signal.aborted) return;
    const { system, messages } = toAnthropic(req.messages);
    const body: Record<string, unknown> = {
      model: this.model,
      max_tokens: req.maxTokens,
      temperature: Math.min(1, Math.max(0, req.temperature)),
      messages,
      stream: true,
    };
    if (system) body.system = system;
    if (req.tools.length) body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    let res: Response;
    try {
      res = await this.post(body, req.signal);
    } catch (err) {
      if (req.signal.aborted) return;
      throw err;
    }
    if (!res.body) throw engineError('anthropic LLM returned no body', true, false);

    const blocks = new Map<number, { type: string; id: string; name: string; json: string }>();
    const usage: LlmUsage = { promptTokens: 0, completionTokens: 0 };
    let finish = 'stop';
    let stopped = false;
    try {
      for await (const { event, data } of sseData(res.body, req.signal)) {
        if (req.signal.aborted) return;
        let ev: any;
        try {
          ev = JSON.parse(data);
        } catch {
          throw engineError('anthropic LLM sent an unreadable stream event', true, false);
        }
        const type: string = ev.type ?? event;
        if (type === 'message_start') {
          const u = ev.message?.usage ?? {};
          usage.promptTokens = (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
          usage.completionTokens = u.output_tokens ?? 0;
          if (u.cache_read_input_tokens) usage.cacheReadTokens = u.cache_read_input_tokens;
          if (u.cache_creation_input_tokens) usage.cacheCreationTokens = u.cache_creation_input_tokens;
        } else if (type === 'content_block_start') {
          const b = ev.content_block ?? {};
          blocks.set(ev.index, { type: b.type, id: b.id ?? `toolu_${ev.index}`, name: b.name ?? '', json: '' });
          if (b.type === 'text' && b.text) yield { type: 'text', delta: b.text };
        } else if (type === 'content_block_delta') {
          const d = ev.delta ?? {};
          if (d.type === 'text_delta' && d.text) yield { type: 'text', delta: d.text };
          else if (d.type === 'input_json_delta') {
            const b = blocks.get(ev.index);
            if (b) b.json += d.partial_json ?? '';
          }
        } else if (type === 'content_block_stop') {
          const b = blocks.get(ev.index);
          if (b?.type === 'tool_use') yield { type: 'tool_call', call: { id: b.id, name: b.name, arguments: b.json || '{}' } };
          blocks.delete(ev.index);
        } else if (type === 'message_delta') {
          if (ev.delta?.stop_reason) finish = STOP[ev.delta.stop_reason] ?? ev.delta.stop_reason;
          if (ev.usage?.output_tokens !== undefined) usage.completionTokens = ev.usage.output_tokens;
        } else if (type === 'message_stop') {
          stopped = true;
          break;
        } else if (type === 'error') {
          const kind: string = ev.error?.type ?? 'error';
          const retryable = kind === 'overloaded_error' || kind === 'api_error' || kind === 'rate_limit_error';
          throw engineError(`anthropic LLM stream error (${kind}): ${ev.error?.message ?? ''}`, retryable, kind === 'authentication_error' || kind === 'permission_error');
        }
      }
    } catch (err) {
      if (req.signal.aborted) return;
      if ((err as { engineError?: unknown }).engineError) throw err;
      throw engineError(`anthropic LLM stream broke: ${(err as Error).message}`, true, false);
    }
    if (req.signal.aborted) return;
    if (!stopped) throw engineError('anthropic LLM stream ended early', true, false);
    yield { type: 'usage', usage };
    yield { type: 'done', finishReason: finish };
  }

  async completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    const { system, messages } = toAnthropic(req.messages);
    const { $schema: _drop, ...inputSchema } = req.schema;
    const body: Record<string, unknown> = {
      model: this.model,
      max_tokens: req.maxTokens,
      temperature: Math.min(1, Math.max(0, req.temperature)),
      messages,
      tools: [{ name: req.name, description: 'Record the answer in exactly this shape.', input_schema: inputSchema }],
      tool_choice: { type: 'tool', name: req.name },
    };
    if (system) body.system = system;
    const res = await this.post(body, req.signal);
    let json: any;
    try {
      json = await res.json();
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw engineError(`anthropic LLM sent an unreadable answer: ${(err as Error).message}`, true, false);
    }
    const u = json?.usage ?? {};
    const usage: LlmUsage = {
      promptTokens: (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
      completionTokens: u.output_tokens ?? 0,
    };
    if (u.cache_read_input_tokens) usage.cacheReadTokens = u.cache_read_input_tokens;
    if (u.cache_creation_input_tokens) usage.cacheCreationTokens = u.cache_creation_input_tokens;
    const blocks = (Array.isArray(json?.content) ? json.content : []) as Array<{ type?: string; name?: string; input?: unknown; text?: string }>;
    const call = blocks.find((b) => b.type === 'tool_use' && b.name === req.name);
    const finishReason = json?.stop_reason === 'max_tokens' ? 'length' : 'stop';
    if (!call) {
      const text = blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
      return { value: undefined, text, usage, finishReason: json?.stop_reason === 'refusal' ? 'refusal' : finishReason };
    }
    return { value: call.input, text: JSON.stringify(call.input ?? null), usage, finishReason };
  }

  async prewarm(): Promise<void> {
    const res = await this.post({ model: this.model, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }, new AbortController().signal);
    await res.arrayBuffer().catch(() => undefined);
  }
}
