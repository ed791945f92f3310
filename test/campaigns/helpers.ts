// Shared pieces of the campaign tests: a server + in-process worker on the fake Twilio, a telephony configuration with
// N caller numbers, a saved agent, a CSV uploaded through POST /files, polling helpers and a scripted fake carrier
// that answers every dial per number (busy / no-answer / failed / completed) and counts calls in flight.
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { FakeTwilio, type FakeCall } from '../fakes/twilio.ts';
import { VENDOR_TEST_KEYS } from '../telephony/rest-helpers.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { until } from '../helpers/wait.ts';

export const logger = createLogger({ level: 'silent' });

export interface Env {
  s: TestServer;
  fake: FakeTwilio;
  queue: string;
  worker: RunningWorker | null;
  close(): Promise<void>;
}

export async function startEnv(queue: string, opts: { worker?: boolean; env?: Record<string, string> } = {}): Promise<Env> {
  const fake = await FakeTwilio.start();
  const s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: queue, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TWILIO_API_BASE_URL: fake.origin, ...VENDOR_TEST_KEYS, ...opts.env },
  });
  const env: Env = {
    s,
    fake,
    queue,
    worker: null,
    async close() {
      await env.worker?.close();
      await s.close();
      await fake.close();
    },
  };
  await isolateCampaignIds(s);
  if (opts.worker !== false) env.worker = await startTestWorker(s, queue);
  return env;
}

/**
 * Test files run in parallel against one Temporal dev server but each on its own database, so campaign ids (and with
 * them the workflow ids `campaign-<id>`) would repeat across files. Each file's ids start at a random offset.
 */
export async function isolateCampaignIds(s: TestServer): Promise<void> {
  const start = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  await s.db.query(sql.unsafe`SELECT setval(pg_get_serial_sequence('campaigns', 'id'), ${start})`);
}


export interface Org {
  orgId: string;
  apiKey: string;
  agentUuid: string;
  configId: number;
  numbers: string[];
  accountSid: string;
}

/** An organization with a saved agent and a Twilio configuration holding `numbers` caller numbers (on the fake account). */
export async function setupOrg(env: Env, o: { numbers?: number; concurrency?: number; balanceUsd?: number; configName?: string; isDefault?: boolean } = {}): Promise<Org> {
  const { s, fake } = env;
  const { orgId, apiKey } = await s.createOrg({ concurrency: o.concurrency ?? 50, balanceUsd: o.balanceUsd ?? 100 });
  const agent = await s.request('POST', '/agents', {
    key: apiKey,
    body: { name: 'Campaign agent', systemPrompt: 'Hello {{name}}', llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } },
  });
  if (agent.status !== 200 && agent.status !== 201) throw new Error(`agent create ${agent.status}: ${JSON.stringify(agent.body)}`);
  const acc = fake.addAccount();
  const cfg = await insertConfig(s.db, s.config, {
    orgId, name: o.configName ?? 'Main line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token },
    accountRef: acc.sid, amdEnabled: false, isDefault: o.isDefault ?? true,
  });
  const numbers: string[] = [];
  for (let i = 0; i < (o.numbers ?? 10); i++) {
    const n = `+1415555${String(1000 + Math.floor(Math.random() * 8000) + i).padStart(4, '0')}`;
    if (numbers.includes(n)) { i--; continue; }
    fake.addNumber(acc.sid, n);
    await s.db.query(sql.unsafe`
      INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type)
      VALUES (${orgId}, ${cfg.id}, ${n}, ${n}, 'pstn')`);
    numbers.push(n);
  }
  return { orgId, apiKey, agentUuid: (agent.body as { uuid: string }).uuid, configId: cfg.id, numbers, accountSid: acc.sid };
}

