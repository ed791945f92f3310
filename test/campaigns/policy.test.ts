// Pure campaign policy: the retry delay formula, retry decisions, the circuit breaker window, schedule slots in an
// IANA zone across DST, the config schemas' defaults/ranges, and CSV validation.
import test from 'ava';
import { DateTime } from 'luxon';
import { parseContactsCsv, CsvError, normalisePhone } from '../../core/campaigns/csv.ts';
import {
  decideRetry,
  effectiveConcurrency,
  evaluateBreaker,
  isFailure,
  isInsideSlot,
  msUntilDialable,
  nextSlotStart,
  retryDelaySeconds,
} from '../../core/campaigns/policy.ts';
import {
  circuitBreakerSchema,
  createCampaignBody,
  DEFAULT_CIRCUIT_BREAKER,
  DEFAULT_RETRY_CONFIG,
  retryConfigSchema,
  scheduleConfigSchema,
  type ScheduleConfig,
} from '../../core/campaigns/schemas.ts';
import { to422, zodToItems } from '../../core/validation.ts';

const retry = (o: object = {}) => retryConfigSchema.parse(o);
const never = () => { throw new Error('random must not be used when backoff_multiplier is 1'); };

test('retry delay: base × multiplier^(N−1), per-reason base falling back to retry_delay_seconds', (t) => {
  const cfg = retry({ retry_delay_seconds: 10 });
  t.is(retryDelaySeconds(cfg, 'busy', 1, never), 10);
  t.is(retryDelaySeconds(cfg, 'busy', 3, never), 10, 'multiplier 1: no growth, no jitter');
  const perReason = retry({ retry_delay_seconds: 100, busy_delay_seconds: 10, no_answer_delay_seconds: 20, voicemail_delay_seconds: 30 });
  t.is(retryDelaySeconds(perReason, 'busy', 1, never), 10);
  t.is(retryDelaySeconds(perReason, 'no_answer', 1, never), 20);
  t.is(retryDelaySeconds(perReason, 'voicemail', 1, never), 30);
  const onlyBusy = retry({ retry_delay_seconds: 100, busy_delay_seconds: 10 });
  t.is(retryDelaySeconds(onlyBusy, 'no_answer', 1, never), 100);
});

test('retry delay: ±20 % jitter only when multiplier > 1, then the cap', (t) => {
  const cfg = retry({ retry_delay_seconds: 10, backoff_multiplier: 2, retry_delay_cap_seconds: 60 });
  t.is(retryDelaySeconds(cfg, 'busy', 1, () => 0.5), 10, 'random 0.5 = no jitter');
  t.is(retryDelaySeconds(cfg, 'busy', 2, () => 0.5), 20);
  t.is(retryDelaySeconds(cfg, 'busy', 3, () => 0.5), 40);
  t.is(Math.round(retryDelaySeconds(cfg, 'busy', 2, () => 0) * 1000) / 1000, 16, '−20 %');
  t.is(Math.round(retryDelaySeconds(cfg, 'busy', 2, () => 0.999999) * 1000) / 1000, 24, '≈ +20 %');
  t.is(retryDelaySeconds(cfg, 'busy', 4, () => 0.5), 60, '80 s capped at 60');
  t.is(retryDelaySeconds(cfg, 'busy', 4, () => 0), 60, '64 s after jitter, capped at 60');
  for (let i = 0; i < 200; i++) {
    const r = Math.random();
    const d = retryDelaySeconds(cfg, 'no_answer', 2, () => r);
    t.true(d >= 16 && d <= 24);
  }
});

