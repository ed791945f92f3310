// Retries and schedule slots on the real dev server and the fake Twilio: busy / no-answer retried at the formula's
// delays (scheduled times read from the database), per-reason flags, max_retries, jitter only with a multiplier,
// the cap; a slot opening about a minute from now in a non-UTC zone (nothing dials before it). The retry campaign's
// history is the recorded replay fixture.
import test from 'ava';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DateTime } from 'luxon';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowsPath } from '../../activities/worker.ts';
import { campaignWorkflowId, pauseUpdate } from '../../workflows/campaign/messages.ts';
import { attempts, carrierScript, csvOf, setupOrg, startEnv, uploadCsv, waitForState, type Env } from './helpers.ts';
import { until } from '../helpers/wait.ts';

const FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'campaign-history.json');
const { History } = proto.temporal.api.history.v1;
/** Stored as protobufjs's JSON form of the History message, like the post-call fixture. */
const historyToObject = (h: proto.temporal.api.history.v1.IHistory) =>
  History.toObject(History.fromObject(h), { longs: String, enums: String, bytes: String });

let env: Env;
test.before(async () => {
  env = await startEnv('campaigns-retries-test');
});
test.after.always(async () => {
  await env?.close();
});

async function createAndStart(apiKey: string, agentUuid: string, numbers: string[], body: Record<string, unknown>) {
  const sourceId = await uploadCsv(env.s, apiKey, csvOf(numbers));
  const c = await env.s.request('POST', '/campaign/create', { key: apiKey, body: { name: 'Retries', agent_uuid: agentUuid, source_type: 'csv', source_id: sourceId, ...body } });
  if (c.status !== 200) throw new Error(`create ${c.status}: ${JSON.stringify(c.body)}`);
  const started = await env.s.request('POST', `/campaign/${c.body.id}/start`, { key: apiKey });
  if (started.status !== 200) throw new Error(`start ${started.status}: ${JSON.stringify(started.body)}`);
  return c.body.id as number;
}

const BUSY = '+16505550101';
const NO_ANSWER = '+16505550102';
const ANSWERED = '+16505550103';
const byNumber = (to: string) => (to === BUSY ? 'busy' : to === NO_ANSWER ? 'no-answer' : 'completed') as 'busy' | 'no-answer' | 'completed';
const ms = (iso: string | null) => new Date(iso!).getTime();

test('busy and no-answer are retried at their per-reason delays (no jitter at multiplier 1), max_retries respected', async (t) => {
  t.timeout(180_000);
  const org = await setupOrg(env, { numbers: 3 });
  const carrier = carrierScript(env.fake, org.accountSid, (call) => ({ status: byNumber(call.to), afterMs: 20 }));
  t.teardown(carrier.stop);
  const id = await createAndStart(org.apiKey, org.agentUuid, [BUSY, NO_ANSWER, ANSWERED], {
    max_concurrency: 3,
    retry_config: { max_retries: 2, retry_delay_seconds: 10, no_answer_delay_seconds: 15 },
  });
  const done = await waitForState(env.s, org.apiKey, id, 'completed', 150_000);
  t.is(done.executed_count, 3);
  const rows = await attempts(env.s, id);
  const of = (n: string) => rows.filter((r) => r.phone_number === n);
  t.is(of(BUSY).length, 3, 'first dial + max_retries (2)');
  t.is(of(NO_ANSWER).length, 3);
  t.is(of(ANSWERED).length, 1, 'an answered call is not retried');
  for (const [n, delay] of [[BUSY, 10], [NO_ANSWER, 15]] as const) {
    const [a1, a2, a3] = of(n);
    t.is(a1!.retry_delay_seconds, null);
    for (const [prev, next] of [[a1!, a2!], [a2!, a3!]] as const) {
      t.is(next.retry_delay_seconds, delay);
      t.is(ms(next.scheduled_at) - ms(prev.ended_at), delay * 1000, `${n} attempt ${next.attempt} scheduled ${delay} s after the previous one ended`);
      t.true(ms(next.dialed_at) >= ms(next.scheduled_at), 'never dialed before it is due');
      t.log(`${n} attempt ${next.attempt}: dialed ${ms(next.dialed_at) - ms(next.scheduled_at)} ms after due`);
    }
  }
  t.is(carrier.state.dials.filter((c) => c.to === BUSY).length, 3);
  const report = (await (await fetch(`${env.s.baseUrl}/campaign/${id}/report`, { headers: { 'x-api-key': org.apiKey } })).text()).trim().split('\r\n');
  t.regex(report[1]!, new RegExp(`^1,\\${BUSY},done,3,busy,,,`));
  t.regex(report[2]!, new RegExp(`^2,\\${NO_ANSWER},done,3,no_answer,,,`));
  t.regex(report[3]!, new RegExp(`^3,\\${ANSWERED},done,1,cancelled,,,`));

  const history = await env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(id)).fetchHistory();
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history));
  if (process.env.RECORD_FIXTURES === '1') writeFileSync(FIXTURE, `${JSON.stringify(historyToObject(history), null, 1)}\n`);
});

