// `local` LLM. Model qwen2.5-coder-0.5b-instruct: node-llama-cpp in process (llama.ts) when its file is installed,
// else the demo responder. Any other model: with LOCAL_LLM_BASE_URL set, any OpenAI-compatible server (Ollama,
// llama.cpp server, vLLM, LM Studio) through the OpenAI adapter, model LOCAL_LLM_MODEL; without it, the demo responder.
//
// The demo responder is a deterministic, rule-based stand-in so a call runs end to end with no model and no network;
// it is not a language model and does not follow the system prompt. It answers the latest message (demoReply): a tool
// result in one sentence; the opener and greetings with "Hello! How can I help you today?"; goodbye by calling the
// offered end-call tool (`end_call` / `endCall`); simple two-operand arithmetic, the time and date (UTC), who it is,
// thanks and yes/no; anything else is echoed back with a pointer to LOCAL_LLM_BASE_URL. Replies stream word by word;
// token usage is estimated (≈ 4 characters per token) so per-call usage metrics fill in as with a real model.
// It has no completeWithSchema: structured answers need the installed model or an OpenAI-compatible server.
import type { Config } from '../../../core/config.ts';
import type { ChatMessage, LlmChunk, LlmPrefillContext, LlmRequest, LlmSchemaRequest, LlmSchemaResult, LlmService } from '../types.ts';
import { engineError, OpenAiCompatLlm } from './openai.ts';
import { LlamaLlm, QWEN_MODEL } from './llama.ts';

const NUM_WORDS: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11, twelve: 12,
  thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19, twenty: 20, thirty: 30,
  forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90, hundred: 100,
};

function numberOf(tok: string): number | null {
  if (/^-?\d+(\.\d+)?$/.test(tok)) return Number(tok);
  return NUM_WORDS[tok] ?? null;
}

/** "what is two plus 3" → 5; null when the text is not a simple two-operand arithmetic question. */
export function simpleArithmetic(text: string): number | null {
  const t = text.toLowerCase().replace(/divided by/g, '/').replace(/multiplied by/g, '*').replace(/[?!.,]/g, ' ');
  const m = t.match(/(-?[\d.]+|[a-z]+)\s*(plus|\+|minus|-|times|x|\*|\/|over)\s*(-?[\d.]+|[a-z]+)/);
  if (!m) return null;
  const a = numberOf(m[1]!);
  const b = numberOf(m[3]!);
  if (a === null || b === null) return null;
  switch (m[2]) {
    case 'plus':
    case '+':
      return a + b;
    case 'minus':
    case '-':
      return a - b;
    case 'times':
    case 'x':
    case '*':
      return a * b;
    default:
      return b === 0 ? null : Math.round((a / b) * 1000) / 1000;
  }
}

export type DemoReply = { text: string } | { toolCall: { name: string; arguments: string } };

/** The demo responder's decision for a conversation (pure; exported for tests). */
export function demoReply(messages: ChatMessage[], toolNames: string[], now = new Date()): DemoReply {
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    const content = last.content.length > 160 ? `${last.content.slice(0, 157)}...` : last.content;
    return { text: `The ${last.name} tool returned: ${content}` };
  }
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  if (!lastUser) return { text: 'Hello! How can I help you today?' };
  const said = lastUser.content.trim();
  const t = said.toLowerCase();
  const has = (re: RegExp) => re.test(t);
  if (has(/\b(good ?bye|bye|hang up|end the call|that'?s all|that is all)\b/)) {
    const endTool = toolNames.find((n) => n === 'end_call' || n === 'endCall');
    if (endTool) return { toolCall: { name: endTool, arguments: '{}' } };
    return { text: 'Goodbye! Thanks for calling.' };
  }
  const math = simpleArithmetic(t);
  if (math !== null) return { text: `That makes ${math}.` };
  if (has(/\bwhat time\b/)) return { text: `It is ${now.toISOString().slice(11, 16)} UTC.` };
  if (has(/\b(what day|what'?s the date|what is the date|today'?s date)\b/))
    return { text: `Today is ${now.toLocaleDateString('en-US', { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' })}.` };
  if (has(/\b(who are you|your name|are you a (robot|bot|human|person))\b/))
    return { text: "I'm the built-in demo assistant of this voice agent service. I can chat a little and end the call when you say goodbye." };
  if (has(/\b(thank|thanks)\b/)) return { text: "You're welcome! Is there anything else I can help with?" };
  if (has(/^(hello|hi|hey|good (morning|afternoon|evening))\b/)) return { text: 'Hello! How can I help you today?' };
  if (has(/^(yes|yeah|yep|sure|okay|ok|alright|no|nope)\b/)) return { text: 'Okay. What else would you like to know?' };
  if (!said) return { text: "Sorry, I didn't catch that. Could you say it again?" };
  return {
    text: `I heard: "${said}". I'm the demo responder, so I can only answer simple questions; connect a real model with LOCAL_LLM_BASE_URL for full answers.`,
  };
}

const estimateTokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));

