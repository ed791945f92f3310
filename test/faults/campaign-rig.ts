// The campaign fault tests' rig: a 200-contact campaign at max_concurrency 10 on the real
// processes (api, media, worker as separate processes on one database and the suite's Temporal), with the fake
// Twilio in the test process playing the carrier the way Twilio does — it dials, fetches the answer TwiML from the
// api (behind a "load balancer": the public URL maps to whichever api process runs), opens the <Stream> WebSocket to
// the media node, sends status callbacks to the api; when the answer webhook or the stream cannot be reached the
// call ends (`completed`), and a status callback that cannot be delivered is lost (Twilio does not retry it).
// checkAfterwards: the campaign completes, every contact reaches a final state, every attempt was dialled exactly
// once (retries only per retry_config: busy / no-answer, max_retries 1), no call row is left pending/active, every
// call's post-call ran, at most one call.ended / call.completed per call, and one debit per call that cost something.
// The agent runs on vendor engines (Deepgram STT, ElevenLabs TTS — local fakes of their protocols — and the local
// demo LLM), so that connected calls cost money and the debit is checked; the circuit breaker is off (a media crash
// fails its live calls at once, which would pause the campaign by design).
import type { ExecutionContext } from 'ava';
import { z } from 'zod';
import { loadConfig } from '../../core/config.ts';
import { sql } from '../../core/db/pool.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { startDeepgramFake } from '../fakes/stt/deepgram.ts';
import { FakeElevenLabs } from '../fakes/tts/elevenlabs.ts';
import { FakeTwilio, type FakeCall } from '../fakes/twilio.ts';
import { FakeCarrierStream } from '../fakes/twilio-media.ts';
import { csvOf, phoneList } from '../campaigns/helpers.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import { apiClient, byCall, count, debits, setup, startProcess, type Started } from './harness.ts';
import { until } from '../helpers/wait.ts';

const PUBLIC = 'http://voice.faults.test';
export const CONTACTS = 200;

/** Contact i: i % 4 == 1 busy on the first attempt then answers; i % 4 == 3 never answers; the rest answer. */
function planOf(index: number, attempt: number): 'answer' | 'busy' | 'no-answer' {
  if (index % 4 === 1) return attempt === 1 ? 'busy' : 'answer';
  if (index % 4 === 3) return 'no-answer';
  return 'answer';
}

