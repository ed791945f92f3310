// `local` LLM, model `qwen2.5-coder-0.5b-instruct`: Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M, opt-in:
// `npm run setup:llm`) run in-process by node-llama-cpp (llama.cpp's prebuilt CPU binary; inference runs on
// llama.cpp's own threads, never on the event loop), behind the same streaming interface as the vendor LLMs.
//
// One model and one context per media process, with LOCAL_LLM_SEQUENCES (default 4) sequences: that many replies
// are generated at once; further requests wait for a free sequence (in order). Tools are offered as node-llama-cpp
// "functions" (its Qwen chat wrapper renders them into the prompt and constrains the call's arguments to their
// JSON schema); a function call ends the generation and is emitted as a tool_call chunk for the runner to execute,
// as with the vendor adapters — the result comes back in the history of the next request.
import os from 'node:os';
import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, Llama, LlamaContext, LlamaModel } from 'node-llama-cpp';
import { verifiedModelFile, MODELS } from '../model-files.ts';
import type { ChatMessage, LlmChunk, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService, ToolSpec } from '../types.ts';
import { engineError } from './openai.ts';
import { completeWithSchemaLocal } from './llama-schema.ts';

export const QWEN_MODEL = 'qwen2.5-coder-0.5b-instruct';
const CONTEXT_TOKENS = 4096;

interface Loaded {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  /** sequences free right now, and requests waiting for one */
  free: number;
  waiting: Array<() => void>;
}

let loading: Promise<Loaded> | null = null;

/**
 * llama.cpp compute threads per generation: LOCAL_LLM_THREADS, default half the cores (the STT and TTS helpers
 * need the rest; on a busy machine fewer threads give the first token sooner, see docs/benchmarks.md).
 */
function threads(): number {
  const n = Number(process.env.LOCAL_LLM_THREADS);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, Math.floor(os.availableParallelism() / 2));
}

function sequences(): number {
  const n = Number(process.env.LOCAL_LLM_SEQUENCES);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 16) : 4;
}

/** Load (once per process) the verified model file into node-llama-cpp; rejects when it cannot run here. */
export function loadLocalModel(modelsDir?: string): Promise<Loaded> {
  loading ??= (async () => {
    const modelPath = await verifiedModelFile(MODELS[QWEN_MODEL].files[0]!, modelsDir);
    const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath });
    const n = sequences();
    const context = await model.createContext({ sequences: n, contextSize: CONTEXT_TOKENS, threads: threads() });
    return { llama, model, context, free: n, waiting: [] };
  })();
  loading.catch(() => (loading = null));
  return loading;
}

export async function closeLocalModel(): Promise<void> {
  const l = loading;
  loading = null;
  const m = await l?.catch(() => null);
  if (m) await m.llama.dispose();
}

/** JSON Schema reduced to what node-llama-cpp's grammar accepts (type, properties, required, items, enum, description). */
function gbnfSchema(s: unknown): Record<string, unknown> {
  if (!s || typeof s !== 'object') return { type: 'string' };
  const src = s as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (typeof src.description === 'string') out.description = src.description;
  if (Array.isArray(src.enum)) out.enum = src.enum;
  const type = Array.isArray(src.type) ? src.type.find((t) => t !== 'null') : src.type;
  if (typeof type === 'string') out.type = type;
  if (out.type === 'object' || src.properties) {
    out.type = 'object';
    const props = (src.properties ?? {}) as Record<string, unknown>;
    out.properties = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, gbnfSchema(v)]));
    if (Array.isArray(src.required)) out.required = src.required.filter((r) => typeof r === 'string' && r in props);
  } else if (out.type === 'array') out.items = gbnfSchema(src.items);
  else if (!out.type && !out.enum) out.type = 'string';
  return out;
}

function functionsOf(tools: ToolSpec[]): ChatModelFunctions | undefined {
  if (!tools.length) return undefined;
  return Object.fromEntries(tools.map((t) => [t.name, { description: t.description, params: gbnfSchema(t.parameters) }])) as ChatModelFunctions;
}

/** Our messages as node-llama-cpp's chat history (tool results are the `result` of the model turn's calls). */
export function toHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const out: ChatHistoryItem[] = [];
  const calls = new Map<string, ChatModelFunctionCall>();
  for (const m of messages) {
    if (m.role === 'system') out.push({ type: 'system', text: m.content });
    else if (m.role === 'user') out.push({ type: 'user', text: m.content });
    else if (m.role === 'assistant') {
      const response: Array<string | ChatModelFunctionCall> = m.content ? [m.content] : [];
      for (const c of m.toolCalls ?? []) {
        let params: unknown = {};
        try {
          params = JSON.parse(c.arguments || '{}');
        } catch {
          params = c.arguments;
        }
        const call: ChatModelFunctionCall = { type: 'functionCall', name: c.name, params, result: '' };
        calls.set(c.id, call);
        response.push(call);
      }
      out.push({ type: 'model', response });
    } else {
      const call = calls.get(m.toolCallId);
      if (call) call.result = m.content;
      else out.push({ type: 'user', text: `(${m.name} returned: ${m.content})` });
    }
  }
  if (out.at(-1)?.type !== 'model') out.push({ type: 'model', response: [] });
  return out;
}

