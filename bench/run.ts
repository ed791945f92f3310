// `npm run bench`: runs every benchmark in bench/ one after another (each prints its own figures and a ratio
// against a baseline measured in the same run). `npm run bench -- agents history` runs only those.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const all = readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_')).map((f) => f.replace(/\.ts$/, '')).sort();
const wanted = process.argv.slice(2);
const chosen = wanted.length ? all.filter((b) => wanted.includes(b)) : all;
let failed = 0;
for (const name of chosen) {
  process.stdout.write(`\n=== bench/${name} ===\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(dir, `${name}.ts`)], { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: 'silent' } });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
