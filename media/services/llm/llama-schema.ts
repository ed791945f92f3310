// completeWithSchema for the in-process local model (llama.ts): the answer is generated under a grammar built from
// the schema by node-llama-cpp's `llama.createGrammarForJsonSchema`, so it is always JSON of the schema's shape.
// The grammar emits every property of an object, so properties the caller left optional are made nullable
// (schema.ts strictJsonSchema) and their nulls dropped from the answer; strings are capped at 400 characters so a
// small model cannot run on inside one until maxTokens.
//
// The grammar only constrains the tokens: the model never sees the schema's descriptions through it, so the schema
// is also written into the system message (node-llama-cpp's advice for fewer made-up values).
//
// One-shot requests get their own context (one sequence, SCHEMA_CONTEXT_TOKENS, for a long call's transcript) on
// the same loaded model, created on first use and used one request at a time, so they never take a sequence from
// live calls' replies.
import os from 'node:os';
import type { GbnfJsonSchema, LlamaContext, LlamaModel } from 'node-llama-cpp';
import type { ChatMessage, LlmSchemaRequest, LlmSchemaResult } from '../types.ts';
import { loadLocalModel, toHistory } from './llama.ts';
import { engineError } from './openai.ts';
import { dropNullOptionals, parseJsonAnswer, strictJsonSchema } from './schema.ts';

const SCHEMA_CONTEXT_TOKENS = 8192;
const MAX_STRING_CHARS = 400;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A strict-form schema (every property present, optional ones nullable) as node-llama-cpp's grammar schema. */
export function grammarSchema(node: unknown): GbnfJsonSchema {
  if (!isObject(node)) return { type: 'string', maxLength: MAX_STRING_CHARS };
  const description = typeof node.description === 'string' ? { description: node.description } : {};
  if (Array.isArray(node.enum)) return { enum: node.enum as Array<string | number | boolean | null>, ...description };
  const types = (Array.isArray(node.type) ? node.type : [node.type]).filter((t): t is string => typeof t === 'string');
  const alternatives = types.filter((t) => t !== 'null').map((t): GbnfJsonSchema => {
    if (t === 'object') {
      const props = isObject(node.properties) ? node.properties : {};
      return { type: 'object', properties: Object.fromEntries(Object.entries(props).map(([k, v]) => [k, grammarSchema(v)])), ...description };
    }
    if (t === 'array') return { type: 'array', items: grammarSchema(node.items), ...description };
    if (t === 'string') return { type: 'string', maxLength: MAX_STRING_CHARS, ...description };
    return { type: t as 'number' | 'integer' | 'boolean', ...description };
  });
  if (alternatives.length === 0) return { type: 'string', maxLength: MAX_STRING_CHARS, ...description };
  if (!types.includes('null')) return alternatives.length === 1 ? alternatives[0]! : { oneOf: alternatives, ...description };
  return { oneOf: [...alternatives, { type: 'null' }], ...description };
}

/** The messages with the answer's schema appended to the system message (one is added when there is none). */
export function withSchemaInPrompt(messages: ChatMessage[], schema: Json): ChatMessage[] {
  const note = `Answer with one JSON object that matches this JSON Schema (use null for what the conversation does not tell):\n${JSON.stringify(schema)}`;
  const i = messages.findIndex((m) => m.role === 'system');
  if (i < 0) return [{ role: 'system', content: note }, ...messages];
  return messages.map((m, j) => (j === i ? { role: 'system', content: `${m.content}\n\n${note}` } : m));
}

function threads(): number {
  const n = Number(process.env.LOCAL_LLM_THREADS);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, Math.floor(os.availableParallelism() / 2));
}

/** The one-shot context and the model it belongs to (a model loaded again after closeLocalModel gets a new one). */
let context: { model: LlamaModel; ctx: Promise<LlamaContext> } | null = null;
let queue: Promise<unknown> = Promise.resolve();

export async function completeWithSchemaLocal(req: LlmSchemaRequest, modelsDir?: string): Promise<LlmSchemaResult> {
  let m: Awaited<ReturnType<typeof loadLocalModel>>;
  try {
    m = await loadLocalModel(modelsDir);
  } catch (err) {
    throw engineError(`local LLM cannot load: ${(err as Error).message}`, false, true);
  }
  const run = queue.then(async () => {
    if (req.signal.aborted) throw req.signal.reason ?? new Error('aborted');
    if (context?.model !== m.model) {
      const created = { model: m.model, ctx: m.model.createContext({ sequences: 1, contextSize: SCHEMA_CONTEXT_TOKENS, threads: threads() }) };
      created.ctx.catch(() => {
        if (context === created) context = null;
      });
      context = created;
    }
    const ctx = await context.ctx;
    const { LlamaChat } = await import('node-llama-cpp');
    const strict = strictJsonSchema(req.schema);
    const grammar = await m.llama.createGrammarForJsonSchema(grammarSchema(strict) as any);
    const sequence = ctx.getSequence();
    const chat = new LlamaChat({ contextSequence: sequence, autoDisposeSequence: false });
    try {
      const r = await chat.generateResponse(toHistory(withSchemaInPrompt(req.messages, strict)), {
        grammar,
        temperature: req.temperature,
        maxTokens: req.maxTokens,
        signal: req.signal,
      });
      const text = r.response;
      const parsed = parseJsonAnswer(text);
      const promptTokens = m.model.tokenize(JSON.stringify(req.messages)).length;
      return {
        value: parsed === undefined ? undefined : dropNullOptionals(parsed, req.schema),
        text,
        usage: { promptTokens, completionTokens: m.model.tokenize(text).length },
        finishReason: r.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
      };
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw engineError(`local LLM failed: ${(err as Error).message ?? String(err)}`, true, false);
    } finally {
      chat.dispose({ disposeSequence: false });
      sequence.dispose();
    }
  });
  queue = run.catch(() => undefined);
  return run;
}

/** Frees the one-shot context (tests, shutdown); the model itself is closed by closeLocalModel. */
export async function closeSchemaContext(): Promise<void> {
  const c = context;
  context = null;
  const ctx = await c?.ctx.catch(() => null);
  if (ctx && !ctx.disposed) await ctx.dispose();
}