export async function campaignRig(t: ExecutionContext, queue: string) {
  const twilio = await FakeTwilio.start();
  const deepgram = await startDeepgramFake({ apiKey: 'faults-dg' });
  const eleven = await new FakeElevenLabs({ apiKey: 'faults-el' }).listen();
  t.teardown(async () => { await twilio.close(); await deepgram.close(); await eleven.server.close(); });
  const { db, org, key, receiver, env } = await setup(t, queue, {
    PUBLIC_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.origin, PHONE_PENDING_TIMEOUT_S: '30',
    DEEPGRAM_BASE_URL: deepgram.url, DEEPGRAM_API_KEY: 'faults-dg', ELEVENLABS_BASE_URL: eleven.server.baseUrl, ELEVENLABS_API_KEY: 'faults-el',
  });
  // campaign ids (and so workflow ids campaign-<id>) must not repeat across test files sharing the Temporal server
  await db.query(sql.unsafe`SELECT setval(pg_get_serial_sequence('campaigns', 'id'), ${1_000_000 + Math.floor(Math.random() * 1_000_000_000)})`);

  const procs: { api: Started; media: Started | null } = {
    api: await startProcess('api/main.ts', env),
    media: await startProcess('media/main.ts', env),
  };
  await startProcess('activities/worker.ts', env, false);
  // the load balancer: the public URL goes to the api process that runs now (a dead one refuses the connection)
  twilio.proxy = (url) => url.replace(PUBLIC, procs.api.origin);
  const api = apiClient(key, () => procs.api.origin);

  // a Twilio configuration with 10 caller numbers, an agent with a webhook, the contact list, the campaign
  const acc = twilio.addAccount();
  const cfg = await insertConfig(db, loadConfig({ ...env }), {
    orgId: org.id, name: 'Main line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: false, isDefault: true,
  });
  for (let i = 0; i < 10; i++) {
    const n = `+1415555${String(2000 + i)}`;
    twilio.addNumber(acc.sid, n);
    await db.query(sql.unsafe`INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type)
      VALUES (${org.id}, ${cfg.id}, ${n}, ${n}, 'pstn')`);
  }
  const agent = await api('POST', '/agents', {
    name: 'Campaign fault agent', systemPrompt: 'You are a test agent.',
    llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
    noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello, this is the campaign.'], interruptible: false }, voicemailDetection: false,
    webhook: `${receiver.url}/events`,
  });
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  const numbers = phoneList(CONTACTS, '+1656');
  const indexOf = new Map(numbers.map((n, i) => [n, i]));
  const { body, contentType } = multipart([{ name: 'file', value: csvOf(numbers), filename: 'contacts.csv', contentType: 'text/csv' }]);
  const file = await fetch(`${procs.api.origin}/api/v1/files`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });
  const fileId = ((await file.json()) as { id: string }).id;
  const created = await api('POST', '/campaign/create', {
    name: 'Fault campaign', agent_uuid: agent.body.uuid, source_type: 'csv', source_id: fileId, max_concurrency: 10,
    retry_config: { max_retries: 1, retry_delay_seconds: 10 }, circuit_breaker: { enabled: false },
  });
  t.is(created.status, 200, JSON.stringify(created.body));
  const campaignId = created.body.id as number;

  // the carrier: every dial plays out per planOf; answered calls stream to the media node; the callee hangs up
  // 1 s after the greeting
  const carrier = {
    dials: [] as FakeCall[],
    perNumber: new Map<string, number>(),
    live: new Set<FakeCarrierStream>(),
    connected: 0,
    streamRefused: 0,
    answerFailed: 0,
    callbacksLost: 0,
  };
  const finish = (call: FakeCall, status: 'busy' | 'no-answer' | 'completed', durationS = 0) =>
    twilio.finish(call.sid, status, durationS).then((r) => { if (!r || r.status >= 300) carrier.callbacksLost++; }, () => { carrier.callbacksLost++; });
  const play = async (call: FakeCall, plan: ReturnType<typeof planOf>) => {
    if (plan !== 'answer') return finish(call, plan);
    let twiml;
    try {
      twiml = await twilio.answer(call.sid);
    } catch {
      carrier.answerFailed++; // no application answered: Twilio ends the call
      return finish(call, 'completed');
    }
    if (!twiml.stream || !procs.media) {
      if (twiml.stream) carrier.streamRefused++;
      return finish(call, 'completed');
    }
    const url = twiml.stream.url.replace(PUBLIC.replace(/^http/, 'ws'), procs.media.origin.replace(/^http/, 'ws'));
    const m = FakeCarrierStream.connect(url, { callSid: call.sid, accountSid: call.accountSid, customParameters: twiml.stream.parameters });
    try {
      await m.opened;
    } catch {
      carrier.streamRefused++;
      return finish(call, 'completed');
    }
    carrier.connected++;
    carrier.live.add(m);
    // the callee listens to the greeting and stays on the line a little (1 s of silence after it), then hangs up
    await until(() => m.heardMs >= 300 || m.closeCode !== null, { what: 'the greeting', timeoutMs: 20_000, everyMs: 50 }).catch(() => {}); // a callee stays on a silent line too
    if (m.closeCode === null) await m.silence(1000);
    m.hangup();
    await m.closed;
    carrier.live.delete(m);
    return finish(call, 'completed', 2);
  };
  twilio.on('dial', (call: FakeCall) => {
    if (call.accountSid !== acc.sid) return;
    carrier.dials.push(call);
    const attempt = (carrier.perNumber.get(call.to) ?? 0) + 1;
    carrier.perNumber.set(call.to, attempt);
    setTimeout(() => void play(call, planOf(indexOf.get(call.to) ?? 0, attempt)), 50);
  });
  t.is((await api('POST', `/campaign/${campaignId}/start`)).status, 200);
  return { db, org, env, receiver, procs, api, campaignId, numbers, carrier };
}

export type Rig = Awaited<ReturnType<typeof campaignRig>>;

/** The campaign's state from its row (polling the api would run into the organization's request-rate limit). */
async function campaignState(rig: Rig): Promise<string> {
  return rig.db.oneFirst(sql.type(z.object({ state: z.string() }))`SELECT state FROM campaigns WHERE id = ${rig.campaignId}`);
}

const attemptRow = z.object({ phone_number: z.string(), attempt: z.number(), connection_status: z.string().nullable(), ended_at: z.string().nullable(), call_id: z.string().nullable() });
const callRow = z.object({ id: z.string(), status: z.string(), connection_status: z.string().nullable(), ended_reason: z.string().nullable(), cost: z.number().nullable(), post_call_completed_at: z.string().nullable() });

