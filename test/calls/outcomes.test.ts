// Spec-exact call outcomes (docs/calls.md "Outcomes"): every call that never connected — dial failed, a stale pending
// phone call, a web call nobody joined — gets `call.ended` (no `call.started`) and then `call.completed` from the
// post-call workflow, with endedReason null and the reason in connectionStatus (busy/no-answer: test/telephony/
// transfer-recording.test.ts); DTMF keys land on logs.dtmf and reach the LLM as one user turn, never as a
// transcript role. Real Temporal + worker, fake Twilio (REST + media stream), fake engines.
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { expirePendingCalls } from '../../core/calls/expiry.ts';
import { createLogger } from '../../core/logger.ts';
import { expireStalePhoneCalls } from '../../core/telephony/ended.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { startReceiver } from '../helpers/http.ts';
import { agentQuiet, dialOf, openStream, phoneAgent, twilioDialBody, twilioLine } from '../telephony/media-helpers.ts';
import { until } from '../helpers/wait.ts';

const line = twilioLine(test, 'call-outcomes-test', '+15550002222', '+15557650000', { balanceUsd: 50, concurrency: 20, ratePerMinute: 1_000_000 });

const agent = (over: Record<string, unknown> = {}) => phoneAgent({ name: 'outcome agent', ...over });
const dialBody = (hook: string) => twilioDialBody(line, { agent: agent({ webhook: { url: hook } }) });
const deps = () => ({ db: line.rig.s.db, config: line.rig.s.config, logger: createLogger({ level: 'silent' }), temporal: line.rig.s.temporal!.client });
const backdate = (callId: string, s: number) =>
  line.rig.s.db.query(sql.unsafe`UPDATE calls SET created_at = now() - make_interval(secs => ${s}) WHERE id = ${callId}`);

type Ev = { event: string; callId: string; endedReason: unknown; connectionStatus: unknown; recordingUrl?: unknown; transcript?: unknown; duration?: number };

/** The never-connected rule: call.ended then call.completed, both with endedReason null and the reason. */
async function assertNeverConnected(t: import('ava').ExecutionContext, receiver: Awaited<ReturnType<typeof startReceiver>>, callId: string, reason: string) {
  const events = (await receiver.waitFor(2, 60_000)).map((e) => e.json as Ev);
  t.deepEqual(events.map((e) => e.event), ['call.ended', 'call.completed'], reason);
  for (const e of events) t.like(e, { callId, endedReason: null, connectionStatus: reason, duration: 0 });
  t.like(events[1], { recordingUrl: null, transcript: null, transcriptUrl: null, summary: null });
  t.false(events.some((e) => e.event === 'call.started'));
  await until(async () => (await line.rig.s.db.maybeOneFirst(sql.unsafe`SELECT post_call_completed_at FROM calls WHERE id = ${callId}`)) !== null, { what: 'post-call finished', timeoutMs: 30_000 });
  t.is(receiver.events.length, 2, 'exactly once each');
}

test.serial('dial failed (carrier 4xx): call.ended, then call.completed', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  line.rig.twilio.failNextDial(line.acc.sid, 400, 21211, "The 'To' number is not a valid phone number.");
  const r = await line.rig.s.request('POST', '/call', { key: line.org.apiKey, body: dialBody(receiver.url) });
  t.is(r.status, 400);
  await assertNeverConnected(t, receiver, r.body.detail.callId, 'dial_failed');
});

test.serial('a stale pending phone call (no media stream, no carrier status): call.ended, then call.completed', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const r = await line.rig.s.request('POST', '/call', { key: line.org.apiKey, body: dialBody(receiver.url) });
  t.is(r.status, 200, JSON.stringify(r.body));
  await backdate(r.body.callId, line.rig.s.config.PHONE_PENDING_TIMEOUT_S + 5);
  t.true((await expireStalePhoneCalls(deps())) >= 1);
  await assertNeverConnected(t, receiver, r.body.callId, 'telephony_no_status');
});

