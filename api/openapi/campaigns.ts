// OpenAPI path items of the campaign endpoints (api/routes/campaigns.ts). Request bodies
// come from the zod schemas the routes validate with.
import { z } from 'zod';
import { createCampaignBody, updateCampaignBody } from '../../core/campaigns/schemas.ts';
import { registerOpenApiPaths } from './document.ts';
import { err, int, nullable, ok, page, pageOf, str, ts } from './parts.ts';

const json = (schema: z.ZodType) => {
  const s = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete s.$schema;
  return s;
};
const body = (schema: unknown) => ({ required: true, content: { 'application/json': { schema } } });
const idParam = [{ name: 'id', in: 'path', required: true, schema: int }];
const logEntry = { type: 'object', properties: { ts, level: { enum: ['info', 'warning', 'error'] }, event: str, message: str, details: { type: 'object' } } };
const campaign = {
  type: 'object',
  properties: {
    id: int, name: str, state: { enum: ['created', 'syncing', 'running', 'paused', 'completed', 'failed'] }, agent_id: int, agent_name: str,
    source_type: { const: 'csv' }, source_id: str, telephony_configuration_id: int, telephony_configuration_name: nullable(str),
    total_rows: nullable(int), processed_rows: int, failed_rows: int, max_concurrency: int, retry_config: { type: 'object' },
    schedule_config: nullable({ type: 'object' }), circuit_breaker: { type: 'object' }, executed_count: int, total_queued_count: int,
    logs: { type: 'array', items: logEntry }, created_at: ts, started_at: nullable(ts), completed_at: nullable(ts),
  },
};
const transition = (what: string) => ({
  tags: ['Campaigns'], summary: what, parameters: idParam,
  responses: {
    200: ok(campaign), 400: err("Illegal transition: \"Cannot <action> a campaign in state '<state>'\""), 404: err("'Campaign not found'"),
    503: err("'Campaign dialing is unavailable: Temporal is not configured', or 'Temporal is temporarily unavailable: try again shortly' (the Temporal server is unreachable, e.g. restarting; nothing changed: retry)"),
  },
});

registerOpenApiPaths({
  '/campaign/create': {
    post: {
      tags: ['Campaigns'], summary: 'Create a campaign from a contact CSV (validated before anything is saved)', requestBody: body(json(createCampaignBody)),
      responses: {
        200: ok(campaign),
        400: err('CSV/source validation message; max_concurrency above the caller-number count or the organization limit; telephony_configuration_not_found'),
        404: err("'Agent not found'"), 409: err("'no telephony configuration available for organization'"), 422: err('Validation failed (array)'),
      },
    },
  },
  '/campaign': { get: { tags: ['Campaigns'], summary: 'List campaigns', parameters: page, responses: { 200: ok(pageOf(campaign)) } } },
  '/campaign/{id}': {
    get: { tags: ['Campaigns'], summary: 'Get a campaign', parameters: idParam, responses: { 200: ok(campaign), 404: err("'Campaign not found'") } },
    patch: {
      tags: ['Campaigns'], summary: 'Edit a campaign (applies at once to a running one)', parameters: idParam, requestBody: body(json(updateCampaignBody)),
      responses: { 200: ok(campaign), 400: err("'Cannot update a completed campaign'; max_concurrency limits"), 404: err("'Campaign not found'"), 422: err('Validation failed (array)') },
    },
  },
  '/campaign/{id}/start': { post: transition('Start dialing (created → syncing → running)') },
  '/campaign/{id}/pause': { post: transition('Pause (running → paused)') },
  '/campaign/{id}/resume': { post: transition('Resume (paused → running)') },
  '/campaign/{id}/calls': {
    get: { tags: ['Campaigns'], summary: "The campaign's call rows (the GET /calls item shape and filters)", parameters: [...idParam, ...page], responses: { 200: ok(pageOf({ type: 'object' })), 404: err("'Campaign not found'") } },
  },
  '/campaign/{id}/report': {
    get: {
      tags: ['Campaigns'], summary: 'CSV report: one line per contact (attempts, last status, ended reason, duration)', parameters: idParam,
      responses: { 200: { description: 'text/csv', content: { 'text/csv': { schema: str } } }, 404: err("'Campaign not found'") },
    },
  },
});
