// Start-up while the database is away (core/boot.ts openDatabase): a process that boots during a database restart
// waits for it instead of exiting (a Temporal worker that exited on ECONNREFUSED in an outage would leave post-call
// never run); any other database error fails the start at once. The database here is
// the suite's real PostgreSQL, reached through a TCP relay that starts listening only after the process began to wait.
import test from 'ava';
import net from 'node:net';
import { loadConfig } from '../../core/config.ts';
import { openDatabase } from '../../core/boot.ts';
import { sql } from '../../core/db/pool.ts';
import { freePort } from '../../scripts/infra.ts';
import { createTestDb } from '../helpers/db.ts';
import { z } from 'zod';

interface Line { level: 'info' | 'warn'; msg: string; attempt?: number }
function recordingLogger() {
  const lines: Line[] = [];
  return {
    lines,
    logger: {
      info: (o: object, msg: string) => lines.push({ level: 'info', msg, ...o }),
      warn: (o: object, msg: string) => lines.push({ level: 'warn', msg, ...o }),
    } as never,
  };
}

/** A relay on `port` to the suite's PostgreSQL, listening from when it is called. */
function relay(port: number, target: URL): Promise<net.Server> {
  const server = net.createServer((c) => {
    const up = net.connect(Number(target.port), target.hostname);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)));
}

test('a database that comes up after the process started is waited for, then used', async (t) => {
  const { db: own, url } = await createTestDb();
  t.teardown(() => own.end());
  const target = new URL(url);
  const port = await freePort();
  const late = new URL(url);
  late.hostname = '127.0.0.1';
  late.port = String(port);
  const { lines, logger } = recordingLogger();
  const opening = openDatabase(loadConfig({ DATABASE_URL: late.toString() }), logger, { waitMs: 30_000 });
  await new Promise((r) => setTimeout(r, 2500)); // nothing listens yet: connections are refused
  const server = await relay(port, target);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const db = await opening;
  t.teardown(() => db.end());
  t.true(lines.some((l) => l.level === 'warn' && l.msg === 'database unreachable: waiting for it'), 'said it waits');
  t.true(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM schema_migrations`) > 0, 'migrated and usable');
});

test('a database that stays away past the wait, and any other error, fail the start', async (t) => {
  const port = await freePort();
  const { lines, logger } = recordingLogger();
  const t0 = Date.now();
  const err = await t.throwsAsync(openDatabase(loadConfig({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nothing` }), logger, { waitMs: 1500 }));
  t.regex(err.message, /ECONNREFUSED/);
  t.true(lines.filter((l) => l.level === 'warn').length >= 1, 'retried while refused');
  t.true(Date.now() - t0 < 20_000);

  // a database name that does not exist is not an outage: no waiting
  const { db: own, url } = await createTestDb();
  t.teardown(() => own.end());
  const missing = new URL(url);
  missing.pathname = '/no_such_database_here';
  const quiet = recordingLogger();
  await t.throwsAsync(openDatabase(loadConfig({ DATABASE_URL: missing.toString() }), quiet.logger, { waitMs: 30_000 }), { message: /does not exist/ });
  t.deepEqual(quiet.lines.filter((l) => l.level === 'warn'), [], 'not retried');
});

// Seen in the fault suite: a worker starting while PostgreSQL was SIGKILLed died of an unhandled 'error' event
// ("Connection terminated unexpectedly") from the one pg client slonik opens at pool creation to read the type
// OIDs; it had no error listener (patches/@slonik+pg-driver*.patch adds one). The relay here cuts the first
// connection the moment the client sends that pg_type query; the process must survive and wait.
test('a connection lost during the pool\'s type lookup is an outage to wait out, not a crash', async (t) => {
  const { db: own, url } = await createTestDb();
  t.teardown(() => own.end());
  const target = new URL(url);
  const port = await freePort();
  let cut = 0;
  const server = net.createServer((c) => {
    const up = net.connect(Number(target.port), target.hostname);
    c.on('data', (d: Buffer) => {
      if (cut === 0 && d.includes('pg_type')) {
        cut += 1;
        up.destroy();
        c.end(); // the server's side closes mid-query, as a killed backend's socket does
        return;
      }
      up.write(d);
    });
    up.pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((ok) => server.listen(port, '127.0.0.1', () => ok()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const via = new URL(url);
  via.hostname = '127.0.0.1';
  via.port = String(port);
  const { lines, logger } = recordingLogger();
  const db = await openDatabase(loadConfig({ DATABASE_URL: via.toString() }), logger, { waitMs: 30_000 });
  t.teardown(() => db.end());
  t.is(cut, 1, 'the type lookup\'s connection was cut once');
  t.true(lines.some((l) => l.level === 'warn' && l.msg === 'database unreachable: waiting for it'), 'said it waits');
  t.true(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM schema_migrations`) > 0, 'usable');
});