test.serial('a web call nobody joins: call.ended, then call.completed (no_participant)', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const r = await line.rig.s.request('POST', '/call', { key: line.org.apiKey, body: { agent: agent({ webhook: { url: receiver.url } }) } });
  t.is(r.status, 200, JSON.stringify(r.body));
  await backdate(r.body.callId, line.rig.s.config.CALL_JOIN_TIMEOUT_S + 5);
  const expired = await expirePendingCalls(deps(), line.org.orgId);
  t.deepEqual(expired.map((e) => e.id), [r.body.callId]);
  await assertNeverConnected(t, receiver, r.body.callId, 'no_participant');
});

test.serial('a call whose pipeline never starts (cancelled): call.ended, then call.completed', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const name = line.rig.scenarios.add({ failBuild: true } as never);
  const callId = await insertPendingCall(line.rig.s.db, { orgId: line.org.orgId, config: agentConfig({ name, webhook: { url: receiver.url, headers: {} } }) });
  const caller = TestCaller.connect(line.rig.s.origin, callId, line.org.apiKey);
  t.is((await caller.closed).code, 1011);
  await assertNeverConnected(t, receiver, callId, 'cancelled');
});

test.serial('DTMF: keys go to logs.dtmf and reach the LLM as one user turn; the transcript keeps only the spec roles', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const name = line.rig.scenarios.add({ stt: { utterances: [] }, llm: [{ text: 'You chose option twelve.' }] });
  const r = await line.rig.s.request('POST', '/call', { key: line.org.apiKey, body: { ...dialBody(receiver.url), agent: agent({ name, webhook: { url: receiver.url } }) } });
  t.is(r.status, 200, JSON.stringify(r.body));
  const callId = r.body.callId as string;
  const call = await dialOf(line.rig, callId);
  await line.rig.twilio.ring(call.sid);
  const twiml = await line.rig.twilio.answer(call.sid);
  const media = openStream(line.rig, call, twiml.stream!);
  await media.opened;
  await until(() => media.heardMs > 0, { what: 'greeting heard', timeoutMs: 20_000 });
  await agentQuiet(media);
  media.dtmf('1');
  media.dtmf('2');
  media.dtmf('#');
  const llm = line.rig.scenarios.made.get(name)!.engines.llm;
  const req = await until(() => llm.requests[0], { what: 'the LLM asked', timeoutMs: 20_000 });
  const last = req.messages.at(-1) as { role: string; content: string };
  t.deepEqual({ role: last.role, content: last.content }, { role: 'user', content: '[keypad: 12#]' });
  await agentQuiet(media);
  media.hangup();
  await line.rig.twilio.finish(call.sid, 'completed', 4);
  const row = await endedRow(line.rig.s.db, callId);
  t.deepEqual(row.logs.dtmf.map((d: { digit: string }) => d.digit), ['1', '2', '#']);
  for (const d of row.logs.dtmf) t.true(Number.isInteger(d.t_ms) && Boolean(Date.parse(d.timestamp)));
  const roles = new Set((row.transcript as Array<{ role: string }>).map((e) => e.role));
  t.deepEqual([...roles].filter((x) => !['user', 'assistant', 'tool'].includes(x)), []);
  t.true(roles.has('assistant'));
  const completed = await until(() => receiver.events.map((e) => e.json as Ev & { transcript: Array<{ role: string }> }).find((e) => e.event === 'call.completed'), { what: 'call.completed', timeoutMs: 60_000 });
  t.false(completed.transcript.some((e) => !['user', 'assistant', 'tool'].includes(e.role)));
  t.true(completed.transcript.some((e) => e.role === 'assistant' && (e as unknown as { content: string }).content === 'You chose option twelve.'));
});

