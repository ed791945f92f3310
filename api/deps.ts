// What the api needs from the outside world, built once at boot by the entry point (or a test).
import type { Client as TemporalClient } from '@temporalio/client';
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';

export interface ApiDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Recordings, transcripts, uploaded documents (core/storage). */
  storage: Storage;
  /** null when the process runs without Temporal (some tests). Routes that need it answer 503. */
  temporal: TemporalClient | null;
  /** Readiness probe of the Temporal connection. */
  checkTemporal: () => Promise<boolean>;
}
