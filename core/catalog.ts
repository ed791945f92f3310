// The model catalog, as data: every provider of the three engine families, its models, its default model, the
// languages each STT/TTS model supports (among the spec's 22 ids; from the vendors' documentation, see
// shared/spec/vendors.md "Languages per model") and the TTS voices where the spec restricts them.
// `GET /agents/models/available` serves exactly this; AgentConfig validation rejects anything not listed here.
// Local engines (providers.md "Local engines"; docs/engines.md), provider id `local` in each family: llm
// `qwen2.5-coder-0.5b-instruct` (in-process via node-llama-cpp once its opt-in model is installed) and `local-demo`
// (LOCAL_LLM_MODEL on the OpenAI-compatible LOCAL_LLM_BASE_URL; both fall back to the deterministic demo responder);
// stt `whisper-tiny.en` (default) and `pocketsphinx`, English only; tts `piper` (voice en_US-joe-medium, English)
// and `espeak-ng` (any eSpeak voice id; LOCAL_TTS_VOICES lists the named ones). Other `local` model ids are rejected.

export const LANGUAGES = ['en', 'hi', 'gu', 'ta', 'te', 'es', 'fr', 'ja', 'de', 'zh', 'ar', 'pt', 'ru', 'mr', 'bn', 'kn', 'ml', 'pa', 'ur', 'id', 'or', 'ne'] as const;
export type Language = (typeof LANGUAGES)[number];

export const LLM_PROVIDERS = ['openai', 'google', 'groq', 'anthropic', 'local'] as const;
export const STT_PROVIDERS = ['soniox', 'deepgram', 'assemblyai', 'sarvam', 'cartesia', 'local'] as const;
export const TTS_PROVIDERS = ['elevenlabs', 'cartesia', 'openai', 'sarvam', 'xai', 'inworld', 'local'] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];
export type TtsProvider = (typeof TTS_PROVIDERS)[number];
export type Family = 'llm' | 'stt' | 'tts';

const allBut = (...excluded: Language[]): Language[] => LANGUAGES.filter((l) => !excluded.includes(l));
const only = (...ids: Language[]): Language[] => LANGUAGES.filter((l) => ids.includes(l));

export interface LlmModel { id: string; label: string }
export interface SpeechModel { id: string; label: string; languages: Language[] }

export interface LlmProviderEntry {
  label: string;
  defaultModel: string;
  models: LlmModel[];
  /** Config variable holding the API key; null = needs none. */
  credentialEnv: string | null;
  /** Temperature range accepted by the vendor; values above max are clamped on save. */
  temperatureMax: number;
}
export interface SttProviderEntry { label: string; defaultModel: string; models: SpeechModel[]; credentialEnv: string | null }
export interface TtsProviderEntry {
  label: string;
  defaultModel: string;
  /** false: the provider has no model selector (tts.model must stay null). */
  hasModelSelector: boolean;
  models: SpeechModel[];
  defaultVoice: string;
  /** null: any voice id of the vendor's voice catalog is accepted; a list: exactly these. */
  voices: string[] | null;
  credentialEnv: string | null;
}

