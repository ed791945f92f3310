// Admin CLI for operators of a self-hosted install (there is no sign-up flow in the API).
//   admin -- org create --name NAME [--balance-usd N]      → {"organizationId": "...", "apiKey": "..."}
//   admin -- org list
//   admin -- org limits --org ID [--concurrency N] [--rate-per-minute N] [--monthly-minutes N] [--monthly-calls N]
//   admin -- wallet credit --org ID --usd N
//   admin -- wallet suspend --org ID [--reason TEXT]        (every call start: 403 wallet_rejected)
//   admin -- wallet resume --org ID
//   admin -- key create --org ID --name NAME                (no --org: a user key without organization)
// Database: DATABASE_URL, else the embedded PostgreSQL of a running `npm start`, else the embedded one under .data/pg.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../core/config.ts';
import { createDb, type Db } from '../core/db/pool.ts';
import { migrate } from '../core/db/migrate.ts';
import { createApiKey, createOrganization, creditWallet, getOrganization, listOrganizations, setOrganizationLimits, setWalletStatus } from '../core/orgs.ts';
import { startEmbeddedPostgres, type EmbeddedPg } from './infra.ts';

class UsageError extends Error {}

const USAGE = `usage:
  admin -- org create --name NAME [--balance-usd N]
  admin -- org list
  admin -- org limits --org ID [--concurrency N] [--rate-per-minute N] [--monthly-minutes N] [--monthly-calls N]
  admin -- wallet credit --org ID --usd N
  admin -- wallet suspend --org ID [--reason TEXT]
  admin -- wallet resume --org ID
  admin -- key create --org ID --name NAME`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function num(name: string, v: string | undefined, opts: { int?: boolean; min?: number; nullable?: boolean } = {}): number | null | undefined {
  if (v === undefined) return undefined;
  if (opts.nullable && (v === 'none' || v === 'default')) return null;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || (opts.int && !Number.isInteger(n)) || (opts.min !== undefined && n < opts.min)) {
    throw new UsageError(`--${name} must be ${opts.int ? 'an integer' : 'a number'}${opts.min !== undefined ? ` >= ${opts.min}` : ''}${opts.nullable ? " (or 'none')" : ''}, got '${v}'`);
  }
  return n;
}
function orgId(v: string | undefined): string {
  if (!v) throw new UsageError('--org ID is required');
  if (!UUID.test(v)) throw new UsageError(`--org must be an organization id (UUID), got '${v}'`);
  return v;
}

async function openDb(): Promise<{ db: Db; url: string; pg?: EmbeddedPg }> {
  const config = loadConfig();
  if (config.DATABASE_URL) return { db: await createDb(config.DATABASE_URL, { maximumPoolSize: 2 }), url: config.DATABASE_URL };
  const runtime = `${config.DATA_DIR}/runtime.json`;
  if (existsSync(runtime)) {
    const { databaseUrl } = JSON.parse(readFileSync(runtime, 'utf8')) as { databaseUrl: string };
    try {
      const db = await createDb(databaseUrl, { maximumPoolSize: 2 });
      await db.query((await import('../core/db/pool.ts')).sql.unsafe`SELECT 1`);
      return { db, url: databaseUrl };
    } catch {
      // stale runtime file: fall through to our own embedded instance
    }
  }
  const pg = await startEmbeddedPostgres({ dir: `${config.DATA_DIR}/pg`, port: 5488, persistent: true });
  return { db: await createDb(pg.url(), { maximumPoolSize: 2 }), url: pg.url(), pg };
}

