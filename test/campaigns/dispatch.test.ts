// Campaign dialing end to end on the fake Twilio: bounded concurrency over 200 contacts, caller IDs one call at a
// time, every contact accounted for; pause / resume / live edits; a completed campaign refuses edits; the circuit
// breaker and a wallet refusal pause the campaign with a log entry; the histories replay.
import test from 'ava';
import { Worker } from '@temporalio/worker';
import { z } from 'zod';
import { workflowsPath } from '../../activities/worker.ts';
import { sql } from '../../core/db/pool.ts';
import { creditWallet } from '../../core/orgs.ts';
import { campaignWorkflowId, progressQuery } from '../../workflows/campaign/messages.ts';
import { attempts, campaign, carrierScript, csvOf, phoneList, setupOrg, startEnv, uploadCsv, waitFor, waitForState, type Env } from './helpers.ts';

let env: Env;

test.before(async () => {
  env = await startEnv('campaigns-dispatch-test', { env: { CALL_JOIN_TIMEOUT_S: '5' } });
});
test.after.always(async () => {
  await env?.close();
});

async function createAndStart(apiKey: string, agentUuid: string, numbers: string[], body: Record<string, unknown> = {}) {
  const sourceId = await uploadCsv(env.s, apiKey, csvOf(numbers));
  const c = await env.s.request('POST', '/campaign/create', { key: apiKey, body: { name: 'Dispatch', agent_uuid: agentUuid, source_type: 'csv', source_id: sourceId, ...body } });
  if (c.status !== 200) throw new Error(`create ${c.status}: ${JSON.stringify(c.body)}`);
  const started = await env.s.request('POST', `/campaign/${c.body.id}/start`, { key: apiKey });
  if (started.status !== 200) throw new Error(`start ${started.status}: ${JSON.stringify(started.body)}`);
  return c.body.id as number;
}

test.serial('200 contacts at max_concurrency 10: never more than 10 in flight, each caller ID one call at a time, all accounted for', async (t) => {
  t.timeout(300_000);
  const org = await setupOrg(env, { numbers: 12, concurrency: 50 });
  const outcomes = ['completed', 'busy', 'no-answer'] as const;
  const carrier = carrierScript(env.fake, org.accountSid, (call) => ({ status: outcomes[Number(call.to.slice(-1)) % 3]!, afterMs: 20 + (Number(call.to.slice(-2)) % 5) * 15 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(200, '+1650');
  const id = await createAndStart(org.apiKey, org.agentUuid, numbers, { max_concurrency: 10, retry_config: { enabled: false }, circuit_breaker: { enabled: false } });

  const done = await waitForState(env.s, org.apiKey, id, 'completed', 240_000);
  t.deepEqual(carrier.state.errors, []);
  t.true(carrier.state.maxLive <= 10, `max in flight at the carrier: ${carrier.state.maxLive}`);
  t.true(carrier.state.maxLive > 1, 'dialed in parallel');
  t.is(carrier.state.maxPerFrom, 1, 'a caller ID carries one call at a time');
  t.true(carrier.state.dials.every((c) => org.numbers.includes(c.from)), 'caller IDs come from the campaign configuration');
  t.is(carrier.state.dials.length, 200, 'one dial per contact');
  t.deepEqual(carrier.state.dials.map((c) => c.to).sort(), [...numbers].sort());
  t.like(done, { executed_count: 200, total_queued_count: 200, total_rows: 200, processed_rows: 200, failed_rows: 0 });
  t.truthy(done.completed_at);
  t.is(done.logs.at(-1).event, 'completed');

  const rows = await attempts(env.s, id);
  t.is(rows.length, 200);
  const expected = { completed: 'cancelled', busy: 'busy', 'no-answer': 'no_answer' } as const;
  for (const r of rows) t.is(r.connection_status, expected[outcomes[Number(r.phone_number.slice(-1)) % 3]!], r.phone_number);
  const calls = await env.s.request('GET', `/campaign/${id}/calls?per_page=100`, { key: org.apiKey });
  t.like(calls.body, { total: 200, perPage: 100, totalPages: 2 });
  t.true(calls.body.items.every((c: { campaignId: number; transport: string }) => c.campaignId === id && c.transport === 'outbound'));
  const filtered = await env.s.request('GET', `/calls?campaign_id=${id}&per_page=1`, { key: org.apiKey });
  t.is(filtered.body.total, 200);
  const report = (await (await fetch(`${env.s.baseUrl}/campaign/${id}/report`, { headers: { 'x-api-key': org.apiKey } })).text()).trim().split('\r\n');
  t.is(report.length, 201);
  t.true(report.slice(1).every((l) => /^\d+,\+1650\d{7},done,1,(cancelled|busy|no_answer),,,[0-9a-f-]{36},,false,,,,$/.test(l)), report.slice(1, 3).join(' | '));

  // A completed campaign refuses edits and transitions.
  const edit = await env.s.request('PATCH', `/campaign/${id}`, { key: org.apiKey, body: { name: 'late' } });
  t.deepEqual([edit.status, edit.body], [400, { detail: 'Cannot update a completed campaign' }]);
  const pause = await env.s.request('POST', `/campaign/${id}/pause`, { key: org.apiKey });
  t.deepEqual([pause.status, pause.body], [400, { detail: "Cannot pause a campaign in state 'completed'" }]);

  const handle = env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(id));
  const history = await handle.fetchHistory();
  t.log(`history: ${history.events?.length} events for 200 contacts`);
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, history));
});

