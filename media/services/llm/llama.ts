// `local` LLM, model `qwen2.5-coder-0.5b-instruct`: Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M, opt-in:
// `npm run setup:llm`) run in-process by node-llama-cpp (llama.cpp's prebuilt CPU binary; inference runs on
// llama.cpp's own threads, never on the event loop), behind the same streaming interface as the vendor LLMs.
//
// One model and one context per media process, loaded once and kept (media/session/warm.ts loads it at process
// start when its file is installed), with LOCAL_LLM_SEQUENCES (default 4) sequences shared by the calls
// (SequencePool). A call keeps its sequence from one turn to the next: the sequence holds the evaluated tokens of the
// conversation, and each request evaluates only what differs from them — the new caller turn, not the system prompt,
// the tool definitions and the history again (on 2 cores a 300-token prompt takes 2–4 s to evaluate, the new turn
// 0.1–0.3 s). prefill() evaluates the system prompt and tool definitions as the call starts, then the greeting. With
// more calls than sequences, a call whose sequence is idle lends it to the next one that needs it (its next reply
// then evaluates its prompt again); while every sequence is generating, further requests wait for one, in order.
//
// Tools are offered as node-llama-cpp "functions" (the Qwen template renders them into the system prompt and the
// call's arguments are constrained to their JSON schema); a function call ends the generation and is emitted as a
// tool_call chunk for the runner to execute, as with the vendor adapters. This model often writes a call as JSON
// text instead: a call written that way that names an offered tool is executed too. It seldom calls the end-call
// tool by itself: a caller's farewell ends the call through it (farewell.ts).
import os from 'node:os';
import type {
  ChatHistoryItem,
  ChatModelFunctionCall,
  ChatModelFunctions,
  ChatWrapper,
  Llama,
  LlamaChat,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from 'node-llama-cpp';
import { modelInstalled, verifiedModelFile, MODELS } from '../model-files.ts';
import type { ChatMessage, LlmChunk, LlmPrefillContext, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService, ToolSpec } from '../types.ts';
import { endCallTool, farewellCall, isFarewell } from './farewell.ts';
import { engineError } from './openai.ts';
import { completeWithSchemaLocal } from './llama-schema.ts';

export const QWEN_MODEL = 'qwen2.5-coder-0.5b-instruct';
/** tokens per sequence: a call's system prompt, tool definitions and conversation (older turns shift out past it) */
const CONTEXT_TOKENS = 4096;

/**
 * Sampling on top of the agent's temperature (bench/local-llm.ts, docs/engines.md): Qwen2.5's own generation
 * settings (top-k 20, top-p 0.8, repetition penalty 1.05). At temperatures above 1 (agents allow up to 2) a 0.5B
 * model sampling from its whole vocabulary rambles and invents facts; cut to its likeliest tokens it stays short and
 * on the prompt, and at temperature 1 and below it does as well as without the cut.
 */
export interface Sampling {
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  seed?: number;
}
export const DEFAULT_SAMPLING: Sampling = { topK: 20, topP: 0.8, repeatPenalty: 1.05 };

/**
 * llama.cpp compute threads per generation: LOCAL_LLM_THREADS, default half the cores. The Whisper and Piper
 * helpers beside it run one thread each; llama.cpp's threads wait for each other at every step, so one of them
 * descheduled by a busy core stalls the token (on 2 shared cores, 2 threads made generation 5–20× slower than 1).
 */
export function llmThreads(cores = os.availableParallelism()): number {
  const n = Number(process.env.LOCAL_LLM_THREADS);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, Math.floor(cores / 2));
}

/** Sequences of the shared context: LOCAL_LLM_SEQUENCES, default 4 (each holds CONTEXT_TOKENS of KV cache, ≈ 50 MB). */
export function llmSequences(): number {
  const n = Number(process.env.LOCAL_LLM_SEQUENCES);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 16) : 4;
}

type LlamaModule = typeof import('node-llama-cpp');

/** One sequence of the shared context and what runs on it. */
interface Slot {
  sequence: LlamaContextSequence;
  chat: LlamaChat;
  /** the call whose conversation the sequence holds (its tokens stay after the call: the same agent's next call reuses the prompt) */
  owner: object | null;
  busy: boolean;
  usedAt: number;
}

