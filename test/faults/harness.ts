// Shared pieces of the fault tests (issue 22, item 5): the service's real processes in the production shape
// (api/main.ts, media/main.ts, activities/worker.ts) started as child processes on one test database and the suite's
// Temporal, killed with SIGKILL; a webhook receiver; counters over the rows a fault must not break.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';
import { createApiKey, createOrganization, setOrganizationLimits } from '../../core/orgs.ts';
import { freePort, waitForPort } from '../../scripts/infra.ts';
import { createTestDb } from '../helpers/db.ts';
import { startReceiver } from '../post-call/helpers.ts';

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const children: ChildProcess[] = [];

/** SIGKILL every child still running (register with test.after.always in each file). */
export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

export interface Started {
  child: ChildProcess;
  origin: string;
  port: number;
}

/** Start one of the service's entry points as its own process; with `http`, wait until it listens. */
export async function startProcess(entry: string, env: Record<string, string>, http = true): Promise<Started> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
  children.push(child);
  if (http) await waitForPort(port, 60_000);
  return { child, origin: `http://127.0.0.1:${port}`, port };
}

/** SIGKILL, and wait until the process is gone. */
export async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

/**
 * A fresh database with an organization, its API key, a webhook receiver, and the environment every process shares.
 * The pool and the receiver close when the test ends, failed or not (an open pool keeps the test process alive).
 */
export async function setup(t: { teardown(fn: () => unknown): void }, queue: string, extraEnv: Record<string, string> = {}, limits: { concurrency?: number; balanceUsd?: number } = {}) {
  const { db, url } = await createTestDb();
  t.teardown(() => db.end());
  const org = await createOrganization(db, { name: 'faults', balanceUsd: limits.balanceUsd ?? 500 });
  await setOrganizationLimits(db, org.id, { concurrency: limits.concurrency ?? 50 });
  const key = (await createApiKey(db, org.id, 'faults')).key;
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const env = {
    DATABASE_URL: url, MEDIA_NODE_DEAD_AFTER_S: '4', SIGNING_SECRET: 'faults-test-signing-secret-0123', TEMPORAL_TASK_QUEUE: queue,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'faults-')), TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '',
    ...extraEnv,
  };
  return { db, org, key, receiver, env };
}

/** JSON requests to an api process with the organization's key. */
export function apiClient(key: string, origin: () => string) {
  return async (method: string, p: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${origin()}/api/v1${p}`, {
      method,
      headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try { json = JSON.parse(text) as Record<string, unknown>; } catch { json = { raw: text }; }
    return { status: res.status, body: json };
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

/** Poll `fn` every `everyMs` until it returns something truthy (the fault tests wait minutes: no need to poll at 25 ms). */
export async function waitUntil<T>(fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs: number, what: string, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
