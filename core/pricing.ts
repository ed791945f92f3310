// The price table (USD) kept as data, and the call cost computed from the spec's `usage` shape:
// LLM per 1K prompt/completion tokens, TTS per character, STT per second of audio. `local` engines cost 0.
// A model missing from a provider's table is priced at that provider's '*' row; an unknown provider costs 0
// (and is logged by the caller). Telephony is the customer's carrier bill and not included.

export interface LlmPrice { inputPer1K: number; outputPer1K: number; cachedInputPer1K?: number }
export interface TtsPrice { perCharacter: number }
export interface SttPrice { perSecond: number }

export interface PriceTable {
  llm: Record<string, Record<string, LlmPrice>>;
  tts: Record<string, Record<string, TtsPrice>>;
  stt: Record<string, Record<string, SttPrice>>;
}

/** List prices as published by the vendors; operators adjust here. */
export const PRICES: PriceTable = {
  llm: {
    openai: {
      '*': { inputPer1K: 0.0025, outputPer1K: 0.01 },
      'gpt-4o': { inputPer1K: 0.0025, outputPer1K: 0.01, cachedInputPer1K: 0.00125 },
      'gpt-4o-mini': { inputPer1K: 0.00015, outputPer1K: 0.0006, cachedInputPer1K: 0.000075 },
      'gpt-4.1': { inputPer1K: 0.002, outputPer1K: 0.008, cachedInputPer1K: 0.0005 },
      'gpt-4.1-mini': { inputPer1K: 0.0004, outputPer1K: 0.0016, cachedInputPer1K: 0.0001 },
      'gpt-4.1-nano': { inputPer1K: 0.0001, outputPer1K: 0.0004, cachedInputPer1K: 0.000025 },
      'gpt-5': { inputPer1K: 0.00125, outputPer1K: 0.01, cachedInputPer1K: 0.000125 },
      'gpt-5-mini': { inputPer1K: 0.00025, outputPer1K: 0.002, cachedInputPer1K: 0.000025 },
      'gpt-5-nano': { inputPer1K: 0.00005, outputPer1K: 0.0004, cachedInputPer1K: 0.000005 },
    },
    groq: {
      '*': { inputPer1K: 0.00059, outputPer1K: 0.00079 },
      'llama-3.3-70b-versatile': { inputPer1K: 0.00059, outputPer1K: 0.00079 },
      'llama-3.1-8b-instant': { inputPer1K: 0.00005, outputPer1K: 0.00008 },
      'openai/gpt-oss-120b': { inputPer1K: 0.00015, outputPer1K: 0.00075 },
      'openai/gpt-oss-20b': { inputPer1K: 0.0001, outputPer1K: 0.0005 },
    },
    anthropic: {
      '*': { inputPer1K: 0.003, outputPer1K: 0.015 },
      'claude-3-5-haiku-latest': { inputPer1K: 0.0008, outputPer1K: 0.004, cachedInputPer1K: 0.00008 },
      'claude-haiku-4-5': { inputPer1K: 0.001, outputPer1K: 0.005, cachedInputPer1K: 0.0001 },
      'claude-sonnet-4-5': { inputPer1K: 0.003, outputPer1K: 0.015, cachedInputPer1K: 0.0003 },
      'claude-sonnet-4-0': { inputPer1K: 0.003, outputPer1K: 0.015, cachedInputPer1K: 0.0003 },
    },
    google: {
      '*': { inputPer1K: 0.0003, outputPer1K: 0.0025 },
      'gemini-2.0-flash': { inputPer1K: 0.0001, outputPer1K: 0.0004 },
      'gemini-2.5-flash': { inputPer1K: 0.0003, outputPer1K: 0.0025 },
      'gemini-2.5-flash-lite': { inputPer1K: 0.0001, outputPer1K: 0.0004 },
      'gemini-2.5-pro': { inputPer1K: 0.00125, outputPer1K: 0.01 },
    },
    local: { '*': { inputPer1K: 0, outputPer1K: 0 } },
  },
  tts: {
    // elevenlabs.io/pricing/api: v3 is billed like Multilingual v2 (1 credit per character), turbo v4 like the
    // Flash/Turbo v2.5 family (half that)
    elevenlabs: {
      '*': { perCharacter: 0.0003 },
      eleven_flash_v2_5: { perCharacter: 0.00015 },
      eleven_turbo_v2_5: { perCharacter: 0.00015 },
      eleven_multilingual_v2: { perCharacter: 0.0003 },
      eleven_v3: { perCharacter: 0.0003 },
      eleven_turbo_v4: { perCharacter: 0.00015 },
    },
    // cartesia.ai/pricing: 1 credit per character (Startup plan $49 / 1.25M credits)
    cartesia: { '*': { perCharacter: 0.000038 }, 'sonic-3': { perCharacter: 0.000038 }, 'sonic-2': { perCharacter: 0.000038 } },
    // openai.com/api/pricing: tts-1 $15, tts-1-hd $30 per 1M characters; gpt-4o-mini-tts ≈ $0.015 per minute
    openai: {
      '*': { perCharacter: 0.000015 },
      'tts-1': { perCharacter: 0.000015 },
      'tts-1-hd': { perCharacter: 0.00003 },
      'gpt-4o-mini-tts': { perCharacter: 0.000012 },
    },
    // sarvam.ai/api-pricing: bulbul v2 ₹15 and v3 ₹30 per 10K characters (at ₹83 per USD)
    sarvam: { '*': { perCharacter: 0.000018 }, 'bulbul:v2': { perCharacter: 0.000018 }, 'bulbul:v3': { perCharacter: 0.000036 } },
    // docs.x.ai (TTS beta): $4.20 per 1M characters
    xai: { '*': { perCharacter: 0.0000042 }, 'xai-tts': { perCharacter: 0.0000042 } },
    // inworld.ai/pricing: TTS-1.5 Mini $5, TTS-1.5 Max $10, TTS-2 $35 per 1M characters
    inworld: {
      '*': { perCharacter: 0.00001 },
      'inworld-tts-1.5-mini': { perCharacter: 0.000005 },
      'inworld-tts-1.5-max': { perCharacter: 0.00001 },
      'inworld-tts-2': { perCharacter: 0.000035 },
    },
    local: { '*': { perCharacter: 0 } },
  },
  stt: {
    // Soniox real-time: $0.12 per hour of audio streamed (soniox.com/pricing), v4 and v5 alike.
    soniox: { '*': { perSecond: 0.12 / 3600 }, 'stt-rt-v5': { perSecond: 0.12 / 3600 }, 'stt-rt-v4': { perSecond: 0.12 / 3600 } },
    // Deepgram Flux streaming: $0.0077 per minute pay-as-you-go (deepgram.com/pricing); multi priced as en until listed apart.
    deepgram: { '*': { perSecond: 0.0077 / 60 }, 'flux-general-en': { perSecond: 0.0077 / 60 }, 'flux-general-multi': { perSecond: 0.0077 / 60 } },
    // AssemblyAI streaming, billed on session duration: Universal-Streaming (English and multilingual) $0.15/h
    // (assemblyai.com/blog/introducing-universal-streaming); Universal-3 Pro streaming $0.45/h (assemblyai.com/pricing);
    // universal-3-5-pro priced as Universal-3 Pro.
    assemblyai: {
      '*': { perSecond: 0.15 / 3600 },
      'universal-streaming-english': { perSecond: 0.15 / 3600 },
      'universal-streaming-multilingual': { perSecond: 0.15 / 3600 },
      'u3-rt-pro': { perSecond: 0.45 / 3600 },
      'universal-3-5-pro': { perSecond: 0.45 / 3600 },
    },
    // Sarvam saaras streaming: ₹30 per hour ≈ $0.36/h (dashboard.sarvam.ai/pricing).
    sarvam: { '*': { perSecond: 0.36 / 3600 }, 'saaras:v3': { perSecond: 0.36 / 3600 } },
    // Cartesia STT (docs.cartesia.ai/pricing): ink-2 3 credits/s, ink-whisper 1 credit/s; a credit ≈ $0.000038
    // (the TTS row above), so ≈ $0.41/h and $0.137/h.
    cartesia: { '*': { perSecond: 0.13 / 3600 }, 'ink-2': { perSecond: 3 * 0.000038 }, 'ink-whisper': { perSecond: 0.000038 } },
    local: { '*': { perSecond: 0 } },
  },
};