test.serial('pause stops dialing, resume continues, an edit of max_concurrency applies to the running campaign', async (t) => {
  t.timeout(240_000);
  const org = await setupOrg(env, { numbers: 4, concurrency: 50 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'busy', afterMs: 150 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(40, '+1651');
  const id = await createAndStart(org.apiKey, org.agentUuid, numbers, { max_concurrency: 1, retry_config: { enabled: false } });
  await waitFor('a few dials', () => carrier.state.dials.length >= 3);

  const paused = await env.s.request('POST', `/campaign/${id}/pause`, { key: org.apiKey });
  t.deepEqual([paused.status, paused.body.state], [200, 'paused']);
  // The call in flight ends; after that nothing more is dialed while paused.
  const handle = env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(id));
  await waitFor('in-flight call settled', async () => {
    const p = await handle.query(progressQuery);
    const rows = await attempts(env.s, id);
    return p.state === 'paused' && p.inFlight === 0 && carrier.state.live === 0 && rows.every((r) => r.ended_at !== null);
  });
  const atPause = carrier.state.dials.length;
  t.is((await campaign(env.s, org.apiKey, id)).state, 'paused');

  // Edit while paused and running: the live workflow picks up the new concurrency (4 caller IDs available).
  const edited = await env.s.request('PATCH', `/campaign/${id}`, { key: org.apiKey, body: { max_concurrency: 4 } });
  t.is(edited.status, 200);
  t.is((await handle.query(progressQuery)).settings.maxConcurrency, 4);
  t.is(carrier.state.dials.length, atPause, 'nothing dialed while paused');
  t.is(carrier.state.maxLive, 1);
  const resumed = await env.s.request('POST', `/campaign/${id}/resume`, { key: org.apiKey });
  t.deepEqual([resumed.status, resumed.body.state], [200, 'running']);
  const done = await waitForState(env.s, org.apiKey, id, 'completed', 180_000);
  t.is(done.executed_count, 40);
  t.true(carrier.state.dials.length === 40);
  t.true(carrier.state.maxLive > 1 && carrier.state.maxLive <= 4, `max in flight after the edit: ${carrier.state.maxLive}`);
  const events = done.logs.map((l: { event: string }) => l.event);
  for (const e of ['paused', 'settings_updated', 'resumed', 'completed']) t.true(events.includes(e), e);
});

test.serial('circuit breaker: a carrier failing the dials pauses the campaign at the threshold, with the log entry', async (t) => {
  t.timeout(180_000);
  const org = await setupOrg(env, { numbers: 2, concurrency: 50 });
  // The first dial is refused by the carrier's REST API (dial_failed), the rest fail on the line (connection_failed).
  env.fake.failNextDial(org.accountSid, 400, 21211, "The 'To' number is not a valid phone number.");
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'failed', afterMs: 20 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(20, '+1652');
  const id = await createAndStart(org.apiKey, org.agentUuid, numbers, {
    max_concurrency: 1, retry_config: { enabled: false }, circuit_breaker: { failure_threshold: 0.6, window_seconds: 60, min_calls_in_window: 4 },
  });
  const paused = await waitForState(env.s, org.apiKey, id, 'paused');
  const trip = paused.logs.find((l: { event: string }) => l.event === 'circuit_breaker_tripped');
  t.truthy(trip);
  t.like(trip, { level: 'error', details: { calls: 4, failures: 4, failure_threshold: 0.6, window_seconds: 60, min_calls_in_window: 4 } });
  t.regex(trip.message, /^Circuit breaker tripped: 4 of 4 calls failed in the last 60 s/);
  const rows = await attempts(env.s, id);
  t.is(rows.length, 4, 'tripped after exactly min_calls_in_window failed calls');
  t.deepEqual(rows.map((r) => r.connection_status), ['dial_failed', 'connection_failed', 'connection_failed', 'connection_failed']);
  t.true(rows.every((r) => r.failure === true));
  t.true(paused.logs.some((l: { event: string; message: string }) => l.event === 'dial_failed' && /Carrier rejected the dial/.test(l.message)));
  t.is(paused.executed_count, 4);
  const failedRow = await env.s.db.one(sql.type(z.object({ connection_status: z.string(), campaign_id: z.number() }))`
    SELECT connection_status, campaign_id FROM calls WHERE id = ${rows[0]!.call_id}`);
  t.deepEqual(failedRow, { connection_status: 'dial_failed', campaign_id: id });

  // Resumed with a healthy carrier, the window starts empty and the campaign finishes.
  carrier.stop();
  const healthy = carrierScript(env.fake, org.accountSid, () => ({ status: 'completed', afterMs: 20 }));
  t.teardown(healthy.stop);
  t.is((await env.s.request('POST', `/campaign/${id}/resume`, { key: org.apiKey })).status, 200);
  const done = await waitForState(env.s, org.apiKey, id, 'completed');
  t.is(done.executed_count, 20);
});

test.serial('a wallet refusal pauses the campaign with a log entry; topped up and resumed, it completes', async (t) => {
  t.timeout(180_000);
  const org = await setupOrg(env, { numbers: 2, concurrency: 50, balanceUsd: 0 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'completed', afterMs: 20 }));
  t.teardown(carrier.stop);
  const id = await createAndStart(org.apiKey, org.agentUuid, phoneList(3, '+1653'), { max_concurrency: 1 });
  const paused = await waitForState(env.s, org.apiKey, id, 'paused');
  const entry = paused.logs.find((l: { event: string }) => l.event === 'billing_refused');
  t.like(entry, { level: 'error', details: { reason: 'insufficient_balance' } });
  t.regex(entry.message, /^Campaign paused: Insufficient wallet balance/);
  t.is(carrier.state.dials.length, 0);
  await creditWallet(env.s.db, org.orgId, 10);
  t.is((await env.s.request('POST', `/campaign/${id}/resume`, { key: org.apiKey })).status, 200);
  const done = await waitForState(env.s, org.apiKey, id, 'completed');
  t.is(done.executed_count, 3);
  t.is(carrier.state.dials.length, 3);
});

