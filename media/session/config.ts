// The call's frozen AgentConfig snapshot (written by POST /call), read tolerantly with the spec's defaults so a
// live call never fails on a missing optional field. Validation of the config itself happens at creation.
import { z } from 'zod';

const words = z.string();
const strList = z.array(z.string()).catch([]);

export const callConfigSchema = z
  .object({
    name: z.string().catch('agent'),
    languages: z.array(z.string()).catch(['en']).default(['en']),
    systemPrompt: z.string().catch('').default(''),
    timezone: z.string().catch('Asia/Kolkata').default('Asia/Kolkata'),
    greeting: z
      .object({
        firstMessages: strList.default([]),
        interruptible: z.boolean().catch(false).default(false),
        speakFirst: z.enum(['agent', 'user']).catch('agent').default('agent'),
        agentDelayS: z.number().catch(0).default(0),
        userTimeoutS: z.number().catch(3).default(3),
      })
      .passthrough()
      .default({ firstMessages: [], interruptible: false, speakFirst: 'agent', agentDelayS: 0, userTimeoutS: 3 }),
    llm: z
      .object({
        provider: z.string(),
        model: z.string().nullable().catch(null).default(null),
        temperature: z.number().catch(1).default(1),
        maxTokens: z.number().int().catch(251).default(251),
        prewarm: z.boolean().catch(true).default(true),
      })
      .passthrough(),
    stt: z
      .object({ provider: z.string(), model: z.string().nullable().catch(null).default(null), interruptionMinWords: z.number().int().catch(0).default(0) })
      .passthrough(),
    tts: z.object({ provider: z.string(), model: z.string().nullable().catch(null).default(null), voice: z.string().nullable().catch(null).default(null) }).passthrough(),
    noiseGate: z
      .object({
        enabled: z.boolean().catch(true).default(true),
        model: z.enum(['voice-focus', 'noise-suppression']).catch('voice-focus').default('voice-focus'),
        enhancementLevel: z.number().catch(0.8).default(0.8),
      })
      .default({ enabled: true, model: 'voice-focus', enhancementLevel: 0.8 }),
    backgroundSound: z
      .object({ enabled: z.boolean().catch(false).default(false), sound: z.string().catch('library').default('library'), volume: z.number().catch(0.08).default(0.08) })
      .passthrough()
      .default({ enabled: false, sound: 'library', volume: 0.08 }),
    taskSound: z
      .object({
        enabled: z.boolean().catch(false).default(false),
        sound: z.string().catch('typing').default('typing'),
        volume: z.number().catch(0.35).default(0.35),
        startAfterMs: z.number().catch(800).default(800),
      })
      .passthrough()
      .default({ enabled: false, sound: 'typing', volume: 0.35, startAfterMs: 800 }),
    acknowledgeSounds: z
      .object({
        enabled: z.boolean().catch(false).default(false),
        words: words.catch('hmm, hm hmm, okay').default('hmm, hm hmm, okay'),
        wordOrder: z.string().catch('round-robin').default('round-robin'),
        volume: z.number().catch(1).default(1),
        thresholdS: z.number().catch(3).default(3),
        probability: z.number().catch(0.8).default(0.8),
      })
      .passthrough()
      .default({ enabled: false, words: 'hmm, hm hmm, okay', wordOrder: 'round-robin', volume: 1, thresholdS: 3, probability: 0.8 }),
    fillerWords: z
      .object({
        enabled: z.boolean().catch(false).default(false),
        words: words.catch('so, yeah, okay').default('so, yeah, okay'),
        wordOrder: z.string().catch('round-robin').default('round-robin'),
        thresholdMs: z.number().catch(300).default(300),
        probability: z.number().catch(0.75).default(0.75),
      })
      .passthrough()
      .default({ enabled: false, words: 'so, yeah, okay', wordOrder: 'round-robin', thresholdMs: 300, probability: 0.75 }),
    maxCallDurationS: z.number().catch(610).default(610),
    userIdleTimeoutS: z.number().catch(7).default(7),
    userIdleMessages: strList.default(['Are you still there?']),
    userIdleMaxRetries: z.number().int().catch(2).default(2),
    tools: z.array(z.union([z.string(), z.record(z.string(), z.unknown())])).catch([]).default([]),
    webhook: z
      .union([z.string().transform((url) => ({ url, headers: {} as Record<string, string> })), z.object({ url: z.string(), headers: z.record(z.string(), z.string()).catch({}).default({}) })])
      .nullable()
      .catch(null)
      .default(null),
    enableSummarization: z.boolean().catch(false).default(false),
    contextVariables: z.record(z.string(), z.string()).catch({}).default({}),
  })
  .passthrough();

export type CallConfig = z.infer<typeof callConfigSchema>;

export const DEFAULT_IDLE_MESSAGE = 'Are you still there?';

export function parseCallConfig(snapshot: unknown): CallConfig {
  return callConfigSchema.parse(snapshot);
}

/** Comma-separated word list → entries (blank dropped). */
export function wordList(s: string): string[] {
  return s
    .split(',')
    .map((w) => w.trim())
    .filter(Boolean);
}
