// Campaign request bodies and the three campaign configs (spec "Campaign", "Campaigns"), with the spec's defaults
// and ranges. Campaign bodies ignore unknown fields (z.object strips them). Pure: used by api/ and workflows/.
import { IANAZone } from 'luxon';
import { z } from 'zod';

const int = (min: number, max: number) => z.number({ error: 'Input should be a valid integer' }).int().min(min).max(max);
const num = (min: number, max: number) => z.number().min(min).max(max);

export const retryConfigSchema = z.object({
  enabled: z.boolean().default(true),
  max_retries: int(0, 10).default(2),
  retry_delay_seconds: int(10, 3600).default(120),
  retry_on_busy: z.boolean().default(true),
  retry_on_no_answer: z.boolean().default(true),
  retry_on_voicemail: z.boolean().default(true),
  backoff_multiplier: num(1, 5).default(1),
  retry_delay_cap_seconds: int(60, 7200).default(3600),
  busy_delay_seconds: int(10, 3600).nullable().default(null),
  no_answer_delay_seconds: int(10, 3600).nullable().default(null),
  voicemail_delay_seconds: int(10, 3600).nullable().default(null),
});
export type RetryConfig = z.output<typeof retryConfigSchema>;

export const TIME_PATTERN = '^\\d{2}:\\d{2}$';
const time = z.string().regex(new RegExp(TIME_PATTERN));

/** Minutes since midnight of 'HH:MM' (00:00..23:59, and 24:00 as an end of day), or null. */
export function minutesOf(hhmm: string, allowEndOfDay = false): number | null {
  const m = /^(\d{2}):(\d{2})$/.exec(hhmm);
  if (!m) return null;
  const h = Number(m[1]);
  const min = Number(m[2]);
  if (min > 59) return null;
  if (h === 24 && min === 0 && allowEndOfDay) return 24 * 60;
  if (h > 23) return null;
  return h * 60 + min;
}

export const slotSchema = z
  .object({ day_of_week: int(0, 6), start_time: time, end_time: time })
  .superRefine((s, ctx) => {
    const shaped = (v: string) => /^\d{2}:\d{2}$/.test(v); // otherwise the pattern error already says it
    const start = minutesOf(s.start_time);
    const end = minutesOf(s.end_time, true);
    if (start === null && shaped(s.start_time)) ctx.addIssue({ code: 'custom', path: ['start_time'], message: 'Value error, start_time must be a 24-hour time HH:MM (00:00 to 23:59)', input: s.start_time });
    if (end === null && shaped(s.end_time)) ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'Value error, end_time must be a 24-hour time HH:MM (00:00 to 24:00)', input: s.end_time });
    if (start !== null && end !== null && end <= start) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: `Value error, end_time (${s.end_time}) must be after start_time (${s.start_time})`, input: s.end_time });
    }
  });
export type Slot = z.output<typeof slotSchema>;

export const scheduleConfigSchema = z.object({
  enabled: z.boolean().default(true),
  timezone: z
    .string()
    .default('UTC')
    .refine((tz) => IANAZone.isValidZone(tz), { message: 'Value error, unknown IANA timezone' }),
  slots: z.array(slotSchema).min(1).max(50),
});
export type ScheduleConfig = z.output<typeof scheduleConfigSchema>;

export const circuitBreakerSchema = z.object({
  enabled: z.boolean().default(true),
  failure_threshold: num(0, 1).default(0.5),
  window_seconds: int(30, 600).default(120),
  min_calls_in_window: int(1, 100).default(5),
});
export type CircuitBreakerConfig = z.output<typeof circuitBreakerSchema>;

export const createCampaignBody = z.object({
  name: z.string().min(1).max(255),
  agent_uuid: z.string(),
  source_type: z.string().regex(/^csv$/),
  source_id: z.string().min(1),
  telephony_configuration_id: z.number({ error: 'Input should be a valid integer' }).int().nullish(),
  max_concurrency: int(1, 100).nullish(),
  retry_config: retryConfigSchema.nullish(),
  schedule_config: scheduleConfigSchema.nullish(),
  circuit_breaker: circuitBreakerSchema.nullish(),
});
export type CreateCampaignBody = z.output<typeof createCampaignBody>;

export const updateCampaignBody = z.object({
  name: z.string().min(1).max(255).optional(),
  retry_config: retryConfigSchema.optional(),
  max_concurrency: int(1, 100).optional(),
  schedule_config: scheduleConfigSchema.nullable().optional(),
  circuit_breaker: circuitBreakerSchema.optional(),
});
export type UpdateCampaignBody = z.output<typeof updateCampaignBody>;

export const DEFAULT_RETRY_CONFIG: RetryConfig = retryConfigSchema.parse({});
export const DEFAULT_CIRCUIT_BREAKER: CircuitBreakerConfig = circuitBreakerSchema.parse({});
/** max_concurrency when the body leaves it out: one call at a time. */
export const DEFAULT_MAX_CONCURRENCY = 1;

export const CAMPAIGN_STATES = ['created', 'syncing', 'running', 'paused', 'completed', 'failed'] as const;
export type CampaignState = (typeof CAMPAIGN_STATES)[number];
export const TERMINAL_STATES: readonly CampaignState[] = ['completed', 'failed'];

/** The settings a running campaign follows, as the workflow holds them (edits replace them live). */
export interface CampaignSettings {
  maxConcurrency: number;
  retry: RetryConfig;
  schedule: ScheduleConfig | null;
  breaker: CircuitBreakerConfig;
}

export interface CampaignLogEntry {
  ts: string;
  level: 'info' | 'warning' | 'error';
  event: string;
  message: string;
  details: Record<string, unknown>;
}

/** What an edit of a live campaign changes (the workflow's `edit` update). */
export type EditableSettings = Partial<CampaignSettings>;
