// Pure campaign policy: which outcome a finished attempt had, whether and when it is retried (the spec's delay
// formula), the rolling-window circuit breaker, and schedule slots in an IANA zone (luxon, DST included).
// Deterministic given their inputs (randomness and time are passed in), so the workflow can call them.
import { DateTime } from 'luxon';
import type { CircuitBreakerConfig, RetryConfig, ScheduleConfig } from './schemas.ts';
import { minutesOf } from './schemas.ts';

// ── outcomes ─────────────────────────────────────────────────────────────────────────────────────────────

export type RetryReason = 'busy' | 'no_answer' | 'voicemail';

/** What the campaign learns when an attempt ends (from the call row, the dial, or the outcome signal). */
export interface AttemptOutcome {
  callId: string | null;
  /** The call's connectionStatus (completed, busy, no_answer, dial_failed, …). */
  connectionStatus: string | null;
  endedReason: string | null;
  durationSeconds: number | null;
}

/** Dial-leg failures the breaker counts (the carrier or our dialer could not place the call). */
export const DIAL_FAILURE_STATUSES: ReadonlySet<string> = new Set([
  'dial_failed', 'initiation_failed', 'connection_failed', 'missing_credentials', 'credentials_invalid',
]);

/** The retryable reason of an outcome, or null (answered, rejected, invalid number, failures, …). */
export function retryReasonOf(o: Pick<AttemptOutcome, 'connectionStatus' | 'endedReason'>): RetryReason | null {
  if (o.connectionStatus === 'busy') return 'busy';
  if (o.connectionStatus === 'no_answer') return 'no_answer';
  if (o.endedReason === 'voicemail') return 'voicemail';
  return null;
}

/** Failures for the circuit breaker: dial failures and calls ending pipeline_error. Busy/no-answer/voicemail are outcomes. */
export function isFailure(o: Pick<AttemptOutcome, 'connectionStatus' | 'endedReason'>): boolean {
  return (o.connectionStatus !== null && DIAL_FAILURE_STATUSES.has(o.connectionStatus)) || o.endedReason === 'pipeline_error';
}

// ── retries ──────────────────────────────────────────────────────────────────────────────────────────────

export const JITTER = 0.2;

/**
 * Delay in seconds before retry attempt `n` (1-based: the first retry is n = 1):
 * base × backoff_multiplier^(n−1), base = the per-reason override if set else retry_delay_seconds; ±20 % jitter
 * only when backoff_multiplier > 1 (`random` ∈ [0, 1): 0 → −20 %, 0.5 → none, →1 → +20 %); capped at
 * retry_delay_cap_seconds.
 */
export function retryDelaySeconds(cfg: RetryConfig, reason: RetryReason, n: number, random: () => number): number {
  const override = reason === 'busy' ? cfg.busy_delay_seconds : reason === 'no_answer' ? cfg.no_answer_delay_seconds : cfg.voicemail_delay_seconds;
  const base = override ?? cfg.retry_delay_seconds;
  let delay = base * cfg.backoff_multiplier ** (n - 1);
  if (cfg.backoff_multiplier > 1) delay *= 1 + JITTER * (2 * random() - 1);
  return Math.min(delay, cfg.retry_delay_cap_seconds);
}

export type RetryDecision = { retry: true; reason: RetryReason; retryNumber: number; delaySeconds: number } | { retry: false };

/**
 * After attempt `attempt` (1 = first dial) ended with `outcome`: retry when retries are enabled, the reason's
 * flag is on and fewer than max_retries retries were made.
 */
export function decideRetry(cfg: RetryConfig, outcome: Pick<AttemptOutcome, 'connectionStatus' | 'endedReason'>, attempt: number, random: () => number): RetryDecision {
  const reason = retryReasonOf(outcome);
  if (!cfg.enabled || reason === null) return { retry: false };
  const flag = reason === 'busy' ? cfg.retry_on_busy : reason === 'no_answer' ? cfg.retry_on_no_answer : cfg.retry_on_voicemail;
  if (!flag) return { retry: false };
  const retryNumber = attempt; // attempt 1 failed → retry 1
  if (retryNumber > cfg.max_retries) return { retry: false };
  return { retry: true, reason, retryNumber, delaySeconds: retryDelaySeconds(cfg, reason, retryNumber, random) };
}

