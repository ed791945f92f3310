// `npm test`: starts a throw-away embedded PostgreSQL (with a migrated template database that every test file
// clones) and a Temporal dev server (unless TEMPORAL_ADDRESS is given), runs the whole ava suite, stops both,
// and ends with the line `N passed, N failed` read from ava's TAP output.
import { spawn } from 'node:child_process';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startScratchDatabase, startTemporalDev } from './infra.ts';
import { ensureS3Server, startS3Server, type S3Server, type S3State } from './s3-server.ts';

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

// A real S3-compatible server (versitygw) for the S3 storage tests, built once into .data/bin. It is built and
// started in the background: the test files run meanwhile, and the S3 tests wait for the state file it writes.
const s3StateFile = path.join(os.tmpdir(), `vas-test-s3-${process.pid}.json`);
let s3: S3Server | null = null;
const writeS3State = (st: S3State) => {
  writeFileSync(`${s3StateFile}.partial`, JSON.stringify(st));
  renameSync(`${s3StateFile}.partial`, s3StateFile);
};
const s3Ready = (async () => {
  const bin = await ensureS3Server(log);
  if (bin.bin === null) {
    log(`S3 tests will be skipped: ${bin.reason}`);
    return writeS3State({ unavailable: bin.reason });
  }
  try {
    s3 = await startS3Server(bin.bin);
    writeS3State({ endpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey });
    log(`S3 server (versitygw) ready on ${s3.endpoint}`);
  } catch (err) {
    const why = `the S3 test server did not start: ${(err as Error).message}`;
    log(`S3 tests will be skipped: ${why}`);
    writeS3State({ unavailable: why });
  }
})();
const s3Env = { TEST_S3_STATE: s3StateFile };

const userArgs = process.argv.slice(2);
const concurrency = userArgs.some((a) => a === '--concurrency' || a.startsWith('--concurrency=') || a === '-c') ? [] : ['--concurrency', String(os.availableParallelism() + 1)];
const args = ['--tap', ...concurrency, ...userArgs];
const child = spawn(path.resolve('node_modules/.bin/ava'), args, {
  env: {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    TEST_PG_ADMIN_URL: pg.url(),
    TEST_PG_TEMPLATE: 'vas_template',
    TEMPORAL_ADDRESS: temporalAddress,
    ...s3Env,
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
await s3Ready;
await (s3 as S3Server | null)?.stop();
rmSync(s3StateFile, { force: true });
await scratch.stop();
if (code !== 0 && failed === 0) failed = 1; // a crash of the runner itself is a failure too
log(`finished in ${Math.round((Date.now() - t0) / 1000)} s`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(code === 0 && failed === 0 ? 0 : 1);