export const catalog: {
  llm: Record<LlmProvider, LlmProviderEntry>;
  stt: Record<SttProvider, SttProviderEntry>;
  tts: Record<TtsProvider, TtsProviderEntry>;
} = {
  llm: {
    openai: {
      label: 'OpenAI',
      defaultModel: 'gpt-4.1-mini',
      credentialEnv: 'OPENAI_API_KEY',
      temperatureMax: 2,
      models: [
        { id: 'gpt-4.1', label: 'GPT-4.1' },
        { id: 'gpt-4.1-mini', label: 'GPT-4.1 mini' },
        { id: 'gpt-4.1-nano', label: 'GPT-4.1 nano' },
        { id: 'gpt-4o', label: 'GPT-4o' },
        { id: 'gpt-4o-mini', label: 'GPT-4o mini' },
        { id: 'gpt-5', label: 'GPT-5' },
        { id: 'gpt-5-mini', label: 'GPT-5 mini' },
        { id: 'gpt-5-nano', label: 'GPT-5 nano' },
      ],
    },
    google: {
      label: 'Google Gemini',
      defaultModel: 'gemini-2.5-flash',
      credentialEnv: 'GOOGLE_API_KEY',
      temperatureMax: 2,
      models: [
        { id: 'gemini-2.5-flash', label: 'Gemini 2.5 Flash' },
        { id: 'gemini-2.5-flash-lite', label: 'Gemini 2.5 Flash-Lite' },
        { id: 'gemini-2.5-pro', label: 'Gemini 2.5 Pro' },
        { id: 'gemini-2.0-flash', label: 'Gemini 2.0 Flash' },
      ],
    },
    groq: {
      label: 'Groq',
      defaultModel: 'llama-3.3-70b-versatile',
      credentialEnv: 'GROQ_API_KEY',
      temperatureMax: 2,
      models: [
        { id: 'llama-3.3-70b-versatile', label: 'Llama 3.3 70B Versatile' },
        { id: 'llama-3.1-8b-instant', label: 'Llama 3.1 8B Instant' },
        { id: 'meta-llama/llama-4-scout-17b-16e-instruct', label: 'Llama 4 Scout' },
        { id: 'openai/gpt-oss-120b', label: 'GPT-OSS 120B' },
        { id: 'openai/gpt-oss-20b', label: 'GPT-OSS 20B' },
      ],
    },
    anthropic: {
      label: 'Anthropic',
      defaultModel: 'claude-haiku-4-5',
      credentialEnv: 'ANTHROPIC_API_KEY',
      temperatureMax: 1,
      models: [
        { id: 'claude-haiku-4-5', label: 'Claude Haiku 4.5' },
        { id: 'claude-sonnet-4-5', label: 'Claude Sonnet 4.5' },
        { id: 'claude-sonnet-4-0', label: 'Claude Sonnet 4' },
        { id: 'claude-opus-4-1', label: 'Claude Opus 4.1' },
      ],
    },
    local: {
      label: 'Local (OpenAI-compatible server at LOCAL_LLM_BASE_URL, else built-in demo responder)',
      defaultModel: 'local-demo',
      credentialEnv: null,
      temperatureMax: 2,
      models: [
        { id: 'local-demo', label: 'Local engine (LOCAL_LLM_MODEL on LOCAL_LLM_BASE_URL; demo responder when unset)' },
        { id: 'qwen2.5-coder-0.5b-instruct', label: 'Qwen2.5-Coder 0.5B Instruct, in-process (node-llama-cpp; opt-in model: npm run setup:llm; demo responder when not installed)' },
      ],
    },
  },
  stt: {
    soniox: {
      label: 'Soniox',
      defaultModel: 'stt-rt-v5',
      credentialEnv: 'SONIOX_API_KEY',
      models: [
        { id: 'stt-rt-v5', label: 'Soniox real-time v5', languages: allBut('or', 'ne') },
        { id: 'stt-rt-v4', label: 'Soniox real-time v4', languages: allBut('or', 'ne') },
      ],
    },
    deepgram: {
      label: 'Deepgram Flux',
      defaultModel: 'flux-general-en',
      credentialEnv: 'DEEPGRAM_API_KEY',
      models: [
        { id: 'flux-general-en', label: 'Flux general (English)', languages: only('en') },
        { id: 'flux-general-multi', label: 'Flux general (multilingual)', languages: only('en', 'es', 'fr', 'de', 'hi', 'ru', 'pt', 'ja') },
      ],
    },
    assemblyai: {
      label: 'AssemblyAI Universal streaming',
      defaultModel: 'universal-streaming-english',
      credentialEnv: 'ASSEMBLYAI_API_KEY',
      models: [
        { id: 'universal-streaming-english', label: 'Universal streaming (English)', languages: only('en') },
        { id: 'universal-streaming-multilingual', label: 'Universal streaming (multilingual)', languages: only('en', 'es', 'fr', 'de', 'pt') },
        { id: 'u3-rt-pro', label: 'Universal-3 real-time Pro', languages: only('en', 'es', 'fr', 'de', 'pt') },
        { id: 'universal-3-5-pro', label: 'Universal-3.5 Pro', languages: only('en', 'es', 'de', 'fr', 'pt', 'hi', 'ar', 'ja', 'ur', 'zh') },
      ],
    },
    sarvam: {
      label: 'Sarvam saaras',
      defaultModel: 'saaras:v3',
      credentialEnv: 'SARVAM_API_KEY',
      models: [{ id: 'saaras:v3', label: 'Saaras v3', languages: only('en', 'hi', 'bn', 'gu', 'kn', 'ml', 'mr', 'or', 'pa', 'ta', 'te', 'ur', 'ne') }],
    },
    cartesia: {
      label: 'Cartesia Ink',
      defaultModel: 'ink-2',
      credentialEnv: 'CARTESIA_API_KEY',
      models: [
        { id: 'ink-2', label: 'Ink 2', languages: only('en') },
        { id: 'ink-whisper', label: 'Ink Whisper', languages: allBut('or') },
      ],
    },
    local: {
      label: 'Local (Whisper tiny.en, offline; PocketSphinx where Whisper is not installed)',
      defaultModel: 'whisper-tiny.en',
      credentialEnv: null,
      models: [
        { id: 'whisper-tiny.en', label: 'Whisper tiny.en (English; whisper.cpp)', languages: only('en') },
        { id: 'pocketsphinx', label: 'PocketSphinx (English)', languages: only('en') },
      ],
    },
  },
  tts: {
    elevenlabs: {
      label: 'ElevenLabs',
      defaultModel: 'eleven_flash_v2_5',
      hasModelSelector: true,
      defaultVoice: '21m00Tcm4TlvDq8ikWAM',
      voices: null,
      credentialEnv: 'ELEVENLABS_API_KEY',
      models: [
        { id: 'eleven_flash_v2_5', label: 'Flash v2.5', languages: only('en', 'hi', 'ta', 'es', 'fr', 'ja', 'de', 'zh', 'ar', 'pt', 'ru', 'id') },
        { id: 'eleven_turbo_v2_5', label: 'Turbo v2.5', languages: only('en', 'hi', 'ta', 'es', 'fr', 'ja', 'de', 'zh', 'ar', 'pt', 'ru', 'id') },
        { id: 'eleven_v3', label: 'Eleven v3 (conversational; reads only stability)', languages: allBut('or') },
        { id: 'eleven_turbo_v4', label: 'Turbo v4 (reads only stability)', languages: only('en', 'hi', 'ta', 'es', 'fr', 'ja', 'de', 'zh', 'ar', 'pt', 'ru', 'id') },
      ],
    },
    cartesia: {
      label: 'Cartesia Sonic',
      defaultModel: 'sonic-3',
      hasModelSelector: true,
      defaultVoice: 'f786b574-daa5-4673-aa0c-cbe3e8534c02',
      voices: null,
      credentialEnv: 'CARTESIA_API_KEY',
      models: [{ id: 'sonic-3', label: 'Sonic 3', languages: allBut('ne') }],
    },
    openai: {
      label: 'OpenAI speech',
      defaultModel: 'gpt-4o-mini-tts',
      hasModelSelector: true,
      defaultVoice: 'alloy',
      voices: null,
      credentialEnv: 'OPENAI_API_KEY',
      // Not documented per language; the major languages the vendor lists for its speech models.
      models: ['gpt-4o-mini-tts', 'tts-1', 'tts-1-hd'].map((id) => ({
        id,
        label: id,
        languages: only('en', 'hi', 'ta', 'mr', 'es', 'fr', 'ja', 'de', 'zh', 'ar', 'pt', 'ru', 'id', 'ur', 'kn', 'ne'),
      })),
    },
    sarvam: {
      label: 'Sarvam bulbul',
      defaultModel: 'bulbul:v3',
      hasModelSelector: true,
      defaultVoice: 'anushka',
      voices: null,
      credentialEnv: 'SARVAM_API_KEY',
      models: ['bulbul:v3', 'bulbul:v2'].map((id) => ({ id, label: id, languages: only('en', 'hi', 'bn', 'gu', 'kn', 'ml', 'mr', 'or', 'pa', 'ta', 'te') })),
    },
    xai: {
      label: 'xAI',
      defaultModel: 'xai-tts',
      hasModelSelector: false,
      defaultVoice: 'eve',
      voices: ['ara', 'eve', 'leo', 'rex', 'sal'],
      credentialEnv: 'XAI_API_KEY',
      models: [{ id: 'xai-tts', label: 'xAI TTS (no model selector)', languages: only('en', 'ar', 'bn', 'zh', 'fr', 'de', 'hi', 'id', 'ja', 'pt', 'ru', 'es') }],
    },
    inworld: {
      label: 'Inworld',
      defaultModel: 'inworld-tts-1.5-max',
      hasModelSelector: true,
      defaultVoice: 'Ashley',
      voices: null,
      credentialEnv: 'INWORLD_API_KEY',
      models: ['inworld-tts-1.5-max', 'inworld-tts-1.5-mini', 'inworld-tts-2'].map((id) => ({
        id,
        label: id,
        languages: only('en', 'zh', 'ja', 'ru', 'es', 'pt', 'fr', 'de', 'hi', 'ar'),
      })),
    },
    local: {
      label: 'Local (Piper neural voice for English, eSpeak NG otherwise; offline)',
      defaultModel: 'piper',
      hasModelSelector: true,
      defaultVoice: 'default',
      voices: null,
      credentialEnv: null,
      // eSpeak NG ships voices for all 22 ids (quality varies; zh is Mandarin 'cmn', or is 'or', ne is 'ne').
      models: [
        // English is spoken by the Piper voice; the other languages (no Piper voice installed) by eSpeak NG
        { id: 'piper', label: 'Piper neural voice en_US-joe-medium for English (eSpeak NG for other languages and where the voice is not installed)', languages: [...LANGUAGES] },
        { id: 'espeak-ng', label: 'eSpeak NG', languages: [...LANGUAGES] },
      ],
    },
  },
};