test.serial('the organization slot is taken: the campaign waits for it instead of failing, then dials', async (t) => {
  t.timeout(180_000);
  const org = await setupOrg(env, { numbers: 2, concurrency: 1 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'completed', afterMs: 20 }));
  t.teardown(carrier.stop);
  // A browser/WebSocket call of the organization holds its only slot until it is abandoned (CALL_JOIN_TIMEOUT_S).
  const web = await env.s.request('POST', '/call', { key: org.apiKey, body: { agentId: org.agentUuid } });
  t.is(web.status, 200, JSON.stringify(web.body));
  const id = await createAndStart(org.apiKey, org.agentUuid, phoneList(2, '+1656'), { max_concurrency: 1 });
  const waiting = await waitFor('waiting log', async () => (await campaign(env.s, org.apiKey, id)).logs.find((l: { event: string }) => l.event === 'waiting_for_line'));
  t.like(waiting, { level: 'warning', details: { wait_for: 'organization slot' } });
  t.is(carrier.state.dials.length, 0);
  t.is((await campaign(env.s, org.apiKey, id)).state, 'running');
  const done = await waitForState(env.s, org.apiKey, id, 'completed');
  t.is(done.executed_count, 2);
  t.is(carrier.state.dials.length, 2);
  const webRow = await env.s.request('GET', `/calls/${web.body.callId}`, { key: org.apiKey });
  t.not(webRow.body.status, 'pending', 'the abandoned web call freed the slot');
});
