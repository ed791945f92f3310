// The combined api + media process that `npm start` runs.
import { applyPacingCpu } from '../core/affinity.ts';
import { applyMediaPriority } from '../core/priority.ts';
import { loadConfigOrExit } from '../core/config.ts';
import { createLogger } from '../core/logger.ts';
import { initTracing } from '../core/tracing.ts';
import { onShutdown, openDatabase, openTemporal } from '../core/boot.ts';
import { startCombined } from './server.ts';
import { startMissedPostCallSweeper } from '../core/calls/missed-post-call.ts';
import { startStalledDocumentSweeper } from '../api/stalled-documents.ts';

const config = loadConfigOrExit();
const logger = createLogger({ level: config.LOG_LEVEL, name: 'server' });
await initTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME ?? 'voice-agent' });
const db = await openDatabase(config, logger);
const temporal = await openTemporal(config, logger);
applyMediaPriority(config, logger);
await applyPacingCpu(config, logger);
const combined = await startCombined({ config, db, logger, temporal, media: { waitForEngines: true } });
logger.info({ port: combined.running.port, baseUrl: config.baseUrl }, 'api + media listening');
// work a killed process registered but never handed to Temporal (api/main.ts runs the same sweeps)
const missedSweeper = startMissedPostCallSweeper({ config, db, logger, temporal: temporal?.client ?? null });
const documentSweeper = startStalledDocumentSweeper({ config, db, logger, temporal: temporal?.client ?? null });
onShutdown(logger, async () => {
  await missedSweeper.stop();
  await documentSweeper.stop();
  await combined.close();
  await temporal?.close();
  await db.end();
});