async function main(argv: string[]): Promise<unknown> {
  const [group, action, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' }, 'balance-usd': { type: 'string' }, org: { type: 'string' }, usd: { type: 'string' },
      concurrency: { type: 'string' }, 'rate-per-minute': { type: 'string' }, 'monthly-minutes': { type: 'string' },
      'monthly-calls': { type: 'string' }, reason: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const cmd = `${group ?? ''} ${action ?? ''}`.trim();
  // Validate every argument before touching the database.
  let run: (db: Db) => Promise<unknown>;
  switch (cmd) {
    case 'org create': {
      const name = values.name?.trim();
      if (!name) throw new UsageError('--name NAME is required');
      if (name.length > 255) throw new UsageError('--name must be at most 255 characters');
      const balance = num('balance-usd', values['balance-usd'], { min: 0 }) ?? 0;
      run = async (db) => {
        const org = await createOrganization(db, { name, balanceUsd: balance });
        const { key } = await createApiKey(db, org.id, 'default');
        return { organizationId: org.id, apiKey: key };
      };
      break;
    }
    case 'org list':
      run = async (db) => (await listOrganizations(db)).map((o) => ({
        organizationId: o.id, name: o.name, balanceUsd: o.balance_usd, concurrencyLimit: o.concurrency_limit,
        ratePerMinute: o.rate_per_minute, monthlyMinutesQuota: o.monthly_minutes_quota, monthlyCallsQuota: o.monthly_calls_quota,
        walletStatus: o.wallet_status, walletStatusReason: o.wallet_status_reason, createdAt: o.created_at,
      }));
      break;
    case 'org limits': {
      const id = orgId(values.org);
      const limits = {
        concurrency: num('concurrency', values.concurrency, { int: true, min: 1, nullable: true }),
        ratePerMinute: num('rate-per-minute', values['rate-per-minute'], { int: true, min: 1, nullable: true }),
        monthlyMinutes: num('monthly-minutes', values['monthly-minutes'], { int: true, min: 0, nullable: true }),
        monthlyCalls: num('monthly-calls', values['monthly-calls'], { int: true, min: 0, nullable: true }),
      };
      run = async (db) => {
        const org = await setOrganizationLimits(db, id, limits);
        if (!org) throw new UsageError(`organization ${id} not found`);
        return {
          organizationId: org.id, concurrencyLimit: org.concurrency_limit, ratePerMinute: org.rate_per_minute,
          monthlyMinutesQuota: org.monthly_minutes_quota, monthlyCallsQuota: org.monthly_calls_quota,
        };
      };
      break;
    }
    case 'wallet credit': {
      const id = orgId(values.org);
      const usd = num('usd', values.usd);
      if (usd === undefined || usd === null) throw new UsageError('--usd N is required');
      if (usd === 0) throw new UsageError('--usd must not be 0');
      run = async (db) => {
        const balance = await creditWallet(db, id, usd);
        if (balance === null) throw new UsageError(`organization ${id} not found`);
        return { organizationId: id, balanceUsd: balance };
      };
      break;
    }
    case 'wallet suspend':
    case 'wallet resume': {
      const id = orgId(values.org);
      const suspend = action === 'suspend';
      const reason = values.reason?.trim() || null;
      if (!suspend && values.reason !== undefined) throw new UsageError('--reason is for wallet suspend');
      if (reason && reason.length > 500) throw new UsageError('--reason must be at most 500 characters');
      run = async (db) => {
        const org = await setWalletStatus(db, id, suspend ? 'suspended' : 'active', reason);
        if (!org) throw new UsageError(`organization ${id} not found`);
        return { organizationId: id, walletStatus: org.wallet_status, walletStatusReason: org.wallet_status_reason };
      };
      break;
    }
    case 'key create': {
      const name = values.name?.trim();
      if (!name) throw new UsageError('--name NAME is required');
      const id = values.org === undefined ? null : orgId(values.org);
      run = async (db) => {
        if (id && !(await getOrganization(db, id))) throw new UsageError(`organization ${id} not found`);
        const { row, key } = await createApiKey(db, id, name);
        return { id: row.id, organizationId: id, name: row.name, keyPrefix: row.key_prefix, apiKey: key };
      };
      break;
    }
    default:
      throw new UsageError(cmd ? `unknown command '${cmd}'` : 'no command given');
  }
  const { db, url, pg } = await openDb();
  try {
    await migrate(url);
    return await run(db);
  } finally {
    await db.end();
    await pg?.stop();
  }
}

try {
  const out = await main(process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
} catch (err) {
  if (err instanceof UsageError || err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`admin: ${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`admin: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
