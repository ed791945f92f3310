// Composition root of the default install: api + media on ONE port (REST, audio WebSocket, local {cdn_url}
// files). Used by `npm start` and by the test suite. Production runs api/main.ts and media/main.ts
// as separate processes instead.
import { createApiApp } from '../api/app.ts';
import type { ApiDeps } from '../api/deps.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import { startServer, type RunningServer } from '../core/http-server.ts';
import type { Logger } from '../core/logger.ts';
import type { TemporalHandle } from '../core/temporal.ts';
import { createStorage, type Storage } from '../core/storage/index.ts';
import { createMediaService, type MediaService } from '../media/server.ts';
import type { MediaDeps } from '../media/deps.ts';
import { startExpirySweeper } from '../core/calls/expiry.ts';
import { startStalePhoneCallSweeper } from '../core/telephony/ended.ts';

export interface Combined {
  running: RunningServer;
  media: MediaService;
  setDraining(d: boolean): void;
  close(): Promise<void>;
}

export async function startCombined(
  parts: { config: Config; db: Db; logger: Logger; temporal: TemporalHandle | null; storage?: Storage; media?: Partial<MediaDeps> },
  port = parts.config.PORT,
  host = parts.config.HOST,
): Promise<Combined> {
  const storage = parts.storage ?? createStorage(parts.config);
  const deps: ApiDeps = {
    config: parts.config,
    db: parts.db,
    logger: parts.logger,
    storage,
    temporal: parts.temporal?.client ?? null,
    checkTemporal: () => (parts.temporal ? parts.temporal.check() : Promise.resolve(false)),
  };
  const api = createApiApp(deps);
  const media = createMediaService({ config: parts.config, db: parts.db, logger: parts.logger, storage, temporal: deps.temporal, ...parts.media });
  const running = await startServer({ http: media.http, upgrade: media.upgrade, fallback: api.app.callback() }, port, host);
  const sweeper = startExpirySweeper({ config: parts.config, db: parts.db, logger: parts.logger, temporal: deps.temporal }); // abandoned pending calls
  const phoneSweeper = startStalePhoneCallSweeper({ config: parts.config, db: parts.db, logger: parts.logger, temporal: deps.temporal }); // phone calls no carrier ended
  return {
    running,
    media,
    setDraining: api.setDraining,
    async close() {
      api.setDraining(true);
      await sweeper.stop();
      await phoneSweeper.stop();
      await media.drain(parts.config.SHUTDOWN_GRACE_MS);
      await running.close(parts.config.SHUTDOWN_GRACE_MS);
      await media.close();
    },
  };
}
