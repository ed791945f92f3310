// Temporary directories for tests, removed when the test process exits (ava runs each test file in a process of its
// own): a test suite that leaves its recordings, spools, uploads and databases behind fills /tmp run after run.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dirs = new Set<string>();

/** A fresh directory under the OS temp dir, named `prefix` + random; gone when this process exits. */
export function tempDir(prefix: string): string {
  if (dirs.size === 0) process.once('exit', () => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}