/**
 * The context's sequences, lent to calls. A call gets back its own sequence; else a sequence no call holds (the one
 * whose tokens share the longest prefix with the call's prompt: another call of the same agent left its system
 * prompt there); else a new sequence while the context has some left; else the least recently used idle sequence of
 * another call. While every sequence is generating, requests wait in order.
 */
export class SequencePool {
  private readonly slots: Slot[] = [];
  private readonly held = new Map<object, Slot>();
  private readonly waiting: Array<{ owner: object; prefix: Token[]; grant: (s: Slot) => void }> = [];

  constructor(
    readonly context: LlamaContext,
    private readonly newChat: (sequence: LlamaContextSequence) => LlamaChat,
  ) {}

  get size(): number {
    return this.context.totalSequences;
  }

  /** Requests waiting for a sequence right now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** The sequence `owner` holds now (kept between its requests), if any. */
  heldBy(owner: object): LlamaContextSequence | null {
    return this.held.get(owner)?.sequence ?? null;
  }

  /** A sequence for `owner` to generate on; resolves null when `signal` aborts first. Release it with release(). */
  acquire(owner: object, prefix: Token[], signal: AbortSignal): Promise<Slot | null> {
    const now = this.pick(owner, prefix);
    if (now) return Promise.resolve(this.take(now, owner));
    if (signal.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const entry = {
        owner,
        prefix,
        grant: (s: Slot) => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.take(s, owner));
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(slot: Slot): void {
    slot.busy = false;
    slot.usedAt = performance.now();
    this.pump();
  }

  /** `owner` (a call) is over: its sequence becomes anyone's, its tokens kept for prefix reuse. */
  leave(owner: object): void {
    const s = this.held.get(owner);
    if (!s) return;
    this.held.delete(owner);
    s.owner = null;
    this.pump();
  }

  private take(s: Slot, owner: object): Slot {
    if (s.owner && s.owner !== owner) this.held.delete(s.owner);
    const mine = this.held.get(owner);
    if (mine && mine !== s) mine.owner = null;
    s.owner = owner;
    s.busy = true;
    this.held.set(owner, s);
    return s;
  }

  private pick(owner: object, prefix: Token[]): Slot | null {
    const own = this.held.get(owner);
    if (own && !own.busy) return own;
    const idle = this.slots.filter((s) => !s.busy);
    const free = idle.filter((s) => s.owner === null);
    if (free.length) {
      const shared = (s: Slot) => (prefix.length ? s.sequence.compareContextTokens(prefix).firstDifferentIndex : 0);
      const best = free.map((s) => ({ s, n: shared(s) })).sort((a, b) => b.n - a.n)[0]!;
      if (best.n > 0 || this.context.sequencesLeft === 0) return best.s;
    }
    if (this.context.sequencesLeft > 0) {
      const sequence = this.context.getSequence();
      const slot: Slot = { sequence, chat: this.newChat(sequence), owner: null, busy: false, usedAt: 0 };
      this.slots.push(slot);
      return slot;
    }
    const lru = idle.sort((a, b) => a.usedAt - b.usedAt)[0];
    return lru ?? null;
  }

  private pump(): void {
    while (this.waiting.length) {
      const next = this.waiting[0]!;
      const s = this.pick(next.owner, next.prefix);
      if (!s) return;
      this.waiting.shift();
      next.grant(s);
    }
  }
}

interface Loaded {
  llama: Llama;
  model: LlamaModel;
  pool: SequencePool;
  mod: LlamaModule;
  wrapper: ChatWrapper;
}

/**
 * The Qwen template with the tools section worded for a phone call. Qwen's own text introduces the tools "within
 * <tools></tools> XML tags", and the 0.5B model then answers callers "based on the information provided in the
 * XML"; the signatures and the call syntax are unchanged.
 */
function voiceChatWrapper(mod: LlamaModule): ChatWrapper {
  const { QwenChatWrapper, ChatModelFunctionsDocumentationGenerator, LlamaText, SpecialTokensText } = mod;
  class VoiceQwenChatWrapper extends QwenChatWrapper {
    override generateAvailableFunctionsSystemText(availableFunctions: ChatModelFunctions, { documentParams = true }: { documentParams?: boolean }) {
      const docs = new ChatModelFunctionsDocumentationGenerator(availableFunctions);
      if (!docs.hasAnyFunctions) return LlamaText([]);
      return LlamaText.joinValues('\n', [
        '# Actions',
        '',
        'Besides speaking, you can take these actions:',
        LlamaText(new SpecialTokensText('<tools>')),
        docs.getQwenFunctionSignatures({ documentParams }),
        LlamaText(new SpecialTokensText('</tools>')),
        '',
        'To take one, reply with only:',
        LlamaText(new SpecialTokensText('<tool_call>')),
        '{"name": <action-name>, "arguments": <args-json-object>}',
        LlamaText(new SpecialTokensText('</tool_call>')),
      ]);
    }
  }
  return new VoiceQwenChatWrapper();
}

/** Create a context with `sequences` sequences on a loaded model (tests make small ones beside the shared one). */
export async function createSequencePool(m: Pick<Loaded, 'model' | 'mod' | 'wrapper'>, sequences: number, threads = llmThreads()): Promise<SequencePool> {
  const context = await m.model.createContext({ sequences, contextSize: CONTEXT_TOKENS, threads });
  return new SequencePool(context, (contextSequence) => new m.mod.LlamaChat({ contextSequence, chatWrapper: m.wrapper, autoDisposeSequence: false }));
}

let loading: Promise<Loaded> | null = null;

/** Load (once per process) the verified model file into node-llama-cpp; rejects when it cannot run here. */
export function loadLocalModel(modelsDir?: string): Promise<Loaded> {
  loading ??= (async () => {
    const modelPath = await verifiedModelFile(MODELS[QWEN_MODEL].files[0]!, modelsDir);
    const mod = await import('node-llama-cpp');
    const llama = await mod.getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: mod.LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath });
    const wrapper = voiceChatWrapper(mod);
    const pool = await createSequencePool({ model, mod, wrapper }, llmSequences());
    return { llama, model, pool, mod, wrapper };
  })();
  loading.catch(() => (loading = null));
  return loading;
}