// ── circuit breaker ──────────────────────────────────────────────────────────────────────────────────────

/** One finished attempt in the rolling window: when it ended (ms since epoch) and whether it was a failure. */
export interface BreakerEvent {
  t: number;
  failed: boolean;
}

/** Events still inside the window at `now` (drops the rest). */
export function pruneWindow(events: readonly BreakerEvent[], cfg: CircuitBreakerConfig, now: number): BreakerEvent[] {
  const from = now - cfg.window_seconds * 1000;
  return events.filter((e) => e.t > from);
}

export interface BreakerVerdict {
  trip: boolean;
  calls: number;
  failures: number;
  fraction: number;
}

/** Trips when at least min_calls_in_window calls are in the window and the failure fraction reaches the threshold. */
export function evaluateBreaker(cfg: CircuitBreakerConfig, events: readonly BreakerEvent[], now: number): BreakerVerdict {
  const inWindow = pruneWindow(events, cfg, now);
  const calls = inWindow.length;
  const failures = inWindow.filter((e) => e.failed).length;
  const fraction = calls === 0 ? 0 : failures / calls;
  const trip = cfg.enabled && calls >= cfg.min_calls_in_window && fraction >= cfg.failure_threshold;
  return { trip, calls, failures, fraction };
}

// ── schedule slots ───────────────────────────────────────────────────────────────────────────────────────

/** day_of_week of the spec (0 = Monday … 6 = Sunday) for a luxon DateTime. */
export const dayOfWeek = (dt: DateTime): number => dt.weekday - 1;

/** True when `nowMs` falls inside a slot (start inclusive, end exclusive) in the schedule's zone, or the schedule is off. */
export function isInsideSlot(schedule: ScheduleConfig | null, nowMs: number): boolean {
  if (!schedule || !schedule.enabled) return true;
  const local = DateTime.fromMillis(nowMs, { zone: schedule.timezone });
  const day = dayOfWeek(local);
  const minute = local.hour * 60 + local.minute;
  return schedule.slots.some((s) => s.day_of_week === day && minutesOf(s.start_time)! <= minute && minute < minutesOf(s.end_time, true)!);
}

/**
 * The next instant (ms) at which a slot starts, strictly after `nowMs`, in the schedule's zone; null when the
 * schedule has no slot (never for a valid one). A start that falls in a DST gap moves forward with the clock
 * (02:30 on a spring-forward day starts at 03:30 local); an ambiguous one (fall-back) takes luxon's choice, the
 * later (standard-time) instant.
 */
export function nextSlotStart(schedule: ScheduleConfig, nowMs: number): number | null {
  const today = DateTime.fromMillis(nowMs, { zone: schedule.timezone }).startOf('day');
  let best: number | null = null;
  for (let d = 0; d <= 7; d++) {
    const date = today.plus({ days: d });
    for (const s of schedule.slots) {
      if (s.day_of_week !== dayOfWeek(date)) continue;
      const start = minutesOf(s.start_time)!;
      const at = DateTime.fromObject(
        { year: date.year, month: date.month, day: date.day, hour: Math.floor(start / 60), minute: start % 60 },
        { zone: schedule.timezone },
      ).toMillis();
      if (at > nowMs && (best === null || at < best)) best = at;
    }
    if (best !== null && d >= 1) break; // later days cannot be earlier
  }
  return best;
}

/** How long to wait before dialing may happen (0 when inside a slot or no schedule applies). */
export function msUntilDialable(schedule: ScheduleConfig | null, nowMs: number): number {
  if (isInsideSlot(schedule, nowMs)) return 0;
  const next = nextSlotStart(schedule!, nowMs);
  return next === null ? Number.POSITIVE_INFINITY : next - nowMs;
}

/** Concurrency the campaign may use: min(max_concurrency, organization ceiling, caller-ID pool size). */
export function effectiveConcurrency(maxConcurrency: number, orgCeiling: number, callerIds: number): number {
  return Math.max(0, Math.min(maxConcurrency, orgCeiling, callerIds));
}
