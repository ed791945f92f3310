// What the media process needs, built once at boot by its entry point (or a test).
import type { Client as TemporalClient } from '@temporalio/client';
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';

export interface MediaDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Recordings go to spool/recordings/<callId>.wav for the post-call workflow (core/storage). */
  storage: Storage;
  /** null in tests that run without Temporal: the post-call hand-off is then skipped with a warning. */
  temporal: TemporalClient | null;
}