function price<T>(table: Record<string, Record<string, T>>, provider: unknown, model: unknown): T | null {
  if (typeof provider !== 'string') return null;
  const byModel = table[provider];
  if (!byModel) return null;
  return (typeof model === 'string' ? byModel[model] : undefined) ?? byModel['*'] ?? null;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

export interface CostBreakdown {
  llm: number;
  tts: number;
  stt: number;
  total: number;
  /** provider/model pairs not in the table (priced at 0). */
  unpriced: string[];
}

/**
 * Cost of a call from its usage. `fallbackSttSeconds` (the call's duration) prices STT when the STT service
 * emitted no `seconds` metric: streaming STT is billed for the audio streamed, which is the call's length.
 */
export function computeCost(usage: unknown, opts: { fallbackSttSeconds?: number | null; table?: PriceTable } = {}): CostBreakdown {
  const table = opts.table ?? PRICES;
  const out: CostBreakdown = { llm: 0, tts: 0, stt: 0, total: 0, unpriced: [] };
  if (!usage || typeof usage !== 'object') return out;
  const u = usage as { llm?: unknown; tts?: unknown; stt?: unknown };
  const llms = Array.isArray(u.llm) ? u.llm : u.llm ? [u.llm] : [];
  for (const entry of llms as Array<Record<string, unknown>>) {
    if (!entry || typeof entry !== 'object') continue;
    const p = price(table.llm, entry.provider, entry.model);
    if (!p) {
      out.unpriced.push(`llm:${String(entry.provider)}/${String(entry.model)}`);
      continue;
    }
    const cached = num(entry.cache_read_tokens);
    const prompt = num(entry.prompt_tokens);
    const uncached = Math.max(0, prompt - cached);
    out.llm += (uncached * p.inputPer1K + cached * (p.cachedInputPer1K ?? p.inputPer1K) + num(entry.completion_tokens) * p.outputPer1K) / 1000;
  }
  const ttss = Array.isArray(u.tts) ? u.tts : u.tts ? [u.tts] : [];
  for (const entry of ttss as Array<Record<string, unknown>>) {
    if (!entry || typeof entry !== 'object') continue;
    const p = price(table.tts, entry.provider, entry.model);
    if (!p) out.unpriced.push(`tts:${String(entry.provider)}/${String(entry.model)}`);
    else out.tts += num(entry.characters) * p.perCharacter;
  }
  const stts = Array.isArray(u.stt) ? u.stt : u.stt ? [u.stt] : [];
  for (const entry of stts as Array<Record<string, unknown>>) {
    if (!entry || typeof entry !== 'object') continue;
    const p = price(table.stt, entry.provider, entry.model);
    if (!p) {
      out.unpriced.push(`stt:${String(entry.provider)}/${String(entry.model)}`);
      continue;
    }
    const seconds = typeof entry.seconds === 'number' ? num(entry.seconds) : num(opts.fallbackSttSeconds);
    out.stt += seconds * p.perSecond;
  }
  const round = (v: number) => Math.round(v * 1e6) / 1e6;
  out.llm = round(out.llm);
  out.tts = round(out.tts);
  out.stt = round(out.stt);
  out.total = round(out.llm + out.tts + out.stt);
  return out;
}
