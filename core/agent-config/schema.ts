// The one AgentConfig schema (spec "AgentConfig", "Inline tool"): strict everywhere, every default materialised.
// Used for saved agents, inline agents on POST /call, previews, inbound bindings and call snapshots.
//
// Ranges the spec leaves open are chosen here (also visible in the OpenAPI document; see docs/agents.md): name
// 1..120 (not blank), description ≤ 5000, systemPrompt ≤ 100000, timezone an IANA zone ≤ 64; languages 1..50 before
// de-duplication; message lists ≤ 5 entries of ≤ 1000 chars (blank entries dropped); headers ≤ 50, names HTTP tokens
// ≤ 100, values ≤ 4096 without CR/LF/NUL; contextVariables ≤ 200 keys of 1..100 chars, values ≤ 2000; tools ≤ 50,
// descriptions ≤ 2000. STT term lists and the sound blocks carry their limits in the schemas below.
import { z } from 'zod';
import { IANAZone } from 'luxon';
import { LANGUAGES, LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS, catalog } from '../catalog.ts';
import { analysisSchema } from './analysis.ts';

/** Custom rule violations: `params.type` becomes the item type (validation.ts). */
function fail(ctx: z.RefinementCtx, path: (string | number)[], message: string, type = 'value_error') {
  ctx.addIssue({ code: 'custom', path, message, params: { type } });
}

export const INT_MESSAGE = 'Input should be a valid integer';
/** Integers report `int_type` for any non-integer input (issues.ts maps the message). */
const int = (min: number, max: number) =>
  z.number({ error: (iss) => (iss.code === 'invalid_type' ? INT_MESSAGE : undefined) }).int({ error: INT_MESSAGE }).min(min).max(max);
const num = (min: number, max: number) => z.number().min(min).max(max);

/** A list of up to `max` strings; blank entries are dropped. */
const cleanList = (max: number, maxLen = 1000) =>
  z.array(z.string().max(maxLen)).max(max).transform((l) => l.filter((s) => s.trim().length > 0));

export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
export const headersSchema = z
  .record(
    z.string().regex(HEADER_NAME, 'Header names must be HTTP tokens (letters, digits and !#$%&\'*+.^_`|~-), at most 100 chars'),
    z.string().max(4096).regex(/^[^\r\n\0]*$/, 'Header values must not contain CR, LF or NUL'),
  )
  .superRefine((h, ctx) => {
    if (Object.keys(h).length > 50) fail(ctx, [], 'At most 50 headers are allowed', 'too_long');
  });

