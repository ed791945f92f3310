// Shared pieces of the fault tests: the service's real processes in the production shape (api/main.ts,
// media/main.ts, activities/worker.ts) started as child processes on one test database and the suite's Temporal,
// killed with SIGKILL; a webhook receiver; live WebSocket calls on an agent of the local engines; a slow embeddings
// fake; counters over the rows a fault must not break. FAULT_LOG_LEVEL=debug (or any level) shows the processes'
// logs. The fault tests wait minutes for recoveries, so they poll every 250 ms rather than at until()'s 25 ms.
import type { ExecutionContext } from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type WebSocket from 'ws';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../../core/orgs.ts';
import { createTestDb } from '../helpers/db.ts';
import { audioCaller, audioUrlOf, killServiceProcesses, startServiceProcess, type ServiceProcess, type StartOptions } from '../helpers/processes.ts';
import { loadConfig } from '../../core/config.ts';
import { createLogger } from '../../core/logger.ts';
import { connectTemporal } from '../../core/temporal.ts';
import { handOffPostCall } from '../../media/session/lifecycle.ts';
import { insertAgent, insertEndedCall } from '../post-call/helpers.ts';
import { startReceiver, type Receiver } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';
import { until } from '../helpers/wait.ts';

export { alive, kill, type LogLine } from '../helpers/processes.ts';
export type Started = ServiceProcess;

/** SIGKILL every child still running (register with test.after.always in each file). */
export const killChildren = killServiceProcesses;

/**
 * Start one of the service's entry points as its own process (test/helpers/processes.ts); with `listens`, wait until
 * it listens. FAULT_LOG_LEVEL shows its logs.
 */
export function startProcess(entry: string, env: Record<string, string>, listens = true, opts: Omit<StartOptions, 'listens' | 'showLogs'> = {}): Promise<Started> {
  return startServiceProcess(entry, env, { ...opts, listens, showLogs: process.env.FAULT_LOG_LEVEL });
}

type Teardown = { teardown(fn: () => unknown): void };
type Limits = { concurrency?: number; balanceUsd?: number };

/**
 * A fresh database with an organization, its API key, a webhook receiver, and the environment every process shares.
 * The pool and the receiver close when the test ends, failed or not (an open pool keeps the test process alive).
 */
export async function setup(t: Teardown, queue: string, extraEnv: Record<string, string> = {}, limits: Limits = {}) {
  const fresh = await createTestDb();
  t.teardown(() => fresh.db.end());
  return setupOn(t, fresh, queue, extraEnv, limits);
}

/**
 * setup() on a database of the caller's (which closes its pool itself): an organization, its API key, a webhook
 * receiver (closed when the test ends) and the environment every process shares (`extraEnv` wins).
 */
export async function setupOn(t: Teardown, { db, url }: { db: Db; url: string }, queue: string, extraEnv: Record<string, string> = {}, limits: Limits = {}) {
  const org = await createOrganization(db, { name: 'faults', balanceUsd: limits.balanceUsd ?? 500 });
  await setOrganizationLimits(db, org.id, { concurrency: limits.concurrency ?? 50 });
  const key = (await createApiKey(db, org.id, 'faults')).key;
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const env = {
    DATABASE_URL: url, MEDIA_NODE_DEAD_AFTER_S: '4', SIGNING_SECRET: 'faults-test-signing-secret-0123', TEMPORAL_TASK_QUEUE: queue,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1', DATA_DIR: tempDir('faults-'), TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '',
    ...extraEnv,
  };
  return { db, org, key, receiver, env };
}

