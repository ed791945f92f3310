// recordTransfer end to end on every carrier of the table-driven suite that records a transferred leg (Plivo, Telnyx,
// Vonage; Twilio: transfer-recording.test.ts): the agent's transferCall moves the call through the carrier, the fake
// carrier records the leg and posts its recording callback signed as the carrier signs it (a forged one → 403), the
// transfer-recording workflow downloads the carrier's file with the carrier's auth and re-hosts it, and the agent's
// webhook gets exactly one call.transfer_recording.completed with our URL — a redelivered callback changes nothing.
// A separate file from carriers.test.ts because it needs Temporal and a worker (that suite runs without them).
import test, { type ExecutionContext } from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { fakeEngines, type FakeScenario } from '../fakes/engines.ts';
import { fakeMp3 } from '../fakes/http-fake.ts';
import { endedRow } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { carrierDrivers, type CarrierDriver } from './carrier-drivers.ts';
import { agentQuiet, phoneAgent } from './media-helpers.ts';
import { until } from '../helpers/wait.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { startReceiver, type Receiver } from '../helpers/http.ts';

const QUEUE = 'carrier-transfer-recording-test';
const drivers: CarrierDriver[] = carrierDrivers().filter((d) => d.recordedTransfer);
let hooks: Receiver;
const scenarios = new Map<string, FakeScenario>();
let n = 0;
let s: TestServer;
let worker: RunningWorker | null = null;

const factory: EngineFactory = async ({ config }) => fakeEngines(scenarios.get(config.name) ?? { stt: { utterances: [] }, llm: [] });

test.before(async () => {
  for (const d of drivers) await d.start();
  hooks = await startReceiver();
  s = await startTestServer({
    env: Object.assign({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TEMPORAL_TASK_QUEUE: QUEUE }, ...drivers.map((d) => d.env())),
    media: { engines: factory },
  });
  for (const d of drivers) d.setBase(s.baseUrl);
  worker = await startTestWorker(s, QUEUE);
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
  for (const d of drivers) await d.close();
  await hooks?.close();
});

const FROM = '+14155550100';
const TO = '+14155550199';

/** Dial the agent, answer, speak one turn: the agent's transfer reaches the carrier; what the carrier was asked. */
async function callUntilTransfer(t: ExecutionContext, d: CarrierDriver, key: string, acc: unknown, agent: Record<string, unknown>) {
  const seen = d.dialCount();
  const r = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, toNumber: TO, agent } });
  t.is(r.status, 200, JSON.stringify(r.body));
  const callId = r.body.callId as string;
  const call = await until(() => d.dialAt(seen), { what: 'the dial to reach the fake carrier', timeoutMs: 10_000 });
  const phone = await d.answerAndConnect(acc, call);
  await until(() => phone.heardMs > 300, { what: 'greeting', timeoutMs: 20_000 });
  await agentQuiet(phone);
  await phone.tone(600);
  await phone.silence(600);
  const asked = await until(() => d.transferred!(call), { what: 'transfer at the carrier', timeoutMs: 20_000 });
  return { callId, call, phone, asked };
}

for (const d of drivers) {
  test.serial(`${d.id}: recordTransfer (default) → the carrier records the transferred leg → exactly one call.transfer_recording.completed with our copy`, async (t) => {
    const { apiKey: key } = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
    const acc = d.account();
    d.addNumber(acc, FROM);
    const name = `transfer-recording-${d.id}-${++n}`;
    scenarios.set(name, { stt: { utterances: ['put me through to sales'] }, llm: [{ toolCalls: [{ name: 'transfer_to_sales' }] }, { text: 'Transferring.' }] });
    const agent = phoneAgent({
      name, webhook: { url: `${hooks.url}/hook` },
      // recordTransfer left out: the spec's default (true) applies
      tools: [{ type: 'transferCall', name: 'transfer_to_sales', description: 'Transfer to sales', config: { destination: '+15550009999', timeout: 20 } }],
    });
    const { callId, call, phone, asked } = await callUntilTransfer(t, d, key, acc, agent);
    t.true(asked.includes(`/recording/${callId}`), `the transfer asks for the leg's recording: ${asked}`);
    phone.hangup(); // the call leaves the stream for the transfer
    t.is((await endedRow(s.db, callId)).ended_reason, 'transferred');

    t.is((await d.recordedTransfer!(call, 'forged')).status, 403, 'a forged recording callback is refused');
    const first = await d.recordedTransfer!(call);
    t.true(first.status >= 200 && first.status < 300, `recording callback answered ${first.status}`);
    const again = await d.recordedTransfer!(call); // a redelivery (or a second recording event): no second workflow
    t.true(again.status >= 200 && again.status < 300, `redelivered callback answered ${again.status}`);

    const mine = () => hooks.bodies().filter((e) => e.callId === callId && e.event.startsWith('call.transfer_recording.'));
    const events = await until(() => (mine().length ? mine() : null), { what: 'call.transfer_recording.*', timeoutMs: 90_000 });
    const done = events[0] as { event: string; recordingUrl?: string; telephonyProvider?: string; transfer?: { destination?: string } };
    t.is(done.event, 'call.transfer_recording.completed', JSON.stringify(done));
    t.true(String(done.recordingUrl).startsWith(s.config.cdnUrl), String(done.recordingUrl));
    t.regex(String(done.recordingUrl), new RegExp(`${callId}-transfer\\.mp3$`));
    t.like(done, { telephonyProvider: d.id, transfer: { destination: '+15550009999' } });
    const stored = await s.db.oneFirst(sql.type(z.object({ r: z.unknown() }))`SELECT transfer_recording AS r FROM calls WHERE id = ${callId}`);
    t.is((stored as { stored?: { bytes?: number } }).stored?.bytes, fakeMp3().length, 'the carrier file, downloaded whole');
    // the workflow has finished its one event: nothing else is coming for this call
    await s.temporal!.client.workflow.getHandle(`transferRecording-${callId}`).result();
    t.is(mine().length, 1, 'exactly one transfer-recording event');
  });
}

for (const d of drivers) {
  test.serial(`${d.id}: with recordInProviderConsole the carrier records the whole call, so the transferred leg is not recorded a second time (logs say why)`, async (t) => {
    const { apiKey: key } = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
    const acc = d.account();
    d.addNumber(acc, FROM);
    const name = `transfer-whole-call-${d.id}-${++n}`;
    scenarios.set(name, { stt: { utterances: ['put me through to sales'] }, llm: [{ toolCalls: [{ name: 'transfer_to_sales' }] }, { text: 'Transferring.' }] });
    const agent = phoneAgent({
      name, webhook: { url: hooks.url }, recordInProviderConsole: true,
      tools: [{ type: 'transferCall', name: 'transfer_to_sales', description: 'Transfer to sales', config: { destination: '+15550009999', timeout: 20, recordTransfer: true } }],
    });
    const { callId, phone, asked } = await callUntilTransfer(t, d, key, acc, agent);
    t.false(asked.includes('/recording/'), `no recording of the transferred leg asked for: ${asked}`);
    t.false(/startOnDialAnswer|record-from-answer|"action":"record"/.test(asked), `no recording of the leg in the transfer request: ${asked}`);
    phone.hangup();
    t.is((await endedRow(s.db, callId)).ended_reason, 'transferred');
    const logs = await s.db.oneFirst(sql.type(z.object({ l: z.any() }))`SELECT logs AS l FROM calls WHERE id = ${callId}`);
    t.like(logs.transfer, { destination: '+15550009999', record: false });
    t.regex(String(logs.transfer.recordSkipped), /records the whole call \(recordInProviderConsole\)/);
  });
}
