// Activities get their dependencies from this factory so tests can pass fakes (design.md, Temporal rules).
import type { Config } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';
import { createPostCallActivities } from './post-call.ts';
import { createAnalysisActivities, type AnalysisDeps } from './analysis.ts';
import { createTransferRecordingActivities } from './transfer-recording.ts';
import { createIngestionActivities } from './ingestion.ts';
import { createCampaignActivities, outboundDialer, type Dialer } from './campaign.ts';
import { createAgentTestActivities, type AgentTestDeps } from './agent-test.ts';

export interface ActivityDeps {
  config: Config;
  db: Db;
  logger: Logger;
  storage: Storage;
  /** Campaign dials; default: core/telephony placeOutboundCall. */
  dialer?: Dialer;
  /** The post-call analysis LLM; default: the live pipeline's adapter (media/services/llm/factory.ts). */
  createLlm?: AnalysisDeps['createLlm'];
  /** Agent tests: engine factories of the simulated caller and the judge, conversation timing (tests). */
  agentTests?: Pick<AgentTestDeps, 'engines' | 'timing'>;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createPostCallActivities(deps),
    ...createAnalysisActivities(deps),
    ...createTransferRecordingActivities(deps),
    ...createIngestionActivities(deps),
    ...createCampaignActivities({ ...deps, dialer: deps.dialer ?? outboundDialer({ db: deps.db, config: deps.config, logger: deps.logger, temporal: null }) }),
    ...createAgentTestActivities({ config: deps.config, db: deps.db, logger: deps.logger, ...deps.agentTests }),
  };
}
export type Activities = ReturnType<typeof createActivities>;