test('retry decisions follow enabled, the per-reason flags and max_retries', (t) => {
  const cfg = retry({ max_retries: 2, retry_delay_seconds: 10 });
  const busy = { connectionStatus: 'busy', endedReason: null };
  t.like(decideRetry(cfg, busy, 1, never), { retry: true, reason: 'busy', retryNumber: 1, delaySeconds: 10 });
  t.like(decideRetry(cfg, busy, 2, never), { retry: true, retryNumber: 2 });
  t.deepEqual(decideRetry(cfg, busy, 3, never), { retry: false }, 'two retries made');
  t.like(decideRetry(cfg, { connectionStatus: 'no_answer', endedReason: null }, 1, never), { retry: true, reason: 'no_answer' });
  t.like(decideRetry(cfg, { connectionStatus: 'completed', endedReason: 'voicemail' }, 1, never), { retry: true, reason: 'voicemail' });
  t.deepEqual(decideRetry(cfg, { connectionStatus: 'completed', endedReason: 'user_hangup' }, 1, never), { retry: false });
  t.deepEqual(decideRetry(cfg, { connectionStatus: 'dial_failed', endedReason: null }, 1, never), { retry: false });
  t.deepEqual(decideRetry(retry({ retry_on_busy: false }), busy, 1, never), { retry: false });
  t.like(decideRetry(retry({ retry_on_busy: false }), { connectionStatus: 'no_answer', endedReason: null }, 1, never), { retry: true });
  t.deepEqual(decideRetry(retry({ retry_on_no_answer: false }), { connectionStatus: 'no_answer', endedReason: null }, 1, never), { retry: false });
  t.deepEqual(decideRetry(retry({ retry_on_voicemail: false }), { connectionStatus: 'completed', endedReason: 'voicemail' }, 1, never), { retry: false });
  t.deepEqual(decideRetry(retry({ enabled: false }), busy, 1, never), { retry: false });
  t.deepEqual(decideRetry(retry({ max_retries: 0 }), busy, 1, never), { retry: false });
});

test('breaker: failures are dial failures and pipeline_error; trips at the threshold with enough calls in the window', (t) => {
  t.true(isFailure({ connectionStatus: 'dial_failed', endedReason: null }));
  t.true(isFailure({ connectionStatus: 'connection_failed', endedReason: null }));
  t.true(isFailure({ connectionStatus: 'completed', endedReason: 'pipeline_error' }));
  t.false(isFailure({ connectionStatus: 'busy', endedReason: null }));
  t.false(isFailure({ connectionStatus: 'no_answer', endedReason: null }));
  t.false(isFailure({ connectionStatus: 'completed', endedReason: 'voicemail' }));

  const cfg = { ...DEFAULT_CIRCUIT_BREAKER, failure_threshold: 0.5, window_seconds: 60, min_calls_in_window: 4 };
  const now = 1_000_000;
  const ev = (ageS: number, failed: boolean) => ({ t: now - ageS * 1000, failed });
  t.false(evaluateBreaker(cfg, [ev(1, true), ev(2, true), ev(3, true)], now).trip, 'three calls < min_calls_in_window');
  t.true(evaluateBreaker(cfg, [ev(1, true), ev(2, true), ev(3, false), ev(4, false)], now).trip, '2/4 reaches 0.5');
  t.false(evaluateBreaker(cfg, [ev(1, true), ev(2, false), ev(3, false), ev(4, false)], now).trip, '1/4 below');
  const old = [ev(61, true), ev(70, true), ev(1, true), ev(2, false), ev(3, false), ev(4, false)];
  const v = evaluateBreaker(cfg, old, now);
  t.false(v.trip, 'failures older than the window do not count');
  t.is(v.calls, 4);
  t.false(evaluateBreaker({ ...cfg, enabled: false }, [ev(1, true), ev(2, true), ev(3, true), ev(4, true)], now).trip);
  t.true(evaluateBreaker({ ...cfg, failure_threshold: 0 }, [ev(1, false), ev(2, false), ev(3, false), ev(4, false)], now).trip, 'threshold 0 trips as soon as enough calls');
});

const sched = (o: Partial<ScheduleConfig> & Pick<ScheduleConfig, 'slots'>): ScheduleConfig => scheduleConfigSchema.parse(o);
const at = (s: string, zone: string) => DateTime.fromISO(s, { zone }).toMillis();

test('slots: inside/outside in the campaign zone, 0 = Monday, end exclusive', (t) => {
  const s = sched({ timezone: 'America/New_York', slots: [{ day_of_week: 0, start_time: '09:00', end_time: '17:00' }] });
  // 2026-11-23 is a Monday.
  t.true(isInsideSlot(s, at('2026-11-23T09:00', 'America/New_York')));
  t.true(isInsideSlot(s, at('2026-11-23T16:59', 'America/New_York')));
  t.false(isInsideSlot(s, at('2026-11-23T17:00', 'America/New_York')));
  t.false(isInsideSlot(s, at('2026-11-23T08:59', 'America/New_York')));
  t.false(isInsideSlot(s, at('2026-11-24T10:00', 'America/New_York')), 'Tuesday');
  t.false(isInsideSlot(s, at('2026-11-23T10:00', 'UTC')), '10:00 UTC is 05:00 in New York');
  t.true(isInsideSlot({ ...s, enabled: false }, at('2026-11-24T03:00', 'UTC')), 'enabled:false stores but ignores');
  t.true(isInsideSlot(null, 0));
  t.is(nextSlotStart(s, at('2026-11-23T17:30', 'America/New_York')), at('2026-11-30T09:00', 'America/New_York'), 'next Monday');
  t.is(nextSlotStart(s, at('2026-11-23T08:00', 'America/New_York')), at('2026-11-23T09:00', 'America/New_York'));
  t.is(msUntilDialable(s, at('2026-11-23T08:59', 'America/New_York')), 60_000);
  t.is(msUntilDialable(s, at('2026-11-23T12:00', 'America/New_York')), 0);
});

