// Engine factories: provider id → factory, per family. Which ids have an adapter is decided by the one registry
// core/providers.ts (the api reads it too, to refuse a call up front). createEngines(config, agent) builds one call's
// engines; an id without an adapter on this install throws EngineUnavailableError (the session turns that into an
// `error` event and ends the call). Tests and benchmarks pass `overrides` to replace or add factories.
// Adapters: LLM openai, groq (OpenAI Chat Completions streaming), anthropic (Messages API), google (Gemini
// streamGenerateContent), local (Qwen through node-llama-cpp, an OpenAI-compatible server, or the demo responder);
// STT local (Whisper, else PocketSphinx 5), soniox, deepgram (Flux), assemblyai (v3 streaming), sarvam (saaras),
// cartesia (Ink turns), the vendors over one WebSocket per call (stt/ws-session.ts); TTS local (Piper, else eSpeak
// NG), elevenlabs (multi-stream-input contexts; eleven_v3 over HTTP streaming), cartesia, inworld (contexts per
// reply), xai, sarvam (one generation at a time), openai (HTTP speech endpoint), each in tts/<id>.ts. Turn model:
// Smart Turn v3.2 (turn/smart-turn.ts) for the STTs without an end of turn of their own.
import type { Config } from '../../core/config.ts';
import type { Engines, LlmService, SttService, TtsService } from './types.ts';
import { ttsEntry } from '../../core/catalog.ts';
import { hasAdapter } from '../../core/providers.ts';
import { createLlm } from './llm/factory.ts';
import { createLocalStt } from './stt/local.ts';
import { SonioxStt } from './stt/soniox.ts';
import { DeepgramStt, deepgramDefaultModel } from './stt/deepgram.ts';
import { AssemblyAiStt, assemblyAiDefaultModel } from './stt/assemblyai.ts';
import { SarvamStt } from './stt/sarvam.ts';
import { CartesiaStt, cartesiaDefaultModel } from './stt/cartesia.ts';
import { createLocalTts } from './tts/local.ts';
import { ElevenLabsTts } from './tts/elevenlabs.ts';
import { CartesiaTts } from './tts/cartesia.ts';
import { InworldTts } from './tts/inworld.ts';
import { XaiTts } from './tts/xai.ts';
import { SarvamTts } from './tts/sarvam.ts';
import { OpenAiTts } from './tts/openai.ts';
import { createSmartTurn } from './turn/smart-turn.ts';

/** The parts of an agent's config the engines need (a CallConfig / AgentConfig snapshot fits). */
export interface EngineAgentConfig {
  llm: { provider: string; model: string | null; temperature?: number; maxTokens?: number };
  stt: { provider: string; model: string | null; [block: string]: unknown };
  tts: { provider: string; model: string | null; voice: string | null; [block: string]: unknown };
  languages: string[];
  /** Optional text the local STT adds to its vocabulary. */
  systemPrompt?: string;
  greeting?: { firstMessages?: string[] };
  tools?: unknown[];
}

export interface EngineContext {
  config: Config;
  agent: EngineAgentConfig;
}

export interface EngineFactories {
  llm: Record<string, (ctx: EngineContext) => LlmService>;
  stt: Record<string, (ctx: EngineContext) => SttService>;
  tts: Record<string, (ctx: EngineContext) => TtsService>;
}

export class EngineUnavailableError extends Error {
  constructor(
    readonly family: 'llm' | 'stt' | 'tts',
    readonly providerId: string,
  ) {
    super(`provider '${providerId}' is not available on this install`);
    this.name = 'EngineUnavailableError';
  }
}

/** Words the agent is likely to hear: its prompt, greetings and tool descriptions (local STT vocabulary). */
export function agentCorpus(agent: EngineAgentConfig): string[] {
  const out: string[] = [];
  if (agent.systemPrompt) out.push(agent.systemPrompt.replace(/\{\{[^}]*\}\}/g, ' '));
  for (const m of agent.greeting?.firstMessages ?? []) out.push(m.replace(/\{\{[^}]*\}\}/g, ' '));
  for (const t of agent.tools ?? []) {
    const tool = t as { name?: unknown; description?: unknown; function?: { description?: unknown } };
    const d = tool.description ?? tool.function?.description;
    if (typeof d === 'string') out.push(d);
  }
  return out;
}

const key = (k: string | undefined) => (k ? { apiKey: k } : {});
/** The agent's STT tuning block for `provider` (empty when absent: adapters apply the spec's defaults). */
function sttBlock<T extends object>(agent: EngineAgentConfig, provider: string): T {
  const b = agent.stt[provider];
  return (b && typeof b === 'object' ? b : {}) as T;
}

/** The agent's TTS tuning block for `provider` (empty when absent: adapters apply the spec's defaults). */
function ttsBlock<T extends object>(agent: EngineAgentConfig, provider: string): T {
  const b = agent.tts[provider];
  return (b && typeof b === 'object' ? b : {}) as T;
}
/** Model and voice (the catalog's defaults when null) and languages of a TTS provider. */
function ttsCommon(agent: EngineAgentConfig, provider: string): { model: string; voice: string; languages: string[] } {
  const entry = ttsEntry(provider);
  return { model: agent.tts.model ?? entry?.defaultModel ?? provider, voice: agent.tts.voice ?? entry?.defaultVoice ?? 'default', languages: agent.languages };
}