/** Everything the fault must not break, checked once the campaign has completed. */
export async function checkAfterwards(t: ExecutionContext, rig: Rig): Promise<Record<string, number | string>> {
  const { db, campaignId, numbers, carrier, receiver } = rig;
  await until(async () => (await campaignState(rig)) === 'completed' || null, { what: 'the campaign to complete', timeoutMs: 240_000, everyMs: 250 });
  const done = await rig.api('GET', `/campaign/${campaignId}`);
  t.is(done.body.executed_count, CONTACTS, JSON.stringify(done.body));
  // every contact reached a final state, one dial per attempt, retries only after busy / no-answer
  const attempts = await db.any(sql.type(attemptRow)`
    SELECT c.phone_number, a.attempt, a.connection_status, a.ended_at::text, a.call_id::text
    FROM campaign_attempts a JOIN campaign_contacts c ON c.id = a.contact_id WHERE a.campaign_id = ${campaignId} ORDER BY c.row_number, a.attempt`);
  const byNumber = new Map<string, typeof attempts[number][]>();
  for (const a of attempts) byNumber.set(a.phone_number, [...(byNumber.get(a.phone_number) ?? []), a]);
  t.is(byNumber.size, CONTACTS, 'every contact attempted');
  for (const n of numbers) {
    const rows = byNumber.get(n) ?? [];
    t.true(rows.length >= 1 && rows.length <= 2, `${n}: ${rows.length} attempts`);
    t.deepEqual(rows.map((r) => r.attempt), rows.map((_, i) => i + 1), `${n}: attempts in order`);
    t.true(rows.every((r) => r.ended_at !== null && r.call_id !== null), `${n}: every attempt ended`);
    if (rows.length === 2) t.true(['busy', 'no_answer'].includes(rows[0]!.connection_status ?? ''), `${n}: retried after ${rows[0]!.connection_status}`);
    t.is(carrier.perNumber.get(n) ?? 0, rows.length, `${n}: dialled once per attempt`);
  }
  t.is(carrier.dials.length, attempts.length, 'no duplicate dial');
  // no row stuck, every post-call ran, at most one call.ended / call.completed, one debit per call that cost something
  await until(async () => (await count(db, sql.fragment`SELECT 1 FROM calls WHERE campaign_id = ${campaignId} AND post_call_completed_at IS NULL`)) === 0 || null, { what: 'post-call of every campaign call (ended calls whose hand-off died with their process: the api sweep)', timeoutMs: 180_000, everyMs: 250 });
  const calls = await db.any(sql.type(callRow)`
    SELECT id::text, status, connection_status, ended_reason, cost::float8 AS cost, post_call_completed_at::text FROM calls WHERE campaign_id = ${campaignId}`);
  t.is(calls.length, attempts.length);
  t.true(calls.every((c) => c.status === 'completed' || c.status === 'error'), 'no row pending or active');
  await until(() => calls.every((c) => byCall(receiver, c.id, 'call.completed') >= 1) || null, { what: 'call.completed of every call', timeoutMs: 30_000, everyMs: 250 }).catch(() => null);
  let endedLost = 0;
  let completedLost = 0;
  let paid = 0;
  for (const c of calls) {
    const ended = byCall(receiver, c.id, 'call.ended');
    const completed = byCall(receiver, c.id, 'call.completed');
    t.true(ended <= 1, `call.ended of ${c.id} sent ${ended} times`);
    t.true(completed <= 1, `call.completed of ${c.id} sent ${completed} times`);
    if (ended === 0) endedLost++;
    if (completed === 0) completedLost++;
    const d = await debits(db, c.id);
    t.is(d, (c.cost ?? 0) > 0 ? 1 : 0, `debits of ${c.id} (cost ${c.cost})`);
    paid += d;
  }
  const outcomes: Record<string, number> = {};
  for (const c of calls) {
    const k = `${c.status}/${c.ended_reason ?? c.connection_status}`;
    outcomes[k] = (outcomes[k] ?? 0) + 1;
  }
  return {
    dials: carrier.dials.length, calls: calls.length, connectedStreams: carrier.connected, streamRefused: carrier.streamRefused,
    answerFailed: carrier.answerFailed, callbacksLost: carrier.callbacksLost, debited: paid, callEndedLost: endedLost, callCompletedLost: completedLost,
    outcomes: JSON.stringify(outcomes),
  };
}