test('slots across DST: the wall-clock start holds, gaps move forward', (t) => {
  const zone = 'Europe/Berlin';
  // Sunday 2026-03-29: clocks go 02:00 → 03:00. Sunday = 6.
  const s = sched({ timezone: zone, slots: [{ day_of_week: 6, start_time: '02:30', end_time: '04:00' }, { day_of_week: 0, start_time: '09:00', end_time: '10:00' }] });
  const sat = at('2026-03-28T12:00', zone);
  t.is(nextSlotStart(s, sat), at('2026-03-29T03:30', zone), '02:30 does not exist that day: 03:30 local');
  t.is(DateTime.fromMillis(nextSlotStart(s, sat)!, { zone: 'UTC' }).toISO(), '2026-03-29T01:30:00.000Z');
  // Monday after the change: 09:00 is now UTC+2 (07:00Z); the Monday before it was UTC+1 (08:00Z).
  t.is(DateTime.fromMillis(nextSlotStart(s, at('2026-03-29T12:00', zone))!, { zone: 'UTC' }).toISO(), '2026-03-30T07:00:00.000Z');
  t.is(DateTime.fromMillis(nextSlotStart(s, at('2026-03-22T12:00', zone))!, { zone: 'UTC' }).toISO(), '2026-03-23T08:00:00.000Z');
  // Fall back (2026-10-25): a 02:30 wall time exists twice; luxon takes the standard-time (later) one.
  const fall = sched({ timezone: zone, slots: [{ day_of_week: 6, start_time: '02:30', end_time: '03:00' }] });
  t.is(DateTime.fromMillis(nextSlotStart(fall, at('2026-10-24T12:00', zone))!, { zone: 'UTC' }).toISO(), '2026-10-25T01:30:00.000Z');
});

test('concurrency is min(max_concurrency, organization ceiling, caller IDs)', (t) => {
  t.is(effectiveConcurrency(10, 20, 30), 10);
  t.is(effectiveConcurrency(10, 5, 30), 5);
  t.is(effectiveConcurrency(10, 20, 3), 3);
  t.is(effectiveConcurrency(10, 20, 0), 0);
});

