// OpenAPI path items of the console read models (api/routes/console.ts).
import { registerOpenApiPaths } from './document.ts';
import { bool, err, int, nullable, num, ok, page, str, ts } from './parts.ts';


const webhookDelivery = {
  type: 'object',
  description: 'One lifecycle webhook POST for the call: single attempt, never retried (spec "Lifecycle webhooks").',
  properties: {
    event: { ...str, description: 'call.started, call.ended, call.completed, call.transfer_recording.completed/failed' },
    ok: { ...bool, description: 'true when the target answered 2xx' },
    status: { ...nullable(int), description: 'HTTP status the target answered; null when no answer (timeout, refused, blocked)' },
    error: { ...nullable(str), description: "why it failed: 'HTTP 500', 'timeout after 10000 ms', the connection error; null when ok" },
    durationMs: nullable(num),
    url: { ...nullable(str), description: 'target as scheme://host/path (query string dropped: it may carry tokens); null on rows stored before it was recorded' },
    at: { ...nullable(ts), description: 'when the result was recorded' },
  },
  required: ['event', 'ok', 'status', 'error', 'durationMs', 'url', 'at'],
};

const progress = {
  type: 'object',
  properties: {
    campaign_id: int,
    state: { type: 'string', enum: ['created', 'syncing', 'running', 'paused', 'completed', 'failed'] },
    contacts: {
      type: 'object',
      description: 'Imported contacts by status: queued (never dialed), dialing, retry (waiting for its next attempt), done',
      properties: { total: int, queued: int, dialing: int, retry: int, done: int },
    },
    total_rows: nullable(int),
    processed_rows: int,
    failed_rows: int,
    retries_due: { ...int, description: 'contacts whose next attempt time has come (dialed as capacity and the schedule allow)' },
    retries_waiting: { ...int, description: 'contacts waiting for a later retry' },
    next_retry_at: nullable(ts),
    in_flight: { ...nullable(int), description: "calls in flight per the workflow; null when the workflow isn't live or didn't answer in 3 s" },
    circuit_breaker: {
      type: 'object',
      description: 'The campaign circuit_breaker settings plus its state: tripped while the campaign is paused by the breaker',
      properties: {
        enabled: bool, failure_threshold: num, window_seconds: int, min_calls_in_window: int,
        state: { type: 'string', enum: ['closed', 'tripped', 'disabled'] },
        tripped_at: nullable(ts),
        message: nullable(str),
        calls_in_window: { ...nullable(int), description: 'finished calls in the rolling window (live workflow only)' },
        failures_in_window: nullable(int),
      },
    },
    workflow: {
      type: 'object',
      properties: {
        workflow_id: str,
        namespace: str,
        live: { ...bool, description: 'the workflow answered its progress query' },
        temporal_ui_url: { ...str, description: 'the workflow in the Temporal Web UI (TEMPORAL_UI_URL)' },
      },
    },
  },
};

registerOpenApiPaths({
  '/calls/{callId}/webhook-deliveries': {
    get: {
      tags: ['Calls'],
      summary: "The call's lifecycle webhook deliveries and their results, oldest first",
      description: 'Every sender (media, the post-call worker, carrier callbacks, the expiry sweeper) stores its result on the call row; the same entries are `logs.webhooks` of `GET /calls/{callId}`.',
      parameters: [{ name: 'callId', in: 'path', required: true, schema: str }, ...page],
      responses: {
        200: ok({ type: 'object', properties: { items: { type: 'array', items: webhookDelivery }, total: int, page: int, perPage: int, totalPages: int } }),
        404: err("'Call not found'"),
        422: err('out-of-range page/per_page'),
      },
    },
  },
  '/campaign/{id}/progress': {
    get: {
      tags: ['Campaigns'],
      summary: 'Progress of a campaign: contacts by status, retries due, circuit-breaker state, its workflow in the Temporal Web UI',
      parameters: [{ name: 'id', in: 'path', required: true, schema: int }],
      responses: { 200: ok(progress), 404: err("'Campaign not found'") },
    },
  },
});