/** The `local` TTS's named voices (eSpeak NG also accepts any of its own voice ids, so the entry's voices stay null). */
export const LOCAL_TTS_VOICES: readonly { id: string; model: string; label: string }[] = [
  { id: 'en_US-joe-medium', model: 'piper', label: 'Joe (US English, Piper neural voice)' },
  { id: 'default', model: 'espeak-ng', label: "eSpeak NG's voice for the agent's first language" },
  { id: 'en-us', model: 'espeak-ng', label: 'eSpeak NG US English' },
  { id: 'en-gb', model: 'espeak-ng', label: 'eSpeak NG British English' },
];

export function llmEntry(provider: string): LlmProviderEntry | undefined {
  return (catalog.llm as Record<string, LlmProviderEntry>)[provider];
}
export function sttEntry(provider: string): SttProviderEntry | undefined {
  return (catalog.stt as Record<string, SttProviderEntry>)[provider];
}
export function ttsEntry(provider: string): TtsProviderEntry | undefined {
  return (catalog.tts as Record<string, TtsProviderEntry>)[provider];
}

/** The model a config actually uses: the given id, or the provider default for null. */
export function effectiveModel(family: Family, provider: string, model: string | null | undefined): string | undefined {
  if (model) return model;
  const entry = family === 'llm' ? llmEntry(provider) : family === 'stt' ? sttEntry(provider) : ttsEntry(provider);
  return entry?.defaultModel;
}

