// `npm run migrate`: apply SQL migrations to DATABASE_URL (the production shape runs this before api/media/worker,
// which also apply pending migrations at start under an advisory lock).
import { loadConfigOrExit } from '../core/config.ts';
import { migrate } from '../core/db/migrate.ts';

const config = loadConfigOrExit();
if (!config.DATABASE_URL) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(1);
}
const applied = await migrate(config.DATABASE_URL);
process.stdout.write(`${JSON.stringify({ applied })}\n`);
