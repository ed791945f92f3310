// Shared start-up steps of every entry point: database (migrated), Temporal connection, signal handling.
import type { Config } from './config.ts';
import { createDb, isDatabaseUnavailable, type Db } from './db/pool.ts';
import { migrate } from './db/migrate.ts';
import type { Logger } from './logger.ts';
import { connectTemporal, type TemporalHandle } from './temporal.ts';
import { shutdownTracing } from './tracing.ts';

/** How long a process that starts while the database is away (restarting, in crash recovery, failing over) waits for it. */
const DATABASE_WAIT_MS = 60_000;

/**
 * The process's pool, the schema migrated. A database that is away when the process starts is waited for (retried
 * every second for `waitMs`), as the Temporal connection is: a worker or media node that boots during a database
 * restart must not exit. Any other error (a wrong database name, a bad password, a failing migration) throws at once.
 */
export async function openDatabase(config: Config, logger: Logger, opts: { waitMs?: number } = {}): Promise<Db> {
  if (!config.DATABASE_URL) {
    throw new Error('DATABASE_URL is not set. Run `npm start` for the embedded PostgreSQL, or point DATABASE_URL at a server.');
  }
  const url = config.DATABASE_URL;
  const deadline = Date.now() + (opts.waitMs ?? DATABASE_WAIT_MS);
  let db: Db | null = null;
  for (let attempt = 1; ; attempt++) {
    try {
      db ??= await createDb(url, { maximumPoolSize: config.DATABASE_POOL_SIZE }); // opens its first connection
      const applied = await migrate(url);
      if (applied.length) logger.info({ applied }, 'migrations applied');
      return db;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() >= deadline) {
        await db?.end().catch(() => {});
        throw err;
      }
      logger.warn({ err, attempt }, 'database unreachable: waiting for it');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

export async function openTemporal(config: Config, logger: Logger, opts: { required?: boolean } = {}): Promise<TemporalHandle | null> {
  if (!config.TEMPORAL_ADDRESS) {
    if (opts.required) throw new Error('TEMPORAL_ADDRESS is not set. Run `npm start`, or point TEMPORAL_ADDRESS at a Temporal frontend (host:7233).');
    logger.warn('TEMPORAL_ADDRESS not set: workflows (post-call, ingestion, campaigns) are unavailable');
    return null;
  }
  let lastErr: unknown;
  for (let attempt = 0; attempt < 30; attempt++) {
    try {
      return await connectTemporal(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE);
    } catch (err) {
      lastErr = err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  throw new Error(`Temporal at ${config.TEMPORAL_ADDRESS} unreachable: ${String(lastErr)}`);
}

/** Run `stop` once on SIGTERM/SIGINT, then exit. A second signal exits at once. */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // spans still buffered go out before the exit (a no-op without tracing)
    stop().then(() => shutdownTracing().catch(() => undefined)).then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}