/** Uploads a CSV through POST /files; returns the file id (the campaign's source_id). */
export async function uploadCsv(s: TestServer, apiKey: string, csv: string, filename = 'contacts.csv'): Promise<string> {
  const { body, contentType } = multipart([{ name: 'file', value: csv, filename, contentType: 'text/csv' }]);
  const res = await fetch(`${s.baseUrl}/files`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': apiKey }, body });
  const json = (await res.json()) as { id: string };
  if (res.status !== 200 && res.status !== 201) throw new Error(`upload ${res.status}: ${JSON.stringify(json)}`);
  return json.id;
}

/** `n` distinct US numbers in E.164, `+1 650 555 xxxx` style. */
export function phoneList(n: number, prefix = '+1650'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(2000000 + i).padStart(7, '0')}`);
}

export function csvOf(numbers: string[], extra: (i: number) => Record<string, string> = (i) => ({ name: `Contact ${i + 1}` })): string {
  const cols = Object.keys(extra(0));
  const lines = [['phone_number', ...cols].join(',')];
  numbers.forEach((n, i) => lines.push([n, ...cols.map((c) => extra(i)[c])].join(',')));
  return `${lines.join('\n')}\n`;
}

export async function campaign(s: TestServer, apiKey: string, id: number) {
  const r = await s.request('GET', `/campaign/${id}`, { key: apiKey });
  if (r.status !== 200) throw new Error(`GET campaign ${r.status}`);
  return r.body as any;
}

export async function waitForState(s: TestServer, apiKey: string, id: number, state: string, timeoutMs = 120_000) {
  return until(async () => {
    const c = await campaign(s, apiKey, id);
    return c.state === state ? c : null;
  }, { what: `campaign ${id} in state ${state}`, timeoutMs, everyMs: 200 }).catch(async (err: unknown) => {
    // What the campaign was doing, for the failure message.
    const c = await campaign(s, apiKey, id);
    const progress = await s.temporal?.client.workflow.getHandle(`campaign-${id}`).query('progress').catch((e: unknown) => String(e));
    const rows = await attempts(s, id);
    throw new Error(`${(err as Error).message}: state ${c.state}; progress ${JSON.stringify(progress)}; logs ${JSON.stringify(c.logs.map((l: { event: string; message: string }) => `${l.event}: ${l.message}`))}; attempts ${JSON.stringify(rows.map((r) => [r.phone_number, r.attempt, r.connection_status, r.call_id, r.ended_at]))}`);
  });
}

export const attemptRow = z.object({
  contact_id: z.number(),
  row_number: z.number(),
  phone_number: z.string(),
  attempt: z.number(),
  scheduled_at: z.string(),
  retry_delay_seconds: z.number().nullable(),
  dialed_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  call_id: z.string().nullable(),
  connection_status: z.string().nullable(),
  failure: z.boolean().nullable(),
});

export async function attempts(s: TestServer, campaignId: number) {
  return s.db.any(sql.type(attemptRow)`
    SELECT a.contact_id, c.row_number, c.phone_number, a.attempt, a.scheduled_at, a.retry_delay_seconds, a.dialed_at, a.ended_at,
           a.call_id::text, a.connection_status, a.failure
    FROM campaign_attempts a JOIN campaign_contacts c ON c.id = a.contact_id
    WHERE a.campaign_id = ${campaignId} ORDER BY c.row_number, a.attempt`);
}

export type Script = (call: FakeCall) => { status: 'busy' | 'no-answer' | 'failed' | 'canceled' | 'completed'; afterMs?: number; durationS?: number } | null;

/**
 * Drives every dial on the fake carrier: `script` decides how each call ends (after `afterMs`). Counts calls in
 * flight at the carrier (dialled and not yet ended) and records the maximum, per `from` caller ID too.
 */
export function carrierScript(fake: FakeTwilio, accountSid: string, script: Script) {
  const state = {
    dials: [] as FakeCall[],
    /** When each dial reached the carrier (ms). */
    dialTimes: [] as number[],
    live: 0,
    maxLive: 0,
    liveFrom: new Map<string, number>(),
    maxPerFrom: 0,
    ended: 0,
    errors: [] as string[],
  };
  const onDial = (call: FakeCall) => {
    if (call.accountSid !== accountSid) return;
    state.dials.push(call);
    state.dialTimes.push(Date.now());
    state.live++;
    state.maxLive = Math.max(state.maxLive, state.live);
    const f = (state.liveFrom.get(call.from) ?? 0) + 1;
    state.liveFrom.set(call.from, f);
    state.maxPerFrom = Math.max(state.maxPerFrom, f);
    const plan = script(call);
    if (!plan) return;
    setTimeout(() => {
      state.live--;
      state.liveFrom.set(call.from, (state.liveFrom.get(call.from) ?? 1) - 1);
      state.ended++;
      fake.finish(call.sid, plan.status, plan.durationS ?? 0)
        .then((r) => { if (r && r.status >= 300) state.errors.push(`status callback ${r.status}: ${r.body}`); })
        .catch((err: unknown) => state.errors.push(String(err)));
    }, plan.afterMs ?? 30);
  };
  fake.on('dial', onDial);
  return { state, stop: () => fake.off('dial', onDial) };
}