/** The catalog model entry, or undefined when off-catalog. */
export function findModel(family: Family, provider: string, model: string): LlmModel | SpeechModel | undefined {
  const entry = family === 'llm' ? llmEntry(provider) : family === 'stt' ? sttEntry(provider) : ttsEntry(provider);
  return entry?.models.find((m) => m.id === model);
}

export function speechLanguages(family: 'stt' | 'tts', provider: string, model: string | null | undefined): Language[] | undefined {
  const id = effectiveModel(family, provider, model);
  if (!id) return undefined;
  const m = findModel(family, provider, id) as SpeechModel | undefined;
  return m?.languages;
}

/** Public, JSON-ready form of the catalog for GET /agents/models/available. */
export function catalogView() {
  const fam = <E extends { label: string; defaultModel: string; models: unknown[] }>(rec: Record<string, E>, extra: (e: E) => Record<string, unknown> = () => ({})) =>
    Object.entries(rec).map(([id, e]) => ({ provider: id, label: e.label, defaultModel: e.defaultModel, ...extra(e), models: e.models }));
  return {
    languages: [...LANGUAGES],
    llm: fam(catalog.llm, (e) => ({ temperatureRange: [0, e.temperatureMax] })),
    stt: fam(catalog.stt),
    tts: fam(catalog.tts, (e) => ({ hasModelSelector: e.hasModelSelector, defaultVoice: e.defaultVoice, voices: e.voices })),
  };
}
