// Durability: a worker process killed with SIGKILL mid-campaign and a new one started loses no contact and dials no
// number twice; a campaign that continues-as-new (history limit) carries its calls in flight across runs.
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { workflowsPath } from '../../activities/worker.ts';
import {
  CAMPAIGN_WORKFLOW_TYPE,
  campaignSearchAttributes,
  campaignWorkflowId,
  progressQuery,
  startUpdate,
} from '../../workflows/campaign/messages.ts';
import { VENDOR_TEST_KEYS } from '../telephony/rest-helpers.ts';
import { attempts, carrierScript, csvOf, phoneList, setupOrg, startEnv, uploadCsv, waitForState, type Env } from './helpers.ts';
import { startTestWorker } from '../helpers/worker.ts';
import { until } from '../helpers/wait.ts';

const QUEUE = 'campaigns-durability-test';
let env: Env;

test.before(async () => {
  env = await startEnv(QUEUE, { worker: false });
});
test.after.always(async () => {
  await env?.close();
});

async function create(apiKey: string, agentUuid: string, numbers: string[], body: Record<string, unknown>) {
  const sourceId = await uploadCsv(env.s, apiKey, csvOf(numbers));
  const c = await env.s.request('POST', '/campaign/create', { key: apiKey, body: { name: 'Durable', agent_uuid: agentUuid, source_type: 'csv', source_id: sourceId, ...body } });
  if (c.status !== 200) throw new Error(`create ${c.status}: ${JSON.stringify(c.body)}`);
  return c.body.id as number;
}

test.serial('worker SIGKILLed mid-campaign, another started: 0 lost contacts, 0 duplicate dials', async (t) => {
  t.timeout(300_000);
  const org = await setupOrg(env, { numbers: 5 });
  const carrier = carrierScript(env.fake, org.accountSid, () => ({ status: 'completed', afterMs: 80 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(60, '+1654');
  const id = await create(org.apiKey, org.agentUuid, numbers, { max_concurrency: 5, retry_config: { enabled: false } });

  const c = env.s.config;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'activities/worker.ts'], {
    env: {
      ...process.env,
      LOG_LEVEL: 'silent',
      DATABASE_URL: c.DATABASE_URL,
      TEMPORAL_ADDRESS: c.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: QUEUE,
      DATA_DIR: c.DATA_DIR,
      SIGNING_SECRET: c.SIGNING_SECRET,
      ...(c.TELEPHONY_ENCRYPTION_KEY ? { TELEPHONY_ENCRYPTION_KEY: c.TELEPHONY_ENCRYPTION_KEY } : {}),
      PUBLIC_URL: c.publicUrl,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      TWILIO_API_BASE_URL: env.fake.origin,
      // the agent's vendor engines need their keys: a dial checks them up front like POST /call
      ...VENDOR_TEST_KEYS,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });

  t.is((await env.s.request('POST', `/campaign/${id}/start`, { key: org.apiKey })).status, 200);
  await until(() => carrier.state.dials.length >= 20, { what: '20 dials by the first worker', timeoutMs: 120_000, everyMs: 5 });
  child.kill('SIGKILL');
  await exited;
  const atKill = carrier.state.dials.length;
  t.true(atKill < 60, `killed mid-campaign (${atKill} dials)`);

  const worker = await startTestWorker(env.s, QUEUE);
  t.teardown(() => worker.close());
  const done = await waitForState(env.s, org.apiKey, id, 'completed', 240_000);
  t.is(done.executed_count, 60);
  t.is(carrier.state.dials.length, 60, 'no number dialed twice');
  t.deepEqual(carrier.state.dials.map((d) => d.to).sort(), [...numbers].sort(), 'every contact dialed');
  const rows = await attempts(env.s, id);
  t.is(rows.length, 60);
  t.true(rows.every((r) => r.attempt === 1 && r.ended_at !== null && r.call_id !== null && r.connection_status === 'cancelled'));
  t.is(new Set(rows.map((r) => r.call_id)).size, 60);
  t.true(carrier.state.maxLive <= 5);
  await worker.close();
});

test.serial('continue-as-new past a history limit: calls in flight carried across runs, every contact dialed once', async (t) => {
  t.timeout(300_000);
  const worker = await startTestWorker(env.s, QUEUE);
  t.teardown(() => worker.close());
  const org = await setupOrg(env, { numbers: 4 });
  const carrier = carrierScript(env.fake, org.accountSid, (call) => ({ status: Number(call.to.slice(-1)) % 4 === 0 ? 'busy' : 'completed', afterMs: 60 }));
  t.teardown(carrier.stop);
  const numbers = phoneList(40, '+1655');
  const id = await create(org.apiKey, org.agentUuid, numbers, { max_concurrency: 4, retry_config: { max_retries: 1, retry_delay_seconds: 10 } });
  // Started like the api does, with a low history limit so the campaign continues as new several times.
  await env.s.temporal!.client.workflow.executeUpdateWithStart(startUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(CAMPAIGN_WORKFLOW_TYPE, {
      workflowId: campaignWorkflowId(id),
      taskQueue: QUEUE,
      args: [{ campaignId: id, organizationId: org.orgId, continueAfterEvents: 150 }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: campaignSearchAttributes({ campaignId: id, organizationId: org.orgId, state: 'created' }),
    }),
  });
  const done = await waitForState(env.s, org.apiKey, id, 'completed', 240_000);
  const busy = numbers.filter((n) => Number(n.slice(-1)) % 4 === 0).length;
  t.is(done.executed_count, 40);
  t.is(carrier.state.dials.length, 40 + busy, 'one dial per contact plus one retry per busy contact');
  const handle = env.s.temporal!.client.workflow.getHandle(campaignWorkflowId(id));
  const progress = await handle.query(progressQuery);
  t.true(progress.runs > 2, `runs: ${progress.runs}`);
  const rows = await attempts(env.s, id);
  t.is(rows.length, 40 + busy);
  t.true(rows.every((r) => r.ended_at !== null));
  await t.notThrowsAsync(Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory()));
});