/** JSON requests to an api process with the organization's key; `B`, the type the answers' bodies are read as. */
export function apiClient<B extends Record<string, unknown> = Record<string, unknown>>(key: string, origin: () => string) {
  return async (method: string, p: string, body?: unknown): Promise<{ status: number; body: B }> => {
    const res = await fetch(`${origin()}/api/v1${p}`, {
      method,
      headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try { json = JSON.parse(text) as Record<string, unknown>; } catch { json = { raw: text }; }
    return { status: res.status, body: json as B };
  };
}

type Post = (p: string, body: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

/** POST JSON to an api process with the organization's key. */
export function jsonPost(key: string, origin: () => string): Post {
  const api = apiClient(key, origin);
  return (p, body) => api('POST', p, body);
}

/**
 * An agent on the local engines that greets callers and sends its webhooks to `receiver`, created through the api;
 * resolves with its uuid once a media node has reported too (a call can be placed).
 */
export async function localAgent(t: ExecutionContext, db: Db, post: Post, receiver: Receiver): Promise<string> {
  const agent = await post('/agents', {
    name: 'Fault agent', systemPrompt: 'You are a test agent.',
    llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' },
    noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello from the fault test.'] },
    webhook: `${receiver.url}/events`,
  });
  t.true(agent.status === 200 || agent.status === 201, JSON.stringify(agent.body));
  await until(async () => (await count(db, sql.fragment`SELECT 1 FROM media_nodes`)) > 0 || null, { what: 'the media node to report', timeoutMs: 30_000, everyMs: 250 });
  return String(agent.body.uuid);
}

/** POST /call (WebSocket transport), then a caller on the media node's audio socket sending silence every 20 ms. */
export async function websocketCall(t: ExecutionContext, post: Post, agentId: string, mediaOrigin: string, key: string): Promise<{ callId: string; ws: WebSocket }> {
  const c = await post('/call', { agentId, transport: 'websocket' });
  t.is(c.status, 200, JSON.stringify(c.body));
  const callId = String(c.body.callId);
  return { callId, ws: audioCaller(audioUrlOf(mediaOrigin, callId), key).ws };
}

/**
 * An OpenAI-compatible /v1/embeddings fake that answers after `delayMs` (so a document takes several batches' time);
 * setDelay() changes it while it runs.
 */
export async function slowEmbeddings(delayMs: number) {
  const state = { delayMs };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => setTimeout(() => {
      const body = JSON.parse(raw) as { model: string; input: string[] };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        object: 'list', model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 },
        data: body.input.map((s, index) => ({ object: 'embedding', index, embedding: Array.from({ length: 8 }, (_, i) => ((s.length + i) % 7) + 1) })),
      }));
    }, state.delayMs));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    setDelay: (ms: number) => { state.delayMs = ms; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

export function byCall(receiver: Receiver, callId: string, event: string): number {
  return receiver.events.filter((e) => e.json?.callId === callId && e.json.event === event).length;
}

export async function count(db: Db, query: ReturnType<typeof sql.fragment>): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM (${query}) AS q`);
}

export async function debits(db: Db, callId: string): Promise<number> {
  return count(db, sql.fragment`SELECT 1 FROM wallet_transactions WHERE call_id = ${callId} AND kind = 'call_debit'`);
}

/**
 * `n` ended calls of an agent whose webhook is the receiver, handed off to post-call as a media node does at the end
 * of each call. `handOff(id)` hands off one more (`insertEnded()` makes one) with the same Temporal connection.
 */
export async function endedCallsHandedOff(t: Teardown, o: { db: Db; orgId: string; receiver: Receiver; env: Record<string, string> }, n = 20) {
  const agent = await insertAgent(o.db, o.orgId, { webhookUrl: `${o.receiver.url}/events`, secret: 's' });
  const config = { name: 'Ava', webhook: { url: `${o.receiver.url}/events`, headers: {} }, enableSummarization: false };
  const insertEnded = () => insertEndedCall(o.db, { orgId: o.orgId, agent, config });
  const calls = await Promise.all(Array.from({ length: n }, insertEnded));
  const temporal = await connectTemporal(o.env.TEMPORAL_ADDRESS!, 'default');
  t.teardown(() => temporal.close());
  const deps = { temporal: temporal.client, config: loadConfig({ ...o.env }), logger: createLogger({ level: (process.env.FAULT_LOG_LEVEL ?? 'silent') as 'silent' }) };
  const handOff = (id: string) => handOffPostCall(deps, { id, organization_id: o.orgId, agent_uuid: agent.uuid });
  for (const id of calls) await handOff(id);
  return { calls, insertEnded, handOff };
}

/** Each call got at most one call.completed and exactly one debit (asserted); how many got no call.completed. */
export async function oncePerCall(t: ExecutionContext, db: Db, receiver: Receiver, calls: string[]): Promise<number> {
  let lost = 0;
  for (const id of calls) {
    const sent = byCall(receiver, id, 'call.completed');
    t.true(sent <= 1, `call.completed of ${id} sent ${sent} times`);
    if (sent === 0) lost++;
    t.is(await debits(db, id), 1, `debit of ${id}`);
  }
  return lost;
}
