// A Temporal worker for a test server: the service's own workflows and activities (activities/worker.ts, as in
// production) against the server's database and storage, on a task queue the test file names, so test files that
// run at once never take each other's tasks (the server's TEMPORAL_TASK_QUEUE names the same queue).
import type { Worker } from '@temporalio/worker';
import { createWorker } from '../../activities/worker.ts';
import type { Config } from '../../core/config.ts';
import { createLogger } from '../../core/logger.ts';
import type { Storage } from '../../core/storage/index.ts';
import type { TestServer } from './server.ts';

export interface RunningWorker {
  worker: Worker;
  /** settles once the worker has stopped */
  run: Promise<void>;
  /** Shut the worker down (once, however often it is called), wait for it to stop, close its Temporal connection. */
  close(): Promise<void>;
}

const logger = createLogger({ level: 'silent' });

/** Start a worker on `taskQueue`; `storage` replaces the server's (a failing store), `config` the server's config. */
export async function startTestWorker(s: Pick<TestServer, 'config' | 'db' | 'storage'>, taskQueue: string, opts: { storage?: Storage; config?: Config } = {}): Promise<RunningWorker> {
  const { worker, connection } = await createWorker({ config: opts.config ?? s.config, db: s.db, logger, taskQueue, storage: opts.storage ?? s.storage });
  const run = worker.run();
  let closing: Promise<void> | null = null;
  return {
    worker,
    run,
    close() {
      closing ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await run.catch(() => undefined);
        await connection.close();
      })();
      return closing;
    },
  };
}
