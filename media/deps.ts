// What the media process needs, built once at boot by its entry point (or a test).
import type { Client as TemporalClient } from '@temporalio/client';
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';
import type { Engines } from './services/types.ts';
import type { Vad } from './pipeline/input-stages.ts';
import type { CallConfig } from './session/config.ts';
import type { FrameClock } from './pipeline/clock.ts';

/** Builds one call's engines + VAD. Tests and benchmarks pass scripted fakes; production uses media/services. */
export type EngineFactory = (ctx: { callId: string; config: CallConfig; appConfig: Config }) => Promise<{ engines: Engines; vad: Vad }>;

export interface MediaDeps {
  config: Config;
  db: Db;
  logger: Logger;
  /** Recordings go to spool/recordings/<callId>.wav for the post-call workflow (core/storage). */
  storage: Storage;
  /** null in tests that run without Temporal: the post-call hand-off is then skipped with a warning. */
  temporal: TemporalClient | null;
  /** Override the engine factory (tests, bench). Default: media/services createEngines + media/vad createVad. */
  engines?: EngineFactory;
  /** Override the pacing clock (bench). */
  clock?: FrameClock;
  /** Caller audio without any transcript for this long counts as silence (hold music). Default 30 s. */
  holdMusicMs?: number;
  /**
   * Take no new calls until the neural local engines have loaded (the process entry points, media/main.ts and
   * scripts/server-main.ts, set it); without it the node takes calls at once (test servers, the demo).
   */
  waitForEngines?: boolean;
}
