// The media process alone (production shape): owns live audio connections; DATABASE_URL and TEMPORAL_ADDRESS from env.
import { applyPacingCpu } from '../core/affinity.ts';
import { applyMediaPriority } from '../core/priority.ts';
import { loadConfigOrExit } from '../core/config.ts';
import { createLogger } from '../core/logger.ts';
import { initTracing } from '../core/tracing.ts';
import { onShutdown, openDatabase, openTemporal } from '../core/boot.ts';
import { startServer } from '../core/http-server.ts';
import { registry } from '../core/metrics.ts';
import { createMediaService } from './server.ts';
import { createStorage } from '../core/storage/index.ts';

const config = loadConfigOrExit();
const logger = createLogger({ level: config.LOG_LEVEL, name: 'media' });
await initTracing({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: config.OTEL_SERVICE_NAME ?? 'voice-agent-media' });
const db = await openDatabase(config, logger);
const temporal = await openTemporal(config, logger);
applyMediaPriority(config, logger);
await applyPacingCpu(config, logger);
const media = createMediaService({ config, db, logger, storage: createStorage(config), temporal: temporal?.client ?? null, waitForEngines: true });
let draining = false;
const running = await startServer(
  {
    http: media.http,
    upgrade: media.upgrade,
    fallback: (req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else if (req.url === '/readyz') {
        // loading its engines or at capacity the node is not ready for new calls (a proxy's health check routes
        // joins elsewhere)
        const load = media.load();
        const full = !load.accepting;
        const status = draining ? 'draining' : load.warming ? 'warming' : full ? 'at_capacity' : 'ready';
        res.writeHead(status === 'ready' ? 200 : 503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status, activeCalls: load.activeCalls, weightedLoad: load.weightedLoad, capacity: load.capacity, eventLoopLagMs: load.loopLagMs }));
      } else if (req.url === '/metrics') {
        registry.metrics().then((m) => res.writeHead(200, { 'content-type': registry.contentType }).end(m));
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
      }
    },
  },
  config.PORT,
  config.HOST,
);
logger.info({ port: running.port }, 'media listening');
onShutdown(logger, async () => {
  draining = true;
  await media.drain(config.SHUTDOWN_GRACE_MS);
  await running.close(config.SHUTDOWN_GRACE_MS);
  await media.close();
  await temporal?.close();
  await db.end();
});