test('config schemas: the spec defaults, ranges and 422 items', (t) => {
  t.deepEqual(DEFAULT_RETRY_CONFIG, {
    enabled: true, max_retries: 2, retry_delay_seconds: 120, retry_on_busy: true, retry_on_no_answer: true, retry_on_voicemail: true,
    backoff_multiplier: 1, retry_delay_cap_seconds: 3600, busy_delay_seconds: null, no_answer_delay_seconds: null, voicemail_delay_seconds: null,
  });
  t.deepEqual(DEFAULT_CIRCUIT_BREAKER, { enabled: true, failure_threshold: 0.5, window_seconds: 120, min_calls_in_window: 5 });
  t.deepEqual(circuitBreakerSchema.parse({ unknown: 1 }), DEFAULT_CIRCUIT_BREAKER, 'unknown fields ignored');
  t.is(scheduleConfigSchema.parse({ slots: [{ day_of_week: 0, start_time: '09:00', end_time: '10:00' }] }).timezone, 'UTC');

  const bad = {
    name: '', agent_uuid: 5, source_type: 'xlsx', source_id: 'x', max_concurrency: 101,
    retry_config: { max_retries: 11, retry_delay_seconds: 5, backoff_multiplier: 6, retry_delay_cap_seconds: 59, busy_delay_seconds: 3601 },
    schedule_config: { timezone: 'Mars/Olympus', slots: [{ day_of_week: 7, start_time: '9:00', end_time: '10:00' }, { day_of_week: 1, start_time: '10:00', end_time: '09:59' }, { day_of_week: 1, start_time: '25:00', end_time: '26:00' }] },
    circuit_breaker: { failure_threshold: 1.5, window_seconds: 29, min_calls_in_window: 0 },
  };
  const r = createCampaignBody.safeParse(bad);
  t.false(r.success);
  const items = to422(zodToItems(r.error!, bad));
  const at422 = (loc: string) => items.find((i) => i.loc.join('.') === loc);
  t.is(at422('body.name')?.type, 'string_too_short');
  t.is(at422('body.agent_uuid')?.type, 'string_type');
  t.is(at422('body.source_type')?.type, 'string_pattern_mismatch');
  t.is(at422('body.max_concurrency')?.type, 'less_than_equal');
  t.is(at422('body.retry_config.max_retries')?.type, 'less_than_equal');
  t.is(at422('body.retry_config.retry_delay_seconds')?.type, 'greater_than_equal');
  t.is(at422('body.retry_config.backoff_multiplier')?.type, 'less_than_equal');
  t.is(at422('body.retry_config.retry_delay_cap_seconds')?.type, 'greater_than_equal');
  t.is(at422('body.retry_config.busy_delay_seconds')?.type, 'less_than_equal');
  t.is(at422('body.schedule_config.timezone')?.type, 'value_error');
  t.is(at422('body.schedule_config.slots.0.day_of_week')?.type, 'less_than_equal');
  t.is(at422('body.schedule_config.slots.0.start_time')?.type, 'string_pattern_mismatch');
  t.is(at422('body.schedule_config.slots.1.end_time')?.type, 'value_error');
  t.regex(at422('body.schedule_config.slots.1.end_time')!.msg, /end_time \(09:59\) must be after start_time \(10:00\)/);
  t.is(at422('body.schedule_config.slots.2.start_time')?.type, 'value_error');
  t.is(at422('body.circuit_breaker.failure_threshold')?.type, 'less_than_equal');
  t.is(at422('body.circuit_breaker.window_seconds')?.type, 'greater_than_equal');
  t.is(at422('body.circuit_breaker.min_calls_in_window')?.type, 'greater_than_equal');
  const missing = to422(zodToItems(createCampaignBody.safeParse({}).error!, {}));
  t.deepEqual(missing.map((i) => [i.loc.join('.'), i.type]).sort(), [['body.agent_uuid', 'missing'], ['body.name', 'missing'], ['body.source_id', 'missing'], ['body.source_type', 'missing']]);
  const noSlots = scheduleConfigSchema.safeParse({ slots: [] });
  t.is(to422(zodToItems(noSlots.error!, { slots: [] }))[0]!.type, 'too_short');
  const many = { slots: Array.from({ length: 51 }, () => ({ day_of_week: 0, start_time: '09:00', end_time: '10:00' })) };
  t.is(to422(zodToItems(scheduleConfigSchema.safeParse(many).error!, many))[0]!.type, 'too_long');
});

test('CSV: phone_number required, numbers normalised to E.164, other columns are context variables', (t) => {
  const contacts = parseContactsCsv('name,phone_number,city\nAda,+1 (415) 555-0101,SF\n"Lin, Bo",0044 20 7946 0958,"London"\n');
  t.deepEqual(contacts, [
    { rowNumber: 1, phoneNumber: '+14155550101', variables: { name: 'Ada', city: 'SF' } },
    { rowNumber: 2, phoneNumber: '+442079460958', variables: { name: 'Lin, Bo', city: 'London' } },
  ]);
  t.is(normalisePhone('+91 98765 43210'), '+919876543210');
  t.is(normalisePhone('12'), null);
  const err = (csv: string) => t.throws(() => parseContactsCsv(csv), { instanceOf: CsvError })!.message;
  t.is(err('name,phone\nAda,+14155550101\n'), "CSV must have a 'phone_number' column (found: 'name', 'phone')");
  t.is(err(''), 'CSV file is empty: expected a header row with a phone_number column');
  t.is(err('phone_number,name\n'), 'CSV has no contact rows');
  t.is(err('phone_number,name\n+14155550101,Ada\nnot-a-number,Bo\n'), "Row 2, column 'phone_number': 'not-a-number' is not a valid phone number (use E.164, e.g. +14155550123)");
  t.is(err('phone_number,name\n+14155550101,Ada\n,Bo\n'), "Row 2, column 'phone_number': phone number is empty");
  t.regex(err('phone_number,name\n+14155550101,Ada,extra\n'), /^CSV is not well formed \(line 2\)/);
  t.regex(err('phone_number,name\n"+14155550101,Ada\n'), /^CSV is not well formed/);
  t.is(err('phone_number,name,name\n+14155550101,a,b\n'), "CSV header: column 'name' appears more than once");
  t.is(err('phone_number,first name\n+14155550101,a\n'), "CSV header: column 'first name' is not a valid variable name (letters, digits, _, . and -, not starting with a digit)");
});