test('per-reason flags: retry_on_busy false dials a busy number once; no-answer still retried', async (t) => {
  t.timeout(120_000);
  const org = await setupOrg(env, { numbers: 2 });
  const carrier = carrierScript(env.fake, org.accountSid, (call) => ({ status: byNumber(call.to), afterMs: 20 }));
  t.teardown(carrier.stop);
  const id = await createAndStart(org.apiKey, org.agentUuid, [BUSY, NO_ANSWER], {
    max_concurrency: 2, retry_config: { retry_on_busy: false, max_retries: 1, retry_delay_seconds: 10 },
  });
  await waitForState(env.s, org.apiKey, id, 'completed', 100_000);
  const rows = await attempts(env.s, id);
  t.deepEqual(rows.map((r) => [r.phone_number, r.attempt, r.connection_status]), [[BUSY, 1, 'busy'], [NO_ANSWER, 1, 'no_answer'], [NO_ANSWER, 2, 'no_answer']]);
  t.is(ms(rows[2]!.scheduled_at) - ms(rows[1]!.ended_at), 10_000);
});

test('with a multiplier > 1: ±20 % jitter on base × multiplier^(N−1), capped at retry_delay_cap_seconds', async (t) => {
  t.timeout(200_000);
  const org = await setupOrg(env, { numbers: 1 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'busy', afterMs: 20 }));
  t.teardown(carrier.stop);
  const id = await createAndStart(org.apiKey, org.agentUuid, [BUSY], {
    max_concurrency: 1, retry_config: { max_retries: 3, retry_delay_seconds: 10, backoff_multiplier: 5, retry_delay_cap_seconds: 60 },
  });
  // Retry 3 would be 10 × 5² = 250 s: it is scheduled (capped) as soon as attempt 3 ends, about 70 s in.
  const rows = await until(async () => {
    const r = await attempts(env.s, id);
    return r.length === 4 ? r : null;
  }, { what: 'the fourth attempt scheduled', timeoutMs: 150_000, everyMs: 250 });
  const [a1, a2, a3, a4] = rows;
  const d1 = a2!.retry_delay_seconds!;
  const d2 = a3!.retry_delay_seconds!;
  t.true(d1 >= 8 && d1 <= 12, `retry 1: ${d1} s within 10 s ± 20 %`);
  t.not(d1, 10, 'jitter applied');
  t.true(d2 >= 40 && d2 <= 60, `retry 2: ${d2} s within 50 s ± 20 %`);
  t.is(a4!.retry_delay_seconds, 60, 'retry 3: 250 s capped at 60 s');
  t.is(Math.round(ms(a2!.scheduled_at) - ms(a1!.ended_at)), Math.round(d1 * 1000));
  t.is(Math.round(ms(a4!.scheduled_at) - ms(a3!.ended_at)), 60_000);
  await env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(id)).executeUpdate(pauseUpdate);
});

test('a slot opening about a minute from now in Asia/Kolkata: nothing dials before it, dialing starts at it', async (t) => {
  t.timeout(240_000);
  const zone = 'Asia/Kolkata';
  const org = await setupOrg(env, { numbers: 2 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'completed', afterMs: 20 }));
  t.teardown(carrier.stop);
  const start = DateTime.now().setZone(zone).plus({ seconds: 60 }).startOf('minute').plus({ minutes: 1 });
  const endMin = Math.min(start.hour * 60 + start.minute + 10, 24 * 60);
  const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  const schedule = { timezone: zone, slots: [{ day_of_week: start.weekday - 1, start_time: start.toFormat('HH:mm'), end_time: hhmm(endMin) }] };
  const id = await createAndStart(org.apiKey, org.agentUuid, ['+16505550201', '+16505550202', '+16505550203'], { max_concurrency: 2, schedule_config: schedule });

  const waiting = await until(async () => {
    const c = await (await env.s.request('GET', `/campaign/${id}`, { key: org.apiKey })).body;
    return c.logs.find((l: { event: string }) => l.event === 'slot_wait');
  }, { what: 'slot wait log', timeoutMs: 90_000, everyMs: 100 }).catch(async (err: unknown) => {
    const c = await (await env.s.request('GET', `/campaign/${id}`, { key: org.apiKey })).body;
    t.log(JSON.stringify({ state: c.state, logs: c.logs, start: start.toISO(), now: DateTime.now().setZone(zone).toISO(), dials: carrier.state.dials.length }));
    throw err;
  });
  t.is(waiting.details.until, start.toUTC().toISO());
  t.is(waiting.details.timezone, zone);
  t.is(carrier.state.dials.length, 0);
  const done = await waitForState(env.s, org.apiKey, id, 'completed', 200_000);
  t.is(done.executed_count, 3);
  t.true(carrier.state.dialTimes.every((at) => at >= start.toMillis()), 'no dial before the slot opened');
  t.log(`first dial ${carrier.state.dialTimes[0]! - start.toMillis()} ms after the slot opened`);
});

test('the recorded campaign history in test/fixtures replays cleanly', async (t) => {
  t.true(existsSync(FIXTURE), 'fixture present (regenerate with RECORD_FIXTURES=1)');
  const history = History.fromObject(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  t.true((history.events?.length ?? 0) > 50);
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history, 'campaign-fixture'));
});