const httpUrl = (max: number) =>
  z.string().max(max).regex(/^https?:\/\//i, 'URL must start with http:// or https://');

export const messagesOrder = z.enum(['random', 'in-order']);

/** Comma-separated term list limits (keyterms and friends). */
const termList = (opts: { maxTerms: number; maxTermLen?: number; maxChars: number }) =>
  z
    .string()
    .max(opts.maxChars)
    .superRefine((s, ctx) => {
      const terms = s.split(',').map((t) => t.trim()).filter(Boolean);
      if (terms.length > opts.maxTerms) fail(ctx, [], `At most ${opts.maxTerms} terms are allowed, got ${terms.length}`, 'too_long');
      if (opts.maxTermLen !== undefined) {
        const long = terms.find((t) => t.length > opts.maxTermLen!);
        if (long) fail(ctx, [], `Each term must be at most ${opts.maxTermLen} characters: '${long.slice(0, 60)}'`, 'string_too_long');
      }
    });

const wordsField = (def: string) =>
  z
    .string()
    .max(500)
    .superRefine((s, ctx) => {
      const words = s.split(',').map((t) => t.trim()).filter(Boolean);
      if (words.length === 0) fail(ctx, [], 'At least one non-blank word is required');
      if (words.length > 20) fail(ctx, [], 'At most 20 words are allowed', 'too_long');
      const long = words.find((w) => w.length > 50);
      if (long) fail(ctx, [], `Each word must be at most 50 characters: '${long.slice(0, 60)}'`, 'string_too_long');
    })
    .default(def);

// ---------------------------------------------------------------- STT tuning blocks
export const sttBlocks = {
  soniox: z.strictObject({
    contextTerms: z.string().max(10000).default(''),
    endpointSensitivity: num(-1, 1).default(0.3),
    endpointLatencyAdjustmentLevel: int(0, 3).default(2),
    maxEndpointDelayMs: int(500, 3000).default(2000),
  }),
  deepgram: z.strictObject({
    eotThreshold: num(0.5, 0.9).default(0.7),
    eotTimeoutMs: int(500, 60000).default(2000),
    keyterms: termList({ maxTerms: 100, maxChars: 5000 }).default(''),
  }),
  assemblyai: z.strictObject({
    mode: z.enum(['balanced', 'min_latency', 'max_accuracy']).default('balanced'),
    keyterms: termList({ maxTerms: 100, maxTermLen: 50, maxChars: 5100 }).default(''),
    voiceFocus: z.enum(['off', 'near-field', 'far-field']).default('near-field'),
    voiceFocusThreshold: num(0, 1).default(0.9),
  }),
  sarvam: z.strictObject({
    mode: z.enum(['transcribe', 'verbatim', 'translit', 'codemix']).default('transcribe'),
    highVadSensitivity: z.boolean().default(false),
  }),
  cartesia: z
    .strictObject({
      turnStartThreshold: num(0.5, 0.9).default(0.8),
      turnEagerEndThreshold: num(0.3, 0.8).default(0.4),
      turnEndThreshold: num(0.05, 0.5).default(0.2),
      turnEndTimeoutMs: int(640, 11200).default(2000),
      keyterms: termList({ maxTerms: 100, maxChars: 1200 }).default(''),
    })
    .superRefine((b, ctx) => {
      if (!(b.turnEndThreshold < b.turnEagerEndThreshold))
        fail(ctx, ['turnEndThreshold'], `turnEndThreshold (${b.turnEndThreshold}) must be lower than turnEagerEndThreshold (${b.turnEagerEndThreshold}); required order: turnEndThreshold < turnEagerEndThreshold < turnStartThreshold`);
      if (!(b.turnEagerEndThreshold < b.turnStartThreshold))
        fail(ctx, ['turnEagerEndThreshold'], `turnEagerEndThreshold (${b.turnEagerEndThreshold}) must be lower than turnStartThreshold (${b.turnStartThreshold}); required order: turnEndThreshold < turnEagerEndThreshold < turnStartThreshold`);
    }),
};

// ---------------------------------------------------------------- TTS tuning blocks
export const ttsBlocks = {
  elevenlabs: z.strictObject({
    stability: num(0, 1).default(0.5),
    similarityBoost: num(0, 1).default(0.75),
    style: num(0, 1).default(0),
    useSpeakerBoost: z.boolean().default(true),
    speed: num(0.7, 1.2).default(1),
    autoMode: z.boolean().default(true),
    applyTextNormalization: z.enum(['auto', 'on', 'off']).default('auto'),
  }),
  cartesia: z.strictObject({ speed: num(0.6, 1.5).default(1), volume: num(0.5, 2).default(1.5) }),
  openai: z.strictObject({ speed: num(0.5, 2).default(1) }),
  sarvam: z.strictObject({ pace: num(0.5, 2).default(1), temperature: num(0.01, 1).default(0.6) }),
  xai: z.strictObject({ speed: num(0.7, 1.5).default(1), optimizeStreamingLatency: int(0, 2).default(0), textNormalization: z.boolean().default(false) }),
  inworld: z.strictObject({ speakingRate: num(0.5, 1.5).default(1), temperature: num(0.01, 2).default(1) }),
};

const modelId = z.string().min(1).max(200);

export const llmSchema = z.strictObject({
  provider: z.enum(LLM_PROVIDERS),
  /** null = the provider's default model (materialised on save). */
  model: modelId.nullable(),
  temperature: num(0, 2).default(1),
  maxTokens: int(1, 4096).default(251),
  prewarm: z.boolean().default(true),
});

export const sttSchema = z
  .strictObject({
    provider: z.enum(STT_PROVIDERS),
    model: modelId.nullable().default(null),
    interruptionMinWords: int(0, 10).default(0),
    soniox: sttBlocks.soniox.optional(),
    deepgram: sttBlocks.deepgram.optional(),
    assemblyai: sttBlocks.assemblyai.optional(),
    sarvam: sttBlocks.sarvam.optional(),
    cartesia: sttBlocks.cartesia.optional(),
  })
  .transform((s) => {
    // The chosen provider's block is always materialised; other blocks present are kept (validated, ignored).
    const p = s.provider;
    if (p !== 'local' && s[p] === undefined) return { ...s, [p]: sttBlocks[p].parse({}) };
    return s;
  });

export const ttsSchema = z
  .strictObject({
    provider: z.enum(TTS_PROVIDERS),
    model: modelId.nullable().default(null),
    voice: z.string().min(1).max(200).nullable().default(null),
    elevenlabs: ttsBlocks.elevenlabs.optional(),
    cartesia: ttsBlocks.cartesia.optional(),
    openai: ttsBlocks.openai.optional(),
    sarvam: ttsBlocks.sarvam.optional(),
    xai: ttsBlocks.xai.optional(),
    inworld: ttsBlocks.inworld.optional(),
  })
  .superRefine((t, ctx) => {
    const entry = catalog.tts[t.provider];
    if (!entry.hasModelSelector && t.model !== null)
      fail(ctx, ['model'], `${t.provider} has no model selector; tts.model must be null`);
    if (entry.voices && t.voice !== null && !entry.voices.includes(t.voice))
      fail(ctx, ['voice'], `${t.provider} voice must be one of: ${entry.voices.join(', ')}`, 'literal_error');
  })
  .transform((t) => {
    const p = t.provider;
    if (p !== 'local' && t[p] === undefined) return { ...t, [p]: ttsBlocks[p].parse({}) };
    return t;
  });

export const greetingSchema = z.strictObject({
  firstMessages: cleanList(5).default(() => []),
  interruptible: z.boolean().default(false),
  speakFirst: z.enum(['agent', 'user']).default('agent'),
  agentDelayS: num(0, 4).default(0),
  userTimeoutS: num(1, 5).default(3),
});

export const noiseGateSchema = z.strictObject({
  enabled: z.boolean().default(true),
  model: z.enum(['voice-focus', 'noise-suppression']).default('voice-focus'),
  enhancementLevel: num(0, 1).default(0.8),
});

export const BACKGROUND_SOUNDS = ['library', 'office', 'cafe', 'restaurant', 'quiet-room'] as const;
export const TASK_SOUNDS = ['typing'] as const;
const wordOrder = z.enum(['round-robin', 'random']).default('round-robin');

export const backgroundSoundSchema = z.strictObject({
  enabled: z.boolean().default(false),
  sound: z.enum(BACKGROUND_SOUNDS).default('library'),
  volume: num(0, 1).default(0.08),
});
export const taskSoundSchema = z.strictObject({
  enabled: z.boolean().default(false),
  sound: z.enum(TASK_SOUNDS).default('typing'),
  volume: num(0, 1).default(0.35),
  startAfterMs: int(0, 10000).default(800),
});
export const acknowledgeSoundsSchema = z.strictObject({
  enabled: z.boolean().default(false),
  words: wordsField('hmm, hm hmm, okay'),
  wordOrder,
  volume: num(0, 1).default(1),
  thresholdS: num(0.5, 30).default(3),
  probability: num(0, 1).default(0.8),
});
export const fillerWordsSchema = z.strictObject({
  enabled: z.boolean().default(false),
  words: wordsField('so, yeah, okay'),
  wordOrder,
  thresholdMs: int(100, 5000).default(300),
  probability: num(0, 1).default(0.75),
});

// ---------------------------------------------------------------- inline tools
export const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const toolName = z.string().min(1).max(64).regex(TOOL_NAME, 'Tool names may contain only letters, digits, _ and -');
const toolDescription = z.string().max(2000).default('');
const toolMessages = cleanList(5).default(() => []);

/** JSON Schema object describing a function tool's arguments. Property schemas are free-form JSON Schema. */
export const functionParametersSchema = z
  .strictObject({
    type: z.literal('object'),
    properties: z.record(z.string().min(1).max(64), z.record(z.string(), z.unknown())).default(() => ({})),
    required: z.array(z.string().min(1).max(64)).max(100).default(() => []),
    description: z.string().max(2000).optional(),
    additionalProperties: z.boolean().optional(),
  })
  .superRefine((p, ctx) => {
    if (Object.keys(p.properties).length > 100) fail(ctx, ['properties'], 'At most 100 parameters are allowed', 'too_long');
    p.required.forEach((name, i) => {
      if (!Object.hasOwn(p.properties, name)) fail(ctx, ['required', i], `Required parameter '${name}' is not defined in properties`);
    });
  });

export const inlineFunctionTool = z.strictObject({
  type: z.literal('function'),
  name: toolName,
  description: toolDescription,
  config: z.strictObject({
    server: z.strictObject({
      url: httpUrl(2048),
      method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
      headers: headersSchema.default(() => ({})),
      timeout_ms: int(1000, 30000).default(10000),
    }),
    parameters: functionParametersSchema.nullable().default(null),
    async: z.boolean().default(false),
    messages: toolMessages,
    messagesOrder: messagesOrder.default('random'),
  }),
});

export const DEFAULT_END_CALL_MESSAGES = ['Goodbye!'];
export const END_CALL_DESCRIPTION = 'End the call. Use it when the conversation is complete or the caller asks to hang up.';
export const inlineEndCallTool = z.strictObject({
  type: z.literal('endCall'),
  name: toolName.default('end_call'),
  description: z.string().max(2000).default(END_CALL_DESCRIPTION),
  config: z
    .strictObject({
      messageType: z.enum(['none', 'custom', 'audio']).default('custom'),
      customMessages: cleanList(5).default(() => [...DEFAULT_END_CALL_MESSAGES]),
      audioRecordingId: z.string().min(1).max(200).nullable().default(null),
    })
    .superRefine((c, ctx) => {
      if (c.messageType === 'custom' && c.customMessages.length === 0)
        fail(ctx, ['customMessages'], "At least one non-blank message is required when messageType is 'custom'");
      if (c.messageType === 'audio' && !c.audioRecordingId)
        fail(ctx, ['audioRecordingId'], "audioRecordingId is required when messageType is 'audio'", 'missing');
    }),
});

/** E.164 number, or a SIP endpoint (PJSIP/123, SIP/123, sip:user@host). */
export const TRANSFER_DESTINATION = /^(?:\+[1-9]\d{6,14}|(?:PJSIP|SIP)\/[A-Za-z0-9_.@:+-]{1,120}|sips?:[A-Za-z0-9_.!~*'()&=+$,;?/%-]+@[A-Za-z0-9.-]+(?::\d{1,5})?)$/;
export const inlineTransferCallTool = z.strictObject({
  type: z.literal('transferCall'),
  name: toolName,
  description: toolDescription,
  config: z.strictObject({
    destination: z.string().regex(TRANSFER_DESTINATION, 'destination must be an E.164 number (+14155550100) or a SIP endpoint (PJSIP/123, SIP/123, sip:user@host)'),
    customMessage: z.string().max(1000).nullable().default(null),
    timeout: int(5, 300).default(30),
    recordTransfer: z.boolean().default(true),
  }),
});

const documentId = z.guid('documentIds entries must be document UUIDs');
export const inlineQueryTool = z.strictObject({
  type: z.literal('query'),
  name: toolName,
  description: toolDescription,
  config: z.strictObject({
    knowledgeBases: z
      .array(z.strictObject({ name: z.string().min(1).max(200), description: z.string().min(1).max(2000), documentIds: z.array(documentId).min(1).max(100) }))
      .min(1)
      .max(20),
    messages: toolMessages,
    messagesOrder: messagesOrder.default('random'),
    timeout: int(1, 30).default(5),
  }),
});

export const inlineTestTool = z.strictObject({
  type: z.literal('testTool'),
  name: toolName,
  description: toolDescription,
  config: z.strictObject({
    delaySeconds: num(0.5, 30).default(6),
    outcome: z.enum(['success', 'failure']).default('success'),
    responseText: z.string().max(2000).default(''),
    messages: toolMessages,
    messagesOrder: messagesOrder.default('random'),
  }),
});

/** Keys on the phone keypad for the LLM to press (media/tools/dtmf.ts): one function whose `digits` it fills in. */
export const SEND_DTMF_DESCRIPTION =
  'Press keys on the phone keypad, e.g. to choose an option of an automated phone menu. digits: 0-9, * and #; w waits half a ' +
  'second. While a menu is still reading its options or you are on hold, you may answer with no text at all to keep listening.';
export const inlineSendDtmfTool = z.strictObject({
  type: z.literal('sendDtmf'),
  name: toolName.default('send_dtmf'),
  description: z.string().max(2000).default(SEND_DTMF_DESCRIPTION),
  config: z.strictObject({}),
});

export const INLINE_TOOL_TYPES = ['function', 'endCall', 'transferCall', 'query', 'testTool', 'sendDtmf'] as const;
export const inlineToolSchema = z.discriminatedUnion('type', [inlineFunctionTool, inlineEndCallTool, inlineTransferCallTool, inlineQueryTool, inlineTestTool, inlineSendDtmfTool]);
export type InlineTool = z.output<typeof inlineToolSchema>;

/** A saved tool reference: its UUID (normalised to lower case). */
export const savedToolRef = z.guid('Saved tool references must be tool UUIDs').transform((s) => s.toLowerCase());
export const toolEntrySchema = z.union([savedToolRef, inlineToolSchema]);

/** The name the LLM sees: lowercased, every run of other characters turned into '_'. */
export function sanitizeFunctionName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '_');
}
export const RESERVED_TOOL_NAMES = ['end_call', 'retrieve_from_knowledge_base', 'safe_calculator'];

const toolsSchema = z
  .array(toolEntrySchema)
  .max(50)
  .superRefine((tools, ctx) => {
    const seen = new Map<string, number>();
    tools.forEach((tool, i) => {
      if (typeof tool === 'string') return;
      const fn = sanitizeFunctionName(tool.name);
      if (fn === 'end_call' && tool.type !== 'endCall') fail(ctx, [i, 'name'], "Tool name 'end_call' is reserved for endCall tools");
      else if (RESERVED_TOOL_NAMES.includes(fn) && fn !== 'end_call') fail(ctx, [i, 'name'], `Tool name '${tool.name}' is reserved`);
      const prev = seen.get(fn);
      if (prev !== undefined) fail(ctx, [i, 'name'], `Duplicate tool name '${tool.name}': tools.${prev} has the same name after sanitization ('${fn}')`);
      else seen.set(fn, i);
    });
  });

// ---------------------------------------------------------------- webhook, context variables
export const webhookObject = z.strictObject({ url: httpUrl(2048), headers: headersSchema.default(() => ({})) });
export const webhookSchema = z
  .union([httpUrl(2048), webhookObject])
  .nullable()
  .transform((w) => (typeof w === 'string' ? { url: w, headers: {} as Record<string, string> } : w));

export const BUILTIN_VARIABLES = ['current_time', 'current_date', 'user_number', 'agent_number'];
export const contextVariablesSchema = z
  .record(z.string().min(1).max(100), z.string().max(2000))
  .superRefine((r, ctx) => {
    const n = Object.keys(r).length;
    if (n > 200) fail(ctx, [], `At most 200 context variables are allowed, got ${n}`, 'too_long');
  })
  .transform((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !BUILTIN_VARIABLES.includes(k))));