/**
 * Process start: load the model when its file is installed (`npm run setup:llm` is the opt-in), so that no call
 * pays for it (≈ 2–7 s on 2 cores). Null when it is not installed; rejects when it cannot load.
 */
export async function preloadLocalModel(modelsDir?: string): Promise<{ sequences: number; threads: number } | null> {
  if (!(await modelInstalled(QWEN_MODEL, modelsDir))) return null;
  const m = await loadLocalModel(modelsDir);
  return { sequences: m.pool.size, threads: llmThreads() };
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
/** A tail that may still become such a marker: `<to`, a backtick, `{ "nam` */
const MAYBE_NOT_SPEECH = /(<[a-z/_]*|`{1,2}|\{\s*("[a-z]*)?)$/i;

/**
 * How much of a reply streamed so far may be spoken: up to a marker (`stop`: the rest is never spoken), else up to
 * a tail that may still become one (held back until the next text decides).
 */
export function speakable(text: string): { upTo: number; stop: boolean } {
  const at = text.search(NOT_SPEECH);
  if (at >= 0) return { upTo: at, stop: true };
  const tail = text.search(MAYBE_NOT_SPEECH);
  return { upTo: tail >= 0 ? tail : text.length, stop: false };
}

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

/** The tokens the model sees for `messages` with `tools` (the context state node-llama-cpp evaluates). */
function promptTokens(m: Loaded, messages: ChatMessage[], functions: ChatModelFunctions | undefined): Token[] {
  const state = m.wrapper.generateContextState({ chatHistory: toHistory(messages), ...(functions ? { availableFunctions: functions } : {}), documentFunctionParams: true });
  return state.contextText.tokenize(m.model.tokenizer);
}

/** What the conversation's prompt starts with whatever the caller says next: the system prompt, the tools, the history. */
export function stablePrefix(a: Token[], b: Token[]): Token[] {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return a.slice(0, i);
}

export interface LlamaLlmOptions {
  modelsDir?: string;
  /** the sequences to use (default: the process's shared pool) */
  pool?: SequencePool;
  sampling?: Sampling;
  /** end the call through the end-call tool on a caller's farewell without asking the model (farewell.ts); default true */
  farewell?: boolean;
}

/**
 * One call's use of the local model. Its requests run one at a time on the call's sequence (a speculative request
 * and the real one never interleave their tokens); close() hands the sequence back as the call ends.
 */
export class LlamaLlm implements LlmService {
  readonly provider = 'local';
  readonly model = QWEN_MODEL;
  private readonly sampling: Sampling;
  private chain: Promise<unknown> = Promise.resolve();
  /** aborted by close(): a prefill still waiting for a sequence gives up */
  private readonly closing = new AbortController();
  /** the pool this call took a sequence from */
  private pool: SequencePool | null = null;

  constructor(private readonly opts: LlamaLlmOptions = {}) {
    this.sampling = opts.sampling ?? DEFAULT_SAMPLING;
  }

  private async loaded(): Promise<Loaded> {
    const m = await loadLocalModel(this.opts.modelsDir);
    return this.opts.pool ? { ...m, pool: this.opts.pool } : m;
  }

  /** Run `fn` after this call's earlier requests have finished. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => {});
    return run;
  }

  private acquire(m: Loaded, prefix: Token[], signal: AbortSignal): Promise<Slot | null> {
    this.pool = m.pool;
    return m.pool.acquire(this, prefix, signal);
  }

  /**
   * The tools the model is offered: all but the end-call tool, which the farewells decide (farewell.ts). Offered,
   * the 0.5B model ignores it on a goodbye and calls it (or writes it out) on other turns, ending calls early.
   */
  private modelTools(tools: ToolSpec[]): ToolSpec[] {
    if (this.opts.farewell === false) return tools;
    const end = endCallTool(tools);
    return end ? tools.filter((t) => t !== end) : tools;
  }

  /** Load the model (once per process). */
  async prewarm(): Promise<void> {
    await this.loaded();
  }

  /** Evaluate the conversation so far (system prompt, tools, greeting) on the call's sequence now. */
  async prefill(ctx: LlmPrefillContext): Promise<void> {
    const m = await this.loaded();
    await this.serial(async () => {
      if (this.closing.signal.aborted) return;
      const functions = functionsOf(this.modelTools(ctx.tools));
      const prefix = stablePrefix(
        promptTokens(m, [...ctx.messages, { role: 'user', content: 'a' }], functions),
        promptTokens(m, [...ctx.messages, { role: 'user', content: 'b' }], functions),
      );
      const slot = await this.acquire(m, prefix, AbortSignal.any([this.closing.signal, AbortSignal.timeout(30_000)]));
      if (!slot) return;
      try {
        const seq = slot.sequence;
        const { firstDifferentIndex } = seq.compareContextTokens(prefix);
        if (firstDifferentIndex < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: firstDifferentIndex, end: seq.nextTokenIndex }]);
        if (firstDifferentIndex < prefix.length) await seq.evaluateWithoutGeneratingNewTokens(prefix.slice(firstDifferentIndex));
      } finally {
        m.pool.release(slot);
      }
    });
  }

  /** Hand the call's sequence back once its last request has stopped (does not wait for that). */
  async close(): Promise<void> {
    this.closing.abort();
    void this.serial(async () => this.pool?.leave(this));
  }

  /** One answer under a JSON-schema grammar, in a context of its own (llama-schema.ts). */
  completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    return completeWithSchemaLocal(req, this.opts.modelsDir);
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    let m: Loaded;
    try {
      m = await this.loaded();
    } catch (err) {
      throw engineError(`local LLM cannot load: ${(err as Error).message}`, false, true);
    }
    // a caller's farewell ends the call through the end-call tool (the model seldom calls it by itself)
    const bye = this.opts.farewell === false ? null : farewellCall(req.messages, req.tools);
    if (bye) {
      if (req.signal.aborted) return;
      yield { type: 'tool_call', call: { id: `call_${++callSeq}`, ...bye } };
      yield { type: 'usage', usage: { promptTokens: 0, completionTokens: 0 } };
      yield { type: 'done', finishReason: 'tool_calls' };
      return;
    }
    const queue: LlmChunk[] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    let failure: unknown = null;
    const push = (c: LlmChunk) => {
      queue.push(c);
      wake?.();
    };
    void this.serial(() => this.generate(m, req, push)).then(
      () => {},
      (err: unknown) => {
        failure = err;
      },
    ).finally(() => {
      finished = true;
      wake?.();
    });
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
  }

  /** One reply on the call's sequence; resolves once the generation has stopped (done, aborted or failed). */
  private async generate(m: Loaded, req: LlmRequest, push: (c: LlmChunk) => void): Promise<void> {
    if (req.signal.aborted) return;
    const modelTools = this.modelTools(req.tools);
    const functions = functionsOf(modelTools);
    const history = toHistory(req.messages);
    const tokens = promptTokens(m, req.messages, functions);
    const slot = await this.acquire(m, tokens, req.signal);
    if (!slot) return;
    try {
      const seq = slot.sequence;
      const reused = Math.min(seq.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
      const meter = seq.tokenMeter.getState();
      let completion = '';
      /** text before this index has been pushed */
      let spoken = 0;
      /** the model started writing a call or code as text: nothing more is spoken */
      let stopped = -1;
      const s = this.sampling;
      const r = await slot.chat.generateResponse(history, {
        ...(functions ? { functions, documentFunctionParams: true } : {}),
        temperature: req.temperature,
        ...(s.topK !== undefined ? { topK: s.topK } : {}),
        ...(s.topP !== undefined ? { topP: s.topP } : {}),
        ...(s.minP !== undefined ? { minP: s.minP } : {}),
        ...(s.seed !== undefined ? { seed: s.seed } : {}),
        ...(s.repeatPenalty !== undefined && s.repeatPenalty !== 1 ? { repeatPenalty: { penalty: s.repeatPenalty } } : {}),
        maxTokens: req.maxTokens,
        signal: req.signal,
        stopOnAbortSignal: true,
        onTextChunk: (t: string) => {
          completion += t;
          if (stopped >= 0) return;
          const { upTo, stop } = speakable(completion);
          if (upTo > spoken) push({ type: 'text', delta: completion.slice(spoken, upTo) });
          spoken = Math.max(spoken, upTo);
          if (stop) stopped = upTo;
        },
      });
      // a held-back tail that never became a marker is speech after all
      if (stopped < 0 && spoken < completion.length && !req.signal.aborted) push({ type: 'text', delta: completion.slice(spoken) });
      if (req.signal.aborted) return;
      for (const fc of r.functionCalls ?? []) push({ type: 'tool_call', call: { id: `call_${++callSeq}`, name: fc.functionName, arguments: JSON.stringify(fc.params ?? {}) } });
      const written = !r.functionCalls?.length && stopped >= 0 ? callInText(completion.slice(stopped), modelTools) : null;
      if (written) push({ type: 'tool_call', call: { id: `call_${++callSeq}`, ...written } });
      // a reply that takes leave ("You're welcome, have a great day!") ends the call as the model meant to
      const end = this.opts.farewell === false ? null : endCallTool(req.tools);
      const said = completion.slice(0, stopped >= 0 ? stopped : completion.length);
      const leaving = !r.functionCalls?.length && !written && end && isFarewell(said);
      if (leaving) push({ type: 'tool_call', call: { id: `call_${++callSeq}`, name: end.name, arguments: '{}' } });
      const used = seq.tokenMeter.diff(meter);
      push({ type: 'usage', usage: { promptTokens: tokens.length, completionTokens: used.usedOutputTokens, cacheReadTokens: reused } });
      const stop = r.metadata.stopReason;
      push({ type: 'done', finishReason: stop === 'functionCalls' || written || leaving ? 'tool_calls' : stop === 'maxTokens' ? 'length' : 'stop' });
    } finally {
      m.pool.release(slot);
    }
  }
}
