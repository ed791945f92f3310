// Each test file gets its own database cloned from the migrated template (real PostgreSQL, nothing mocked).
import { randomBytes } from 'node:crypto';
import { createDb, sql, type Db } from '../../core/db/pool.ts';

export function testDbUrl(name: string): string {
  const admin = process.env.TEST_PG_ADMIN_URL;
  if (!admin) throw new Error('TEST_PG_ADMIN_URL is not set: run the suite with `npm test`');
  return admin.replace(/\/[^/]*$/, `/${name}`);
}

// A loaded CI machine can take longer than the service's 10 s to open a connection while many test
// files start at once; the tests wait longer rather than fail on the machine's speed.
const TEST_CONNECT_TIMEOUT_MS = 60_000;

export async function createTestDb(): Promise<{ db: Db; url: string; name: string }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = await createDb(process.env.TEST_PG_ADMIN_URL!, { maximumPoolSize: 1, connectionTimeout: TEST_CONNECT_TIMEOUT_MS });
  try {
    await admin.query(sql.unsafe`CREATE DATABASE ${sql.identifier([name])} TEMPLATE ${sql.identifier([process.env.TEST_PG_TEMPLATE ?? 'vas_template'])}`);
  } finally {
    await admin.end();
  }
  const url = testDbUrl(name);
  return { db: await createDb(url, { maximumPoolSize: 20, connectionTimeout: TEST_CONNECT_TIMEOUT_MS }), url, name };
}
