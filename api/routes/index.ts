// Every resource module registers itself here: one module per resource, each a function of (router, deps).
import type Router from '@koa/router';
import type { ApiDeps } from '../deps.ts';
import { keysRoutes } from './keys.ts';
import { filesRoutes } from './files.ts';
import { knowledgeBaseRoutes } from './knowledge-base.ts';
import { usageRoutes } from './usage.ts';
import { callsRoutes } from './calls.ts';
import { agentsRoutes } from './agents.ts';
import { agentTestsRoutes } from './agent-tests.ts';
import { toolsRoutes } from './tools.ts';
import { credentialsRoutes } from './credentials.ts';
import { recordingsRoutes } from './recordings.ts';
import { catalogRoutes } from './catalog.ts';
import { campaignsRoutes } from './campaigns.ts';
import { telephonyConfigRoutes } from './telephony/configs.ts';
import { phoneNumberRoutes } from './telephony/numbers.ts';
import { inboundBindingRoutes } from './telephony/bindings.ts';
import { carrierWebhookRoutes } from './telephony/webhooks.ts';
import { consoleRoutes } from './console.ts';
import { openApiRoutes } from '../openapi/index.ts';

export const routeModules: Array<(router: Router, deps: ApiDeps) => void> = [
  keysRoutes,
  filesRoutes,
  knowledgeBaseRoutes,
  usageRoutes,
  callsRoutes,
  agentsRoutes,
  agentTestsRoutes,
  toolsRoutes,
  credentialsRoutes,
  recordingsRoutes,
  catalogRoutes,
  telephonyConfigRoutes,
  phoneNumberRoutes,
  inboundBindingRoutes,
  campaignsRoutes,
  consoleRoutes,
];

/** Modules served under /api/v1 WITHOUT an API key (registered before auth). */
export const publicRouteModules: Array<(router: Router, deps: ApiDeps) => void> = [
  openApiRoutes,
  carrierWebhookRoutes, // carrier callbacks: signature-verified, no API key, not rate limited
];