export const DEFAULT_IDLE_MESSAGES = ['Are you still there?'];

// ---------------------------------------------------------------- the config
export const agentConfigSchema = z
  .strictObject({
    name: z.string().min(1).max(120).refine((s) => s.trim().length > 0, { message: 'name must not be blank' }),
    description: z.string().max(5000).default(''),
    languages: z
      .array(z.enum(LANGUAGES))
      .min(1)
      .max(50)
      .default(() => ['en' as const])
      .transform((l) => [...new Set(l)]),
    systemPrompt: z.string().max(100000).default(''),
    timezone: z
      .string()
      .max(64)
      .refine((tz) => IANAZone.isValidZone(tz), { message: 'Invalid IANA time zone' })
      .default('Asia/Kolkata'),
    greeting: greetingSchema.prefault({}),
    llm: llmSchema,
    stt: sttSchema,
    tts: ttsSchema,
    noiseGate: noiseGateSchema.prefault({}),
    backgroundSound: backgroundSoundSchema.prefault({}),
    taskSound: taskSoundSchema.prefault({}),
    acknowledgeSounds: acknowledgeSoundsSchema.prefault({}),
    fillerWords: fillerWordsSchema.prefault({}),
    maxCallDurationS: int(10, 7200).multipleOf(10).default(610),
    userIdleTimeoutS: int(3, 25).default(7),
    userIdleMessages: cleanList(5)
      .default(() => [...DEFAULT_IDLE_MESSAGES])
      .transform((l) => (l.length === 0 ? [...DEFAULT_IDLE_MESSAGES] : l)),
    userIdleMaxRetries: int(1, 5).default(2),
    tools: toolsSchema.default(() => []),
    voicemailDetection: z.boolean().default(true),
    /** Left after the beep when voicemailDetection finds a machine (docs/agents.md); null: hang up as before. */
    voicemailMessage: z
      .string()
      .min(1)
      .max(1000)
      .refine((s) => s.trim().length > 0, { message: 'voicemailMessage must not be blank' })
      .nullable()
      .default(null),
    webhook: webhookSchema.default(null),
    enableSummarization: z.boolean().default(false),
    analysis: analysisSchema.nullable().default(null),
    recordInProviderConsole: z.boolean().nullable().default(null),
    contextVariables: contextVariablesSchema.default(() => ({})),
  })
  .superRefine((c, ctx) => {
    if (c.stt.provider === 'assemblyai' && c.languages.length > 10)
      fail(ctx, ['languages'], `At most 10 languages are supported with assemblyai, got ${c.languages.length}`, 'too_long');
  });

export type AgentConfigInput = z.input<typeof agentConfigSchema>;
type Parsed = z.output<typeof agentConfigSchema>;
/** A fully resolved config: every default materialised, llm.model resolved, `end_call` tool present. */
export type AgentConfig = Omit<Parsed, 'llm'> & { llm: Omit<Parsed['llm'], 'model'> & { model: string } };
export type ToolEntry = AgentConfig['tools'][number];
