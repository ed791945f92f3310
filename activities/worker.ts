// The Temporal worker: runs every workflow in workflows/ and the activities built by createActivities(deps).
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { NativeConnection, Worker, Runtime, DefaultLogger, type LogLevel } from '@temporalio/worker';
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { createActivities } from './index.ts';
import { createStorage, type Storage } from '../core/storage/index.ts';
import { initTracing, shutdownTracing, temporalWorkerTracing } from '../core/tracing.ts';

export const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflows', 'index.ts');

let runtimeInstalled = false;

export async function createWorker(parts: { config: Config; db: Db; logger: Logger; taskQueue?: string; activities?: object; storage?: Storage }) {
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    const level = (parts.config.LOG_LEVEL === 'silent' ? 'ERROR' : 'WARN') as LogLevel;
    try {
      Runtime.install({ logger: new DefaultLogger(level) });
    } catch {
      // Already installed by an earlier worker in this process.
    }
  }
  const connection = await connectWorker(parts.config.TEMPORAL_ADDRESS, parts.logger);
  const worker = await Worker.create({
    // traces: workflow and activity spans continue the caller's context (only when tracing is on)
    ...(await temporalWorkerTracing()),
    connection,
    namespace: parts.config.TEMPORAL_NAMESPACE,
    taskQueue: parts.taskQueue ?? parts.config.TEMPORAL_TASK_QUEUE,
    workflowsPath,
    activities: parts.activities ?? createActivities({ config: parts.config, db: parts.db, logger: parts.logger, storage: parts.storage ?? createStorage(parts.config) }),
  });
  return { worker, connection };
}

/**
 * The worker's connection, retried like the api's and media's (core/boot.ts openTemporal: 30 tries, 1 s apart): a
 * worker that boots while the Temporal server restarts waits for it instead of exiting. Once running, the worker's
 * core retries its polls and task completions itself across an outage.
 */
async function connectWorker(address: string | undefined, logger: Logger): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ ...(address ? { address } : {}) });
    } catch (err) {
      if (attempt >= 30) throw err;
      logger.warn({ err, attempt }, `Temporal at ${address} unreachable: retrying`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { loadConfigOrExit } = await import('../core/config.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { openDatabase } = await import('../core/boot.ts');
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'worker' });
  await initTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME ?? 'voice-agent-worker' });
  if (!config.TEMPORAL_ADDRESS) {
    logger.fatal('TEMPORAL_ADDRESS is required for the worker');
    process.exit(1);
  }
  const db = await openDatabase(config, logger);
  const { worker, connection } = await createWorker({ config, db, logger });
  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(130);
    stopping = true;
    logger.info('worker shutting down');
    worker.shutdown();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  await worker.run();
  await connection.close();
  await db.end();
  await shutdownTracing().catch(() => undefined);
  logger.info('worker stopped');
  process.exit(0);
}