export class DemoLlm implements LlmService {
  readonly provider = 'local';
  constructor(readonly model: string) {}

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    const reply = demoReply(req.messages, req.tools.map((t) => t.name));
    const prompt = estimateTokens(req.messages.map((m) => m.content).join(' '));
    if ('toolCall' in reply) {
      if (req.signal.aborted) return;
      yield { type: 'tool_call', call: { id: `call_demo_${req.messages.length}`, name: reply.toolCall.name, arguments: reply.toolCall.arguments } };
      yield { type: 'usage', usage: { promptTokens: prompt, completionTokens: 5 } };
      yield { type: 'done', finishReason: 'tool_calls' };
      return;
    }
    // respect maxTokens (≈ words here)
    const words = reply.text.split(/(?<= )/).slice(0, Math.max(1, req.maxTokens));
    for (const w of words) {
      if (req.signal.aborted) return;
      yield { type: 'text', delta: w };
      await new Promise((ok) => setImmediate(ok));
    }
    if (req.signal.aborted) return;
    yield { type: 'usage', usage: { promptTokens: prompt, completionTokens: estimateTokens(words.join('')) } };
    yield { type: 'done', finishReason: words.length < reply.text.split(/(?<= )/).length ? 'length' : 'stop' };
  }
}

/** The `local` LLM engine for this install (OpenAI-compatible server when configured, else the demo responder). */
export function createLocalLlm(config: Pick<Config, 'LOCAL_LLM_BASE_URL' | 'LOCAL_LLM_MODEL'>, model: string, fetchImpl?: typeof fetch, modelsDir?: string): LlmService {
  if (config.LOCAL_LLM_BASE_URL && model !== QWEN_MODEL) {
    return new OpenAiCompatLlm({
      provider: 'local',
      model: config.LOCAL_LLM_MODEL ?? model,
      baseUrl: config.LOCAL_LLM_BASE_URL,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
  }
  if (model === QWEN_MODEL) return new LlamaOrDemo(modelsDir);
  return new DemoLlm(model);
}

let fallbackReported = '';

/**
 * Model `qwen2.5-coder-0.5b-instruct`: node-llama-cpp (llama.ts) when the model file is installed and verified;
 * otherwise the demo responder answers (reported once per process; `model` then says `local-demo`).
 */
class LlamaOrDemo implements LlmService {
  readonly provider = 'local';
  model = QWEN_MODEL;
  private use: Promise<LlmService> | null = null;

  constructor(private readonly modelsDir?: string) {}

  /** The engine this call uses, decided once (prewarm and the first request may ask at the same time). */
  private engine(): Promise<LlmService> {
    this.use ??= (async () => {
      const llama = new LlamaLlm(this.modelsDir ? { modelsDir: this.modelsDir } : {});
      try {
        await llama.prewarm();
        return llama;
      } catch (err) {
        const why = (err as Error).message;
        if (fallbackReported !== why) {
          fallbackReported = why;
          process.emitWarning(`local LLM: ${QWEN_MODEL} cannot run (${why}); the demo responder answers`, 'LocalLlmFallback');
        }
        this.model = 'local-demo';
        return new DemoLlm('local-demo');
      }
    })();
    return this.use;
  }

  async prewarm(): Promise<void> {
    await this.engine();
  }

  async prefill(ctx: LlmPrefillContext): Promise<void> {
    await (await this.engine()).prefill?.(ctx);
  }

  async close(): Promise<void> {
    await (await this.use)?.close?.();
  }

  async *stream(req: LlmRequest): AsyncIterable<LlmChunk> {
    yield* (await this.engine()).stream(req);
  }

  async completeWithSchema(req: LlmSchemaRequest): Promise<LlmSchemaResult> {
    const engine = await this.engine();
    if (!engine.completeWithSchema) throw engineError(DEMO_CANNOT_STRUCTURE, false, true);
    return engine.completeWithSchema(req);
  }
}

/** Why the demo responder has no completeWithSchema. */
export const DEMO_CANNOT_STRUCTURE =
  `the local demo responder cannot answer in a JSON schema: install ${QWEN_MODEL} (npm run setup:llm) or set LOCAL_LLM_BASE_URL`;