export const defaultFactories: EngineFactories = {
  llm: {
    openai: ({ config, agent }) => createLlm(config, 'openai', agent.llm.model),
    groq: ({ config, agent }) => createLlm(config, 'groq', agent.llm.model),
    anthropic: ({ config, agent }) => createLlm(config, 'anthropic', agent.llm.model),
    google: ({ config, agent }) => createLlm(config, 'google', agent.llm.model),
    local: ({ config, agent }) => createLlm(config, 'local', agent.llm.model),
  },
  stt: {
    local: ({ config, agent }) =>
      createLocalStt(agent.stt.model ?? 'whisper-tiny.en', {
        corpus: agentCorpus(agent),
        ...(agent.greeting?.firstMessages?.[0] ? { greeting: agent.greeting.firstMessages[0] } : {}),
        ...(config.LOCAL_STT_PYTHON ? { python: config.LOCAL_STT_PYTHON } : {}),
      }),
    soniox: ({ config, agent }) =>
      new SonioxStt({ baseUrl: config.SONIOX_BASE_URL, model: agent.stt.model ?? 'stt-rt-v5', block: sttBlock(agent, 'soniox'), ...key(config.SONIOX_API_KEY) }),
    deepgram: ({ config, agent }) =>
      new DeepgramStt({ baseUrl: config.DEEPGRAM_BASE_URL, model: agent.stt.model ?? deepgramDefaultModel(agent.languages), block: sttBlock(agent, 'deepgram'), ...key(config.DEEPGRAM_API_KEY) }),
    assemblyai: ({ config, agent }) =>
      new AssemblyAiStt({ baseUrl: config.ASSEMBLYAI_BASE_URL, model: agent.stt.model ?? assemblyAiDefaultModel(agent.languages), block: sttBlock(agent, 'assemblyai'), ...key(config.ASSEMBLYAI_API_KEY) }),
    sarvam: ({ config, agent }) =>
      new SarvamStt({ baseUrl: config.SARVAM_BASE_URL, model: agent.stt.model ?? 'saaras:v3', block: sttBlock(agent, 'sarvam'), ...key(config.SARVAM_API_KEY) }),
    cartesia: ({ config, agent }) =>
      new CartesiaStt({ baseUrl: config.CARTESIA_BASE_URL, model: agent.stt.model ?? cartesiaDefaultModel(agent.languages), block: sttBlock(agent, 'cartesia'), ...key(config.CARTESIA_API_KEY) }),
  },
  tts: {
    local: ({ agent }) => createLocalTts({ model: agent.tts.model, voice: agent.tts.voice, languages: agent.languages }),
    elevenlabs: ({ config, agent }) =>
      new ElevenLabsTts({ baseUrl: config.ELEVENLABS_BASE_URL, ...ttsCommon(agent, 'elevenlabs'), tuning: ttsBlock(agent, 'elevenlabs'), ...key(config.ELEVENLABS_API_KEY) }),
    cartesia: ({ config, agent }) =>
      new CartesiaTts({ baseUrl: config.CARTESIA_BASE_URL, ...ttsCommon(agent, 'cartesia'), tuning: ttsBlock(agent, 'cartesia'), ...key(config.CARTESIA_API_KEY) }),
    inworld: ({ config, agent }) =>
      new InworldTts({ baseUrl: config.INWORLD_BASE_URL, ...ttsCommon(agent, 'inworld'), tuning: ttsBlock(agent, 'inworld'), ...key(config.INWORLD_API_KEY) }),
    xai: ({ config, agent }) =>
      new XaiTts({ baseUrl: config.XAI_BASE_URL, voice: ttsCommon(agent, 'xai').voice, languages: agent.languages, tuning: ttsBlock(agent, 'xai'), ...key(config.XAI_API_KEY) }),
    openai: ({ config, agent }) =>
      new OpenAiTts({ baseUrl: config.OPENAI_BASE_URL, ...ttsCommon(agent, 'openai'), tuning: ttsBlock(agent, 'openai'), ...key(config.OPENAI_API_KEY) }),
    // a null voice is the model's own default speaker (bulbul v3 and v2 have different speaker sets)
    sarvam: ({ config, agent }) =>
      new SarvamTts({ baseUrl: config.SARVAM_BASE_URL, ...ttsCommon(agent, 'sarvam'), voice: agent.tts.voice, tuning: ttsBlock(agent, 'sarvam'), ...key(config.SARVAM_API_KEY) }),
  },
};

/**
 * Build one call's engines. Throws EngineUnavailableError for a provider without an adapter. An STT without an end
 * of turn of its own (`local`, `sarvam`) gets the Smart Turn model to decide when the caller's turn is over.
 */
export function createEngines(config: Config, agent: EngineAgentConfig, overrides?: Partial<EngineFactories>): Engines {
  const ctx: EngineContext = { config, agent };
  const pick = <F extends 'llm' | 'stt' | 'tts'>(family: F, id: string): EngineFactories[F][string] => {
    const f = overrides?.[family]?.[id] ?? (hasAdapter(family, id) ? defaultFactories[family][id] : undefined);
    if (!f) throw new EngineUnavailableError(family, id);
    return f as EngineFactories[F][string];
  };
  const llm = pick('llm', agent.llm.provider)(ctx);
  const stt = pick('stt', agent.stt.provider)(ctx);
  const tts = pick('tts', agent.tts.provider)(ctx);
  if (stt.hasTurnDetection) return { llm, stt, tts };
  return { llm, stt, tts, turn: createSmartTurn(config.LOCAL_TURN_WORKERS ? { workers: config.LOCAL_TURN_WORKERS } : {}) };
}
