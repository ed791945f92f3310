// A real S3-compatible server for the tests: the Versity S3 Gateway (versitygw, Apache-2.0) over a scratch
// directory. `npm test` builds it once with `go install` into .data/bin — in the background, while the first test
// files run — starts one instance for the whole run and writes its address and keys to the file TEST_S3_STATE
// names (or why it cannot run); the S3 tests wait for that file. Each test file uses its own bucket.
// Set S3_TEST_SERVER=/path/to/versitygw to use a binary built elsewhere. Without Go (and no binary) the S3 tests
// are skipped with a message naming what is missing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from './infra.ts';

export const VERSITYGW_MODULE = 'github.com/versity/versitygw/cmd/versitygw';
export const VERSITYGW_VERSION = 'v1.8.0';

/**
 * The versitygw binary, building it when absent (in the background: the suite's first test files run meanwhile).
 * Resolves null (with the reason) when it cannot be had.
 */
export async function ensureS3Server(log: (m: string) => void): Promise<{ bin: string } | { bin: null; reason: string }> {
  const given = process.env.S3_TEST_SERVER;
  if (given) return existsSync(given) ? { bin: given } : { bin: null, reason: `S3_TEST_SERVER=${given} does not exist` };
  const bin = path.resolve('.data/bin/versitygw');
  if (existsSync(bin)) return { bin };
  const go = spawnSync('go', ['version'], { stdio: 'ignore' });
  if (go.status !== 0) return { bin: null, reason: `no Go toolchain to build the S3 test server (go install ${VERSITYGW_MODULE}@${VERSITYGW_VERSION})` };
  log(`building the S3 test server once in the background (go install ${VERSITYGW_MODULE}@${VERSITYGW_VERSION}); the S3 tests wait for it`);
  const t0 = Date.now();
  mkdirSync(path.dirname(bin), { recursive: true });
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn('go', ['install', `${VERSITYGW_MODULE}@${VERSITYGW_VERSION}`], { env: { ...process.env, GOBIN: path.dirname(bin) }, stdio: 'ignore' });
    child.once('error', () => resolve(-1));
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0 || !existsSync(bin)) return { bin: null, reason: `go install ${VERSITYGW_MODULE}@${VERSITYGW_VERSION} failed (exit ${code})` };
  log(`S3 test server built in ${Math.round((Date.now() - t0) / 1000)} s`);
  return { bin };
}

/** What the test files read from TEST_S3_STATE once the server is up (or why it will not be). */
export type S3State = { endpoint: string; accessKey: string; secretKey: string } | { unavailable: string };

export interface S3Server {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startS3Server(bin: string): Promise<S3Server> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vas-s3-'));
  const port = await freePort();
  const accessKey = 'vas-test-access';
  const secretKey = 'vas-test-secret-0123456789';
  const child = spawn(bin, ['--port', `127.0.0.1:${port}`, '--quiet', 'posix', dir], {
    env: { ...process.env, ROOT_ACCESS_KEY_ID: accessKey, ROOT_SECRET_ACCESS_KEY: secretKey },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => { stderr = (stderr + String(d)).slice(-4000); });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`versitygw exited (${code}): ${stderr}`))));
  await Promise.race([waitForPort(port, 30_000), exited]);
  exited.catch(() => {});
  return {
    endpoint: `http://127.0.0.1:${port}`,
    accessKey,
    secretKey,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      }),
  };
}
