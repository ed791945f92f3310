// Boots the real api + media on one ephemeral port against a fresh database (and the suite's Temporal server).
import { loadConfig, type Config } from '../../core/config.ts';
import type { Db } from '../../core/db/pool.ts';
import { createLogger, type Logger } from '../../core/logger.ts';
import { createApiKey, createOrganization, creditWallet, setOrganizationLimits } from '../../core/orgs.ts';
import { connectTemporal, type TemporalHandle } from '../../core/temporal.ts';
import { startCombined, type Combined } from '../../scripts/server.ts';
import { createStorage, type Storage } from '../../core/storage/index.ts';
import type { MediaDeps } from '../../media/deps.ts';
import { createTestDb } from './db.ts';
import { freePort } from '../../scripts/infra.ts';
import { tempDir } from './tmp.ts';

export interface TestServer {
  baseUrl: string;
  /** http://127.0.0.1:port (no /api/v1) */
  origin: string;
  db: Db;
  config: Config;
  temporal: TemporalHandle | null;
  /** The same storage the api and media use (local dir under the test's DATA_DIR unless S3_BUCKET is given). */
  storage: Storage;
  combined: Combined;
  createOrg(opts?: { name?: string; balanceUsd?: number; concurrency?: number; ratePerMinute?: number; monthlyMinutes?: number; monthlyCalls?: number }): Promise<{ orgId: string; apiKey: string }>;
  /** fetch against baseUrl with the key header set; returns status and parsed JSON. */
  request(method: string, pathname: string, opts?: { key?: string | null; body?: unknown; headers?: Record<string, string>; raw?: string }): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTestServer(opts: { env?: Record<string, string>; temporal?: boolean; media?: Partial<MediaDeps>; logger?: Logger } = {}): Promise<TestServer> {
  const { db, url } = await createTestDb();
  const dataDir = tempDir('vas-data-');
  const baseEnv = {
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    DATABASE_URL: url,
    DATA_DIR: dataDir,
    SIGNING_SECRET: 'test-signing-secret-0123456789',
    // room for every call a test creates (many are never joined and hold their room until they expire): a test of
    // capacity sets its own MEDIA_MAX_CALLS
    MEDIA_MAX_CALLS: '10000',
    ...(opts.temporal === false ? {} : { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS ?? '' }),
    ...opts.env,
  };
  const port = await freePort();
  const config = loadConfig({ ...baseEnv, PORT: String(port), PUBLIC_URL: opts.env?.PUBLIC_URL ?? `http://127.0.0.1:${port}` });
  const temporal = opts.temporal === false || !config.TEMPORAL_ADDRESS ? null : await connectTemporal(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE);
  const logger = opts.logger ?? createLogger({ level: config.LOG_LEVEL, name: 'test' });
  const storage = createStorage(config);
  const combined = await startCombined({ config, db, logger, temporal, storage, ...(opts.media ? { media: opts.media } : {}) }, port, '127.0.0.1');
  const origin = `http://127.0.0.1:${port}`;
  const baseUrl = `${origin}/api/v1`;
  let defaultKey: string | null = null;

  const server: TestServer = {
    baseUrl,
    origin,
    db,
    config,
    temporal,
    storage,
    combined,
    async createOrg(o = {}) {
      const org = await createOrganization(db, { name: o.name ?? 'Test org', balanceUsd: o.balanceUsd ?? 100 });
      if (o.concurrency !== undefined || o.ratePerMinute !== undefined || o.monthlyMinutes !== undefined || o.monthlyCalls !== undefined) {
        await setOrganizationLimits(db, org.id, { concurrency: o.concurrency, ratePerMinute: o.ratePerMinute, monthlyMinutes: o.monthlyMinutes, monthlyCalls: o.monthlyCalls });
      }
      const { key } = await createApiKey(db, org.id, 'test');
      defaultKey ??= key;
      return { orgId: org.id, apiKey: key };
    },
    async request(method, pathname, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const key = o.key === undefined ? defaultKey : o.key;
      if (key) headers['x-api-key'] = key;
      let body: string | undefined;
      if (o.raw !== undefined) body = o.raw;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
      const res = await fetch(pathname.startsWith('http') ? pathname : `${baseUrl}${pathname}`, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      await combined.close();
      await temporal?.close();
      await db.end();
    },
  };
  return server;
}

export { creditWallet };
