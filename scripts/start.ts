// `npm start`: the whole system on embedded defaults. Starts (unless given by env) an embedded PostgreSQL under
// .data/pg and a Temporal dev server with its Web UI, applies migrations, then runs two children:
// the server (api + media on one PORT) and the Temporal worker. Ctrl-C / SIGTERM stops everything it started.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { loadConfigOrExit } from '../core/config.ts';
import { migrate } from '../core/db/migrate.ts';
import { MEDIA_NODE_FLAGS, startEmbeddedPostgres, startTemporalDev, takeOverSignals, type EmbeddedPg, type TemporalDev } from './infra.ts';

const config = loadConfigOrExit();
const log = (msg: string) => process.stderr.write(`[start] ${msg}\n`);
const started: { pg?: EmbeddedPg; temporal?: TemporalDev; children: ChildProcess[] } = { children: [] };
const env: Record<string, string> = { ...(process.env as Record<string, string>) };

let stopping = false;
async function stopAll(code: number) {
  if (stopping) return;
  stopping = true;
  log('stopping...');
  await Promise.all(started.children.map((c) => new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', () => resolve());
    c.kill('SIGTERM');
    setTimeout(() => c.kill('SIGKILL'), config.SHUTDOWN_GRACE_MS + 5000).unref();
  })));
  await started.temporal?.stop().catch(() => {});
  await started.pg?.stop().catch(() => {});
  rmSync(`${config.DATA_DIR}/runtime.json`, { force: true });
  log('stopped');
  process.exit(code);
}
takeOverSignals();
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

try {
  if (!config.DATABASE_URL) {
    log(`starting embedded PostgreSQL in ${config.DATA_DIR}/pg ...`);
    started.pg = await startEmbeddedPostgres({ dir: `${config.DATA_DIR}/pg`, port: 5488, persistent: true });
    env.DATABASE_URL = started.pg.url();
    writeFileSync(`${config.DATA_DIR}/runtime.json`, JSON.stringify({ databaseUrl: env.DATABASE_URL, pid: process.pid }));
  }
  const applied = await migrate(env.DATABASE_URL!);
  log(`database ready (${applied.length} migration(s) applied)`);

  if (!config.TEMPORAL_ADDRESS) {
    log('starting Temporal dev server ...');
    started.temporal = await startTemporalDev({ dbFile: `${config.DATA_DIR}/temporal.db`, port: 7233, uiPort: 8233 });
    env.TEMPORAL_ADDRESS = started.temporal.address;
    // the console links campaign workflows to the dev server's UI (8233 unless that port was taken)
    if (!env.TEMPORAL_UI_URL && started.temporal.uiUrl) env.TEMPORAL_UI_URL = started.temporal.uiUrl;
  }

  const run = (name: string, script: string, flags: readonly string[] = []) => {
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', script], { env, stdio: 'inherit' });
    child.once('exit', (code, signal) => {
      if (!stopping) {
        log(`${name} exited (${signal ?? code}); stopping the rest`);
        void stopAll(1);
      }
    });
    started.children.push(child);
  };
  run('server', 'scripts/server-main.ts', MEDIA_NODE_FLAGS); // api + media in one process
  run('worker', 'activities/worker.ts');

  const base = config.publicUrl;
  const lines = [
    '',
    'Voice agent service is starting:',
    `  REST API       ${base}/api/v1        (OpenAPI: ${base}/api/v1/openapi.json, docs: ${base}/api/v1/docs)`,
    `  Audio WS       ${base.replace(/^http/, 'ws')}/api/v1/ws/audio/{callId}`,
    `  Call page      ${base}/call   (browser WebRTC calls to your agents)`,
    `  Console        ${base}/console   (calls, recordings, turn latency, agents, campaigns, numbers)`,
    `  Health         ${base}/healthz   ${base}/readyz   ${base}/metrics`,
    `  Files (CDN)    ${config.cdnUrl}`,
    started.temporal?.uiUrl ? `  Temporal UI    ${started.temporal.uiUrl}` : `  Temporal       ${env.TEMPORAL_ADDRESS}`,
    `  PostgreSQL     ${started.pg ? `embedded, ${config.DATA_DIR}/pg (port ${started.pg.port})` : 'DATABASE_URL'}`,
    '',
    'Get an API key:   npm run --silent admin -- org create --name "My org" --balance-usd 20',
    'Stop:             Ctrl-C',
    '',
  ];
  log(lines.join('\n'));
} catch (err) {
  log(`failed: ${(err as Error).stack ?? String(err)}`);
  await stopAll(1);
}
