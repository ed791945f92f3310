// A worker SIGKILLed in the middle of an agent-test run: the real api, media and worker processes, the agent and the
// simulated caller on the vendor fakes (this test process serves them). The worker dies during the conversation;
// the call it was on ends (its socket is gone); another worker takes the run over once the conversation's heartbeat
// times out, starts the conversation again on a new call, judges it and ends the run: one terminal status, one
// test.completed, the run's API keys gone, attempts 2.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { freePort } from '../../scripts/infra.ts';
import { until } from '../helpers/wait.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-sse.ts';
import { startFakeAnthropic, type FakeVendor } from '../fakes/llm-vendors-sse.ts';
import { startDeepgramFake, type DeepgramFake } from '../fakes/stt/deepgram.ts';
import { startSonioxFake, type SonioxFake } from '../fakes/stt/soniox.ts';
import { FakeElevenLabs } from '../fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';
import { apiClient, kill, killChildren, setup, startProcess } from './harness.ts';

test.after.always(killChildren);

const CRITERIA = ['The agent answers the caller'];

test.serial('worker SIGKILLed mid-conversation, another started: the run is played again on a new call and ends once, one test.completed', async (t) => {
  t.timeout(6 * 60_000);
  const verdicts = JSON.stringify({ verdicts: [{ criterion: CRITERIA[0], passed: true, reason: 'It answered.' }] });
  const fakes: { judge: FakeOpenAi; caller: FakeOpenAi; agent: FakeVendor; dg: DeepgramFake; sx: SonioxFake; el: FakeElevenLabs; ca: FakeCartesia } = {
    judge: await startFakeOpenAi({ apiKey: 'sk-judge', defaultReply: { text: [verdicts] } }),
    caller: await startFakeOpenAi({ apiKey: 'gsk-caller', defaultReply: { text: ['Could you tell me a little more about that?'] } }),
    agent: await startFakeAnthropic(),
    dg: await startDeepgramFake({ apiKey: 'dg-key' }),
    sx: await startSonioxFake({ apiKey: 'sx-key', endpointMs: 400 }),
    el: await new FakeElevenLabs({ apiKey: 'el-key' }).listen(),
    ca: await new FakeCartesia({ apiKey: 'ca-key' }).listen(),
  };
  t.teardown(() => Promise.allSettled(Object.values(fakes).map((f) => f.close())));
  const { db, key, receiver, env } = await setup(t, 'faults-agent-test-worker-kill', {
    OPENAI_BASE_URL: fakes.judge.url, OPENAI_API_KEY: 'sk-judge', GROQ_BASE_URL: fakes.caller.url, GROQ_API_KEY: 'gsk-caller',
    ANTHROPIC_BASE_URL: fakes.agent.url, ANTHROPIC_API_KEY: 'ak',
    DEEPGRAM_BASE_URL: fakes.dg.url, DEEPGRAM_API_KEY: 'dg-key', SONIOX_BASE_URL: fakes.sx.url, SONIOX_API_KEY: 'sx-key',
    ELEVENLABS_BASE_URL: fakes.el.server.baseUrl, ELEVENLABS_API_KEY: 'el-key', CARTESIA_BASE_URL: fakes.ca.server.baseUrl, CARTESIA_API_KEY: 'ca-key',
  });
  const api = await startProcess('api/main.ts', env);
  const mediaPort = await freePort();
  await startProcess('media/main.ts', { ...env, MEDIA_PUBLIC_URL: `http://127.0.0.1:${mediaPort}` }, true, { port: mediaPort });
  const workerEnv = { ...env, AGENT_TEST_API_URL: api.origin };
  const first = await startProcess('activities/worker.ts', workerEnv, false);
  const call = apiClient<any>(key, () => api.origin);

  const agent = await call('POST', '/agents', {
    name: 'Kill desk', greeting: { firstMessages: ['Hello, this is the front desk.'] },
    llm: { provider: 'anthropic', model: 'claude-haiku-4-5', prewarm: false }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
    webhook: `${receiver.url}/events`,
  });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const created = await call('POST', `/agents/${agent.body.uuid}/tests`, {
    name: 'Survives a lost worker', scenario: 'You ask about the opening hours.', criteria: CRITERIA, maxTurns: 3,
    caller: { llm: { provider: 'groq', model: 'llama-3.3-70b-versatile' }, stt: { provider: 'soniox' }, tts: { provider: 'cartesia' } },
    judge: { provider: 'openai', model: 'gpt-4.1-mini' },
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  await until(async () => (await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM media_nodes`)) > 0 || null, { what: 'the media node to report', timeoutMs: 30_000, everyMs: 250 });
  const started = await call('POST', `/agents/${agent.body.uuid}/tests/${created.body.id}/runs`, {});
  t.is(started.status, 202, JSON.stringify(started.body));
  const path = `/agents/${agent.body.uuid}/tests/${created.body.id}/runs/${started.body.id}`;

  // in the middle of the conversation: the caller has heard the greeting and answered it
  const live = await until(async () => {
    const r = await call('GET', path);
    return r.body.callId && r.body.transcript.some((l: any) => l.role === 'caller') ? r.body : null;
  }, { what: 'the conversation to be under way', timeoutMs: 90_000, everyMs: 100 });
  t.is(live.status, 'running');
  await kill(first.child);
  const killedAt = Date.now();
  // the call of the lost worker ends: its simulated caller's socket went with it
  await until(async () => (await db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM calls WHERE id = ${live.callId}`)) === 'completed' || null, { what: 'the first call to end', timeoutMs: 60_000, everyMs: 250 });
  await startProcess('activities/worker.ts', workerEnv, false);

  const run = await until(async () => {
    const r = await call('GET', path);
    return ['passed', 'failed', 'error'].includes(r.body.status) ? r.body : null;
  }, { what: 'the run to end', timeoutMs: 4 * 60_000, everyMs: 250 });
  t.log(`run ${run.status} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill (heartbeat timeout 20 s); ended by ${run.endedBy}`);
  t.is(run.status, 'passed', JSON.stringify(run));
  t.is(run.attempts, 2);
  t.not(run.callId, live.callId, 'the conversation was played again on a new call');
  t.is(run.endedBy, 'max_turns');
  t.is(run.transcript.filter((l: any) => l.role === 'caller').length, 3);

  // exactly one terminal write and one test.completed, however the activities were retried
  await until(() => receiver.events.some((e) => e.json?.event === 'test.completed') || null, { what: 'test.completed', timeoutMs: 30_000, everyMs: 250 });
  await new Promise((r) => setTimeout(r, 2000)); // room for a duplicate to arrive, were one sent
  const completed = receiver.events.filter((e) => e.json?.event === 'test.completed');
  t.is(completed.length, 1);
  t.like(completed[0]!.json, { runId: run.id, status: 'passed', callId: run.callId });
  const row = await db.one(sql.type(z.object({ status: z.string(), ended_at: z.string().nullable(), claimed: z.boolean() }))`
    SELECT status, ended_at, completed_event_claimed_at IS NOT NULL AS claimed FROM agent_test_runs WHERE id = ${run.id}`);
  t.like(row, { status: 'passed', claimed: true });
  t.is(row.ended_at, run.endedAt);
  const calls = await db.any(sql.type(z.object({ id: z.string(), status: z.string(), tags: z.array(z.string()) }))`
    SELECT id::text AS id, status, tags FROM calls WHERE logs->'agent_test'->>'runId' = ${run.id} ORDER BY created_at`);
  t.deepEqual(calls.map((c) => c.id), [live.callId, run.callId]);
  t.true(calls.every((c) => c.status === 'completed' && c.tags.includes('agent_test')));
  const keys = await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM api_keys WHERE name = ${`agent-test:${run.id}`}`);
  t.is(keys, 0, "the run's API keys are gone");
});
