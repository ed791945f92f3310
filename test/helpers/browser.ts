// The Chromium the browser tests drive: Debian's `chromium` (installed by `npm test`'s setup when it runs as root),
// or CHROMIUM_PATH. Without it the browser tests of a file are reported skipped, with the reason on stderr.
import { existsSync } from 'node:fs';
import test from 'ava';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser cannot run here, or null. */
export const chromiumMissing = existsSync(CHROMIUM)
  ? null
  : `Chromium not found at ${CHROMIUM} (install Debian's 'chromium' package: run 'npm test' (scripts/setup.sh --test) as root, or apt-get install chromium; or set CHROMIUM_PATH)`;

/** `test.serial`, or `test.skip` (said once on stderr, naming `area`) when Chromium is missing. */
export function browserTest(area: string): typeof test.serial | typeof test.skip {
  if (chromiumMissing) process.stderr.write(`[${area}] NOT RUN: ${chromiumMissing}\n`);
  return chromiumMissing ? test.skip : test.serial;
}
