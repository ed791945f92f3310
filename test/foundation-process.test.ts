// Process-level behaviour: the admin CLI's output, configuration validation, the 500 shape, SIGTERM draining.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import Koa from 'koa';
import { createTestDb } from './helpers/db.ts';
import { errorMiddleware } from '../api/middleware/errors.ts';
import { requestMiddleware } from '../api/middleware/request.ts';
import { pino } from 'pino';
import { loadConfig, ConfigError } from '../core/config.ts';
import { freePort, waitForPort } from '../scripts/infra.ts';

const node = process.execPath;

function admin(args: string[], env: Record<string, string>) {
  return spawnSync(node, ['--import', 'tsx', 'scripts/admin.ts', ...args], { env: { ...process.env, ...env, LOG_LEVEL: 'silent' }, encoding: 'utf8' });
}

test('admin CLI: org create prints exactly one JSON object; the key works; bad arguments exit non-zero', async (t) => {
  const { url, db } = await createTestDb();
  const r = admin(['org', 'create', '--name', 'CLI org', '--balance-usd', '12.5'], { DATABASE_URL: url });
  t.is(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.is(lines.length, 1);
  const out = JSON.parse(lines[0]!);
  t.deepEqual(Object.keys(out).sort(), ['apiKey', 'organizationId']);
  t.regex(out.apiKey, /^vak_/);

  const credit = admin(['wallet', 'credit', '--org', out.organizationId, '--usd', '7.5'], { DATABASE_URL: url });
  t.is(credit.status, 0, credit.stderr);
  t.is(JSON.parse(credit.stdout).balanceUsd, 20);
  const limits = admin(['org', 'limits', '--org', out.organizationId, '--concurrency', '3', '--rate-per-minute', '100', '--monthly-minutes', '500'], { DATABASE_URL: url });
  t.like(JSON.parse(limits.stdout), { concurrencyLimit: 3, ratePerMinute: 100, monthlyMinutesQuota: 500 });
  const calls = admin(['org', 'limits', '--org', out.organizationId, '--monthly-calls', '250'], { DATABASE_URL: url });
  t.is(calls.status, 0, calls.stderr);
  t.like(JSON.parse(calls.stdout), { monthlyMinutesQuota: 500, monthlyCallsQuota: 250 });
  const suspended = admin(['wallet', 'suspend', '--org', out.organizationId, '--reason', 'invoice overdue'], { DATABASE_URL: url });
  t.is(suspended.status, 0, suspended.stderr);
  t.like(JSON.parse(suspended.stdout), { walletStatus: 'suspended', walletStatusReason: 'invoice overdue' });
  t.like(JSON.parse(admin(['org', 'list'], { DATABASE_URL: url }).stdout)[0], { monthlyCallsQuota: 250, walletStatus: 'suspended' });
  const resumed = admin(['wallet', 'resume', '--org', out.organizationId], { DATABASE_URL: url });
  t.like(JSON.parse(resumed.stdout), { walletStatus: 'active', walletStatusReason: null });
  const key = admin(['key', 'create', '--org', out.organizationId, '--name', 'second'], { DATABASE_URL: url });
  t.regex(JSON.parse(key.stdout).apiKey, /^vak_/);
  const list = JSON.parse(admin(['org', 'list'], { DATABASE_URL: url }).stdout);
  t.is(list.length, 1);
  t.like(list[0], { name: 'CLI org', balanceUsd: 20, concurrencyLimit: 3 });

  for (const bad of [
    ['org', 'create'],
    ['org', 'create', '--name', 'x', '--balance-usd', 'lots'],
    ['org', 'limits', '--org', 'not-a-uuid', '--concurrency', '2'],
    ['org', 'limits', '--org', out.organizationId, '--concurrency', '0'],
    ['org', 'limits', '--org', out.organizationId, '--monthly-calls', '-1'],
    ['wallet', 'resume', '--org', out.organizationId, '--reason', 'x'],
    ['wallet', 'suspend'],
    ['wallet', 'credit', '--org', out.organizationId],
    ['key', 'create', '--org', out.organizationId],
    ['org', 'explode'],
    ['org', 'create', '--name', 'x', '--bogus', '1'],
  ]) {
    const res = admin(bad, { DATABASE_URL: url });
    t.not(res.status, 0, bad.join(' '));
    t.is(res.stdout, '', bad.join(' '));
    t.regex(res.stderr, /^admin: /, bad.join(' '));
  }
  // nothing was changed by the bad invocations
  t.is(JSON.parse(admin(['org', 'list'], { DATABASE_URL: url }).stdout).length, 1);
  await db.end();
});

test('configuration: a bad value names the variable; a process with one exits with a message', (t) => {
  const err = t.throws(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x' }), { instanceOf: ConfigError });
  t.regex(err!.message, /PORT/);
  t.regex(err!.message, /DATABASE_URL/);
  const r = spawnSync(node, ['--import', 'tsx', 'api/main.ts'], { env: { ...process.env, PORT: '99999' }, encoding: 'utf8' });
  t.is(r.status, 1);
  t.regex(r.stderr, /PORT/);
});

test('500: no stack, a request id that is also in the log line', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
  const app = new Koa();
  app.use(requestMiddleware(log));
  app.use(errorMiddleware());
  app.use(() => {
    throw new Error('secret internal detail at /srv/app.ts:12');
  });
  const server = http.createServer(app.callback()).listen(0);
  const port = (server.address() as { port: number }).port;
  const res = await fetch(`http://127.0.0.1:${port}/boom`);
  const body = await res.json() as { detail: string; request_id: string };
  server.close();
  t.is(res.status, 500);
  t.is(body.detail, 'Internal Server Error');
  t.false(JSON.stringify(body).includes('secret internal detail'));
  t.is(res.headers.get('x-request-id'), body.request_id);
  t.true(lines.some((l) => l.includes(body.request_id) && l.includes('unhandled error')));
});

test('SIGTERM drains: an in-flight request finishes, new connections are refused, the process exits 0', async (t) => {
  const { url } = await createTestDb();
  const port = await freePort();
  const child = spawn(node, ['--import', 'tsx', 'scripts/server-main.ts'], {
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', TEMPORAL_ADDRESS: '', LOG_LEVEL: 'silent', SHUTDOWN_GRACE_MS: '5000' },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitForPort(port, 180_000); // a loaded CI machine can take long to start a process
  // Start a request whose body arrives after the signal.
  const pending = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v1/user/api-keys', headers: { 'content-type': 'application/json', 'x-api-key': 'vak_unknown' } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write('{"name":');
    setTimeout(() => {
      child.kill('SIGTERM');
      setTimeout(() => {
        // While draining, a new connection is refused ...
        newConnection = fetch(`http://127.0.0.1:${port}/healthz`).then(() => 'accepted', () => 'refused');
        // ... and the in-flight request still completes.
        setTimeout(() => req.end('"late"}'), 300);
      }, 300);
    }, 300);
  });
  let newConnection: Promise<string> = Promise.resolve('not tried');
  const res = await pending;
  t.is(await newConnection, 'refused');
  t.is(res.status, 401); // the request was served to completion (unknown key) rather than cut off
  t.is(await exited, 0);
});