let callSeq = 0;

/** Where the model starts writing a tool call or code as text (0.5B Qwen often does, instead of its call syntax). */
const NOT_SPEECH = /<tool|<\/?tools>|```|\{\s*"(name|type|function)"/;

/** A `{"name": tool, "arguments": {...}}` object written as text: the call it meant, else null. */
export function callInText(text: string, tools: ToolSpec[]): { name: string; arguments: string } | null {
  for (const m of text.matchAll(/\{\s*"name"\s*:\s*"([^"]+)"\s*,\s*"(?:arguments|parameters)"\s*:\s*(\{[^{}]*\})/g)) {
    if (!tools.some((t) => t.name === m[1])) continue;
    try {
      JSON.parse(m[2]!);
      return { name: m[1]!, arguments: m[2]! };
    } catch {
      /* not JSON */
    }
  }
  return null;
}

export class LlamaLlm implements LlmService {
  readonly provider = 'local';
  readonly model = QWEN_MODEL;

  constructor(private readonly modelsDir?: string) {}

  async prewarm(): Promise<void> {
    await loadLocalModel(this.modelsDir);
  }

  /** One answer under a JSON-schema grammar, in a context of its own (llama-schema.ts). */
  completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    return completeWithSchemaLocal(req, this.modelsDir);
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    let m: Loaded;
    try {
      m = await loadLocalModel(this.modelsDir);
    } catch (err) {
      throw engineError(`local LLM cannot load: ${(err as Error).message}`, false, true);
    }
    // a free sequence, or wait for one: a release hands its sequence to the first waiter directly
    if (m.free === 0) await new Promise<void>((ok) => m.waiting.push(ok));
    else m.free--;
    const sequence = m.context.getSequence();
    const queue: LlmChunk[] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    let failure: unknown = null;
    const push = (c: LlmChunk) => {
      queue.push(c);
      wake?.();
    };
    const { LlamaChat } = await import('node-llama-cpp');
    const chat = new LlamaChat({ contextSequence: sequence, autoDisposeSequence: false });
    const history = toHistory(req.messages);
    const promptTokens = m.model.tokenize(JSON.stringify(req.messages)).length;
    let completion = '';
    /** text up to here was spoken; past it the model wrote a call or code as text (held back, never spoken) */
    let spokenUpTo = -1;
    const functions = functionsOf(req.tools);
    const ended = chat
      .generateResponse(history, {
        ...(functions ? { functions } : {}),
        temperature: req.temperature,
        maxTokens: req.maxTokens,
        signal: req.signal,
        stopOnAbortSignal: true,
        onTextChunk: (t: string) => {
          const before = completion.length;
          completion += t;
          if (spokenUpTo >= 0) return;
          // hold back the tail that could be the start of a marker, speak the rest
          const at = completion.search(NOT_SPEECH);
          if (at >= 0) {
            spokenUpTo = at;
            if (at > before) push({ type: 'text', delta: completion.slice(before, at) });
          } else push({ type: 'text', delta: t });
        },
      })
      .then(
        (r) => {
          for (const fc of r.functionCalls ?? []) push({ type: 'tool_call', call: { id: `call_${++callSeq}`, name: fc.functionName, arguments: JSON.stringify(fc.params ?? {}) } });
          const written = !r.functionCalls?.length && spokenUpTo >= 0 ? callInText(completion.slice(spokenUpTo), req.tools) : null;
          if (written) push({ type: 'tool_call', call: { id: `call_${++callSeq}`, ...written } });
          const completionTokens = m.model.tokenize(completion).length;
          push({ type: 'usage', usage: { promptTokens, completionTokens } });
          const stop = r.metadata.stopReason;
          push({ type: 'done', finishReason: stop === 'functionCalls' || written ? 'tool_calls' : stop === 'maxTokens' ? 'length' : 'stop' });
        },
        (err: unknown) => {
          failure = err;
        },
      )
      .finally(() => {
        finished = true;
        wake?.();
      });
    try {
      for (;;) {
        if (queue.length) {
          yield queue.shift()!;
          continue;
        }
        if (finished) break;
        await new Promise<void>((ok) => (wake = ok));
        wake = null;
      }
      if (failure && !req.signal.aborted) throw engineError(`local LLM failed: ${(failure as Error).message ?? String(failure)}`, true, false);
    } finally {
      // leave the sequence once the generation has stopped (an abandoned stream aborts through req.signal)
      void ended.then(() => {
        chat.dispose({ disposeSequence: false });
        sequence.dispose();
        const next = m.waiting.shift();
        if (next) next();
        else m.free++;
      });
    }
  }
}
