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

/**
 * SERVER_CHRT="<chrt options>" (an experiment, issue 24): after the product's own priority step, the bench process's
 * main thread (the media pacing thread; its id is the process id) gets `chrt <options> <pid>`, e.g. "-R -r -p 10" for
 * SCHED_RR priority 10 with threads started afterwards back at normal scheduling. The line it returns says what the
 * kernel applied. Unset: nothing changes.
 */
export async function applyServerChrt(): Promise<string | null> {
  const opts = process.env.SERVER_CHRT;
  if (!opts) return null;
  const { spawnSync } = await import('node:child_process');
  const set = spawnSync('chrt', [...opts.split(/\s+/).filter(Boolean), String(process.pid)], { encoding: 'utf8' });
  if (set.status !== 0) return `SERVER_CHRT "${opts}" refused: ${(set.stderr || set.error?.message || '').trim()}`;
  const now = spawnSync('chrt', ['-p', String(process.pid)], { encoding: 'utf8' });
  return `SERVER_CHRT "${opts}": ${now.stdout.trim().replace(/\n/g, '; ')}`;
}

/**
 * A bench whose own process hosts the media side runs with the media process's Node flags (scripts/infra.ts
 * MEDIA_NODE_FLAGS), as production does: without them it re-executes itself with them and exits with the child's
 * status. A run that sizes the heap itself (on the command line or in NODE_OPTIONS) is left alone: an A/B of the flags.
 */
export async function withMediaFlags(script: string): Promise<void> {
  const { MEDIA_NODE_FLAGS } = await import('../scripts/infra.ts');
  const heapFlag = (a: string) => a.includes('max-semi-space-size') || a.includes('initial-old-space-size');
  if (process.execArgv.some(heapFlag) || heapFlag(process.env.NODE_OPTIONS ?? '')) return;
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [...MEDIA_NODE_FLAGS, ...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit', env: process.env });
  process.exit(r.status ?? 1);
}
