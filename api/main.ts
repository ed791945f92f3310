// The api process alone (production shape): DATABASE_URL and TEMPORAL_ADDRESS from the environment.
import { loadConfigOrExit } from '../core/config.ts';
import { createLogger } from '../core/logger.ts';
import { initTracing } from '../core/tracing.ts';
import { onShutdown, openDatabase, openTemporal } from '../core/boot.ts';
import { startServer } from '../core/http-server.ts';
import { createApiApp } from './app.ts';
import { createStorage } from '../core/storage/index.ts';
import { startExpirySweeper } from '../core/calls/expiry.ts';
import { startStalePhoneCallSweeper } from '../core/telephony/ended.ts';
import { startOrphanSweeper } from '../core/calls/orphans.ts';
import { handOffPostCall } from '../core/calls/unconnected.ts';
import { startMissedPostCallSweeper } from '../core/calls/missed-post-call.ts';
import { startStalledDocumentSweeper } from './stalled-documents.ts';

const config = loadConfigOrExit();
const logger = createLogger({ level: config.LOG_LEVEL, name: 'api' });
await initTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME ?? 'voice-agent-api' });
const db = await openDatabase(config, logger);
const temporal = await openTemporal(config, logger);
const api = createApiApp({
  config,
  db,
  logger,
  storage: createStorage(config),
  temporal: temporal?.client ?? null,
  checkTemporal: () => (temporal ? temporal.check() : Promise.resolve(false)),
});
const running = await startServer({ http: [], upgrade: [], fallback: api.app.callback() }, config.PORT, config.HOST);
logger.info({ port: running.port, baseUrl: config.baseUrl }, 'api listening');
const sweeper = startExpirySweeper({ config, db, logger, temporal: temporal?.client ?? null }); // abandoned pending calls, safe on every replica
const phoneSweeper = startStalePhoneCallSweeper({ config, db, logger, temporal: temporal?.client ?? null }); // phone calls no carrier ended
// calls left active by a dead media node end even when no media node is left to reconcile them
const orphanSweeper = startOrphanSweeper({ config, db, logger, temporal: temporal?.client ?? null }, (row) =>
  handOffPostCall({ config, logger, temporal: temporal?.client ?? null }, row));
// work a killed process registered but never handed to Temporal: ended calls without post-call, pending documents
const missedSweeper = startMissedPostCallSweeper({ config, db, logger, temporal: temporal?.client ?? null });
const documentSweeper = startStalledDocumentSweeper({ config, db, logger, temporal: temporal?.client ?? null });
onShutdown(logger, async () => {
  api.setDraining(true);
  await sweeper.stop();
  await phoneSweeper.stop();
  await orphanSweeper.stop();
  await missedSweeper.stop();
  await documentSweeper.stop();
  await running.close(config.SHUTDOWN_GRACE_MS);
  await temporal?.close();
  await db.end();
});