test.serial('migration 0105 moves keypresses an earlier version kept on the transcript to logs.dtmf', async (t) => {
  const { readFile } = await import('node:fs/promises');
  const { default: pg } = await import('pg');
  const text = await readFile(new URL('../../core/db/migrations/0105_credentials.sql', import.meta.url), 'utf8');
  const statement = text.slice(text.indexOf('UPDATE calls SET\n  logs = logs'));
  const old = [
    { role: 'assistant', content: 'Press one.', timestamp: '2026-01-01T00:00:00.000Z' },
    { role: 'dtmf', digit: '1', content: '1', t_ms: 1200, timestamp: '2026-01-01T00:00:01.200Z' },
    { role: 'user', content: 'sales', timestamp: '2026-01-01T00:00:02.000Z' },
    { role: 'dtmf', digit: '#', content: '#', t_ms: 2500, timestamp: '2026-01-01T00:00:02.500Z' },
  ];
  const id = await line.rig.s.db.oneFirst(sql.unsafe`
    INSERT INTO calls (organization_id, transport, status, call_source, transcript, logs)
    VALUES (${line.org.orgId}, 'outbound', 'completed', 'api_outbound', ${JSON.stringify(old)}::jsonb, '{"latency": []}'::jsonb) RETURNING id::text`) as string;
  const client = new pg.Client({ connectionString: line.rig.s.config.DATABASE_URL });
  await client.connect();
  try {
    await client.query(statement);
    await client.query(statement); // a second run changes nothing
  } finally {
    await client.end();
  }
  const row = await line.rig.s.db.one(sql.unsafe`SELECT transcript, logs FROM calls WHERE id = ${id}`) as { transcript: unknown[]; logs: Record<string, unknown> };
  t.deepEqual(row.transcript, [old[0], old[2]]);
  t.deepEqual(row.logs, { latency: [], dtmf: [{ digit: '1', t_ms: 1200, timestamp: '2026-01-01T00:00:01.200Z' }, { digit: '#', t_ms: 2500, timestamp: '2026-01-01T00:00:02.500Z' }] });
});

test.serial('a body that is not JSON is refused like any call start: 400 and its rejected row (POST /call, test-call)', async (t) => {
  const mine = await line.rig.s.createOrg({ ratePerMinute: 1_000_000 });
  const saved = await line.rig.s.request('POST', '/agents', { key: mine.apiKey, body: agent({ name: 'json tester' }) });
  t.is(saved.status, 201, JSON.stringify(saved.body));
  const bad = await line.rig.s.request('POST', '/call', { key: mine.apiKey, raw: '{"agent": ' });
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /^Malformed JSON body/);
  const badTest = await line.rig.s.request('POST', `/agents/${saved.body.uuid}/test-call`, { key: mine.apiKey, raw: 'nope' });
  t.is(badTest.status, 400);
  t.regex(badTest.body.detail, /^Malformed JSON body/);
  const rows = await line.rig.s.db.any(sql.unsafe`
    SELECT connection_status, status, ended_reason, tags, agent_uuid::text, logs FROM calls WHERE organization_id = ${mine.orgId} ORDER BY created_at`) as Array<{ connection_status: string; status: string; ended_reason: null; tags: string[]; agent_uuid: string | null; logs: { validation_error: string } }>;
  t.is(rows.length, 2);
  for (const r of rows) {
    t.like(r, { connection_status: 'schema_validation', status: 'error', ended_reason: null });
    t.true(r.tags.includes('rejected'));
    t.regex(r.logs.validation_error, /^Malformed JSON body/);
  }
  t.is(rows[1]!.agent_uuid, saved.body.uuid);
  // other routes answer malformed JSON as before; without a key nothing is stored
  t.is((await line.rig.s.request('POST', '/tools', { key: mine.apiKey, raw: '{' })).status, 400);
  t.is((await line.rig.s.request('POST', '/call', { key: null, raw: '{' })).status, 401);
  t.is((await line.rig.s.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM calls WHERE organization_id = ${mine.orgId}`)), 2);
});
