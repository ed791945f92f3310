// The service (api + media on one port) on a benchmark's scratch database, without Temporal.
import path from 'node:path';
import { loadConfig } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import { createLogger } from '../core/logger.ts';
import { freePort, type ScratchDatabase } from '../scripts/infra.ts';
import { startCombined } from '../scripts/server.ts';

export async function startBenchServer(scratch: ScratchDatabase, db: Db) {
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: scratch.url,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: path.join(scratch.dir, 'data'),
    SIGNING_SECRET: 'bench-signing-secret-0123456789',
    LOG_LEVEL: 'silent',
  });
  const server = await startCombined({ config, db, logger: createLogger({ level: 'silent' }), temporal: null }, port, '127.0.0.1');
  return { server, config, port, origin: `http://127.0.0.1:${port}`, base: `http://127.0.0.1:${port}/api/v1` };
}
