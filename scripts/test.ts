// `npm test`: starts a throw-away embedded PostgreSQL (with a migrated template database that every test file
// clones) and a Temporal dev server (unless TEMPORAL_ADDRESS is given), runs the whole ava suite, stops both,
// and ends with the line `N passed, N failed` read from ava's TAP output.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startScratchDatabase, startTemporalDev } from './infra.ts';

const log = (m: string) => process.stderr.write(`[test] ${m}\n`);
const t0 = Date.now();
const scratch = await startScratchDatabase({ prefix: 'vas-test-', dbName: 'vas_template' });
const pg = scratch.pg;
log(`postgres ready on ${pg.port} (${Date.now() - t0} ms)`);

let temporal: Awaited<ReturnType<typeof startTemporalDev>> | null = null;
let temporalAddress = process.env.TEMPORAL_ADDRESS;
if (!temporalAddress) {
  temporal = await startTemporalDev({ headless: true, port: 0 });
  temporalAddress = temporal.address;
  log(`temporal ready on ${temporalAddress}`);
}

const args = ['--tap', ...process.argv.slice(2)];
const child = spawn(path.resolve('node_modules/.bin/ava'), args, {
  env: {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    TEST_PG_ADMIN_URL: pg.url(),
    TEST_PG_TEMPLATE: 'vas_template',
    TEMPORAL_ADDRESS: temporalAddress,
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let passed = 0;
let failed = 0;
let buffered = '';
child.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk);
  buffered += chunk.toString();
  const lines = buffered.split('\n');
  buffered = lines.pop() ?? '';
  for (const line of lines) {
    const pass = /^# pass (\d+)/.exec(line);
    const fail = /^# fail (\d+)/.exec(line);
    if (pass) passed = Number(pass[1]);
    if (fail) failed = Number(fail[1]);
  }
});
const code: number = await new Promise((resolve) => child.once('exit', (c) => resolve(c ?? 1)));
await temporal?.stop();
await scratch.stop();
if (code !== 0 && failed === 0) failed = 1; // a crash of the runner itself is a failure too
log(`finished in ${Math.round((Date.now() - t0) / 1000)} s`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(code === 0 && failed === 0 ? 0 : 1);
