// An agent-test run on the local engines end to end, nothing faked: the agent on Silero VAD, Whisper tiny.en, the
// Piper voice and Qwen2.5 0.5B in media; the simulated caller on the same local engines in the worker (its defaults),
// the judge on Qwen with a JSON-schema grammar. What a 0.5B model says and decides is not asserted; that the path
// works is: the caller heard the agent's greeting through its own STT, the agent heard the caller (its call
// transcript has the caller's words), the judge gave one verdict per criterion, and the run ended passed or failed.
import test from 'ava';
import type { Worker } from '@temporalio/worker';
import { createWorker } from '../../activities/worker.ts';
import { createLogger } from '../../core/logger.ts';
import { modelInstalled } from '../../media/services/model-files.ts';
import { until } from '../helpers/wait.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const QUEUE = 'agent-tests-local';
const installed = (await modelInstalled('whisper-tiny.en')) && (await modelInstalled('piper-en_US-joe-medium')) && (await modelInstalled('qwen2.5-coder-0.5b-instruct'));
const withModels = installed ? test.serial : test.skip;

let s: TestServer;
let worker: { worker: Worker; run: Promise<void>; close(): Promise<void> };
let key: string;

test.before(async () => {
  if (!installed) return;
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE } });
  key = (await s.createOrg({ balanceUsd: 20, ratePerMinute: 100_000 })).apiKey;
  const { worker: w, connection } = await createWorker({ config: s.config, db: s.db, logger: createLogger({ level: 'silent' }), taskQueue: QUEUE, storage: s.storage });
  const run = w.run();
  worker = { worker: w, run, close: async () => { w.shutdown(); await run.catch(() => undefined); await connection.close(); } };
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
});

withModels('a two-turn run on the local engines: a real call both ways, one verdict per criterion, passed or failed', async (t) => {
  t.timeout(15 * 60_000);
  const agent = await s.request('POST', '/agents', {
    key,
    body: {
      name: 'Sunny Bakery',
      systemPrompt: 'You answer the phone for Sunny Bakery. The bakery is open from seven in the morning to three in the afternoon, every day. Answer in one short sentence.',
      greeting: { firstMessages: ['Hello, this is Sunny Bakery. How can I help you?'] },
      llm: { provider: 'local', model: 'qwen2.5-coder-0.5b-instruct', maxTokens: 60 },
      stt: { provider: 'local' }, tts: { provider: 'local' },
      // the caller thinks on the same two shared cores: the agent waits for it rather than giving up on silence
      userIdleTimeoutS: 25, userIdleMaxRetries: 5,
    },
  });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const uuid = agent.body.uuid;
  const created = await s.request('POST', `/agents/${uuid}/tests`, {
    key,
    body: { name: 'Opening hours', scenario: 'You want to know what time the bakery opens on Saturday.', criteria: ['The agent greets the caller', 'The agent tells the caller when the bakery opens'], maxTurns: 2 },
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  t.like(created.body.caller.llm, { provider: 'local' });

  const started = await s.request('POST', `/agents/${uuid}/tests/${created.body.id}/runs`, { key, body: {} });
  t.is(started.status, 202, JSON.stringify(started.body));
  const t0 = Date.now();
  const run = await until(async () => {
    const r = await s.request('GET', `/agents/${uuid}/tests/${created.body.id}/runs/${started.body.id}`, { key });
    return ['passed', 'failed', 'error'].includes(r.body.status) ? r.body : null;
  }, { what: 'the local run to end', timeoutMs: 14 * 60_000, everyMs: 1000 });
  t.log(`run ${run.status} after ${((Date.now() - t0) / 1000).toFixed(1)} s, ended by ${run.endedBy}`);
  for (const l of run.transcript) t.log(`${l.role}: ${l.text}`);
  for (const v of run.verdicts) t.log(`${v.passed ? 'PASS' : 'FAIL'} ${v.criterion}: ${v.reason}`);
  const row = (await s.request('GET', `/calls/${run.callId}`, { key })).body;
  t.log(`call ${row.status} ${row.endedReason}; the agent's transcript: ${JSON.stringify((row.transcript ?? []).map((e: any) => [e.role, e.content ?? e.name]))}`);

  t.true(run.status === 'passed' || run.status === 'failed', `${run.status}: ${run.error}`);
  t.deepEqual(run.verdicts.map((v: any) => v.criterion), created.body.criteria);
  for (const v of run.verdicts) t.is(typeof v.passed, 'boolean');
  const agentLines = run.transcript.filter((l: any) => l.role === 'agent');
  const callerLines = run.transcript.filter((l: any) => l.role === 'caller');
  t.true(callerLines.length >= 1 && callerLines.length <= 2, JSON.stringify(run.transcript));
  // Whisper tiny on a loaded machine mishears; a word of the greeting is enough to show the caller heard it
  t.regex(agentLines.map((l: any) => l.text).join(' '), /\b(hello|sunny|bakery|help)\b/i, 'the caller heard the greeting through its STT');

  const call = await until(async () => {
    const r = await s.request('GET', `/calls/${run.callId}`, { key });
    return r.body.status === 'completed' ? r.body : null;
  }, { what: 'the call row', timeoutMs: 60_000 });
  t.true(call.tags.includes('agent_test'));
  const heard = (call.transcript as Array<{ role: string; content: string }>).filter((e) => e.role === 'user').map((e) => e.content).join(' ');
  t.true(heard.trim().length > 0, 'the agent heard the caller through its own STT');
});
