// OpenAPI path items for the resources outside agents/tools (which document.ts documents itself): API keys,
// calls, usage, files, the knowledge base and the WebRTC signaling the media process serves. Request bodies come
// from the same zod schemas the routes validate with where a schema exists; response shapes follow the spec's
// tables.
import { z } from 'zod';
import { envelopeSchema } from '../../core/calls/request.ts';
import { registerOpenApiPaths } from './document.ts';
import { callDetailSchema } from './calls.ts';
import { err, int, nullable, num, ok, page, pageOf, str, ts } from './parts.ts';

const body = (schema: unknown) => ({ required: true, content: { 'application/json': { schema } } });
const q = (name: string, description: string, schema: object = str) => ({ name, in: 'query', description, schema });
const callEnvelope = z.toJSONSchema(envelopeSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
delete callEnvelope.$schema;
(callEnvelope.properties as Record<string, unknown>).agent = { $ref: '#/components/schemas/AgentConfig' };

const apiKey = { type: 'object', properties: { id: int, name: str, key_prefix: str, status: { enum: ['active', 'archived'] }, created_at: ts, archived_at: nullable(ts) } };
const callListItem = {
  type: 'object',
  properties: {
    callId: str, transport: { enum: ['outbound', 'inbound', 'webrtc', 'websocket', 'web'] }, pipelineSource: str,
    status: { enum: ['pending', 'active', 'completed', 'error'] }, connectionStatus: nullable(str), endedReason: nullable(str),
    agentId: nullable(str), agentName: nullable(str), campaignId: nullable(int), platformNumber: nullable(str),
    customerNumber: nullable(str), telephonyProvider: nullable(str), callSource: str, startedAt: nullable(ts),
    endedAt: nullable(ts), durationSeconds: nullable(num), createdAt: ts, cost: nullable(num), tags: { type: 'array', items: str },
  },
};
const usageSummary = {
  type: 'object',
  description: 'Usage of the organization over the half-open window [from, to) of call creation time.',
  properties: {
    from: { ...ts, description: 'Start of the window (inclusive)' },
    to: { ...ts, description: 'End of the window (exclusive)' },
    total_calls: { ...int, description: 'Calls created in the window, excluding attempts rejected before start (tag rejected)' },
    rejected_calls: { ...int, description: 'Attempts rejected before the pipeline started (validation and gates)' },
    connected_calls: { ...int, description: 'Calls with connectionStatus completed (answered / web client joined)' },
    billed_minutes: { ...int, description: 'Sum over calls of ceil(durationSeconds / 60): whole minutes rounded up per call' },
    total_duration_seconds: { ...num, description: 'Sum of active-call durations, 2 decimals' },
    average_duration_seconds: { ...num, description: 'total_duration_seconds / calls that have a duration; 0 if none' },
    spend_usd: { ...num, description: 'Sum of call cost (LLM + TTS + STT) in USD; carrier charges are not included' },
    success_rate: { ...num, description: 'Calls that connected and ended with status completed / total_calls (0..1); 0 when no calls' },
  },
};
const fileRecord = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' }, name: str, originalName: str, bytes: int, mimeType: str,
    status: { enum: ['pending', 'processing', 'completed', 'failed'] }, error: nullable(str),
    retrievalMode: { enum: ['chunked', 'full_document'] }, totalChunks: int, createdAt: ts, updatedAt: ts,
  },
};
// WebRTC signaling is served by the media process (media/webrtc/signaling.ts) on the same public origin.
const iceServers = {
  type: 'array',
  description: 'From WEBRTC_ICE_SERVERS; empty unless configured (no default STUN server)',
  items: { type: 'object', properties: { urls: { type: 'array', items: str }, username: str, credential: str }, required: ['urls'] },
};
const webrtcCallId = { name: 'call_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const webrtcAuthErrors = { 401: err("'Authorization header required' / 'Invalid or expired API key'"), 429: err("'Rate limit exceeded'") };
const webrtcBodyErrors = { 413: err("'Request body exceeds 262144 bytes'"), 422: err('Validation failed (array)') };
const iceCandidate = {
  anyOf: [
    { type: 'string', maxLength: 2000 },
    { type: 'object', properties: { candidate: { type: 'string', maxLength: 2000 }, sdpMid: nullable({ type: 'string', maxLength: 64 }), sdpMLineIndex: nullable({ type: 'integer', minimum: 0, maximum: 64 }), usernameFragment: nullable({ type: 'string', maxLength: 256 }) }, required: ['candidate'] },
    { type: 'null' },
  ],
};
const webrtcOffer = {
  post: {
    tags: ['WebRTC'], summary: 'SDP offer of a pending WebRTC call → SDP answer (claims the call); with the live peer\'s pc_id, renegotiates it',
    parameters: [webrtcCallId],
    requestBody: body({ type: 'object', properties: { sdp: { type: 'string', minLength: 1, maxLength: 200000 }, type: { const: 'offer' }, pc_id: nullable({ type: 'string', maxLength: 100 }) }, required: ['sdp', 'type'] }),
    responses: {
      200: ok({ type: 'object', properties: { sdp: str, type: { const: 'answer' }, pc_id: str, iceServers }, required: ['sdp', 'type', 'pc_id', 'iceServers'] }),
      ...webrtcBodyErrors, 400: err("Unusable offer SDP, 'A JSON body is required' or 'Malformed JSON body: …'"), ...webrtcAuthErrors,
      404: err("'Call not found' (another organization's call, not a WebRTC call, or not pending)"),
      409: err("'Duplicate offer: this call already has a peer connection (send its pc_id to renegotiate)'"), 503: err("'Server is draining' or 'Media node at capacity' (over MEDIA_MAX_CALLS; nothing is claimed, the call stays pending: retry, another node may take it)"),
    },
  },
  patch: {
    tags: ['WebRTC'], summary: 'Trickle ICE: remote candidate(s) for the call\'s peer',
    parameters: [webrtcCallId],
    requestBody: body({ type: 'object', properties: { candidate: { anyOf: [iceCandidate, { type: 'array', items: iceCandidate, maxItems: 100 }] }, pc_id: nullable({ type: 'string', maxLength: 100 }) }, required: ['candidate'] }),
    responses: {
      200: ok({ type: 'object', properties: { success: { const: true } }, required: ['success'] }),
      ...webrtcBodyErrors, 400: err("'Invalid ICE candidate', 'A JSON body is required' or 'Malformed JSON body: …'"), ...webrtcAuthErrors,
      404: err("'Call not found'"), 409: err("'No offer has been answered for this call yet: POST the offer first'"),
    },
  },
};
const usagePath = {
  get: {
    tags: ['Usage'], summary: 'Usage summary for [from, to)',
    parameters: [q('from', 'ISO 8601 start (inclusive)', ts), q('to', 'ISO 8601 end (exclusive)', ts), q('exclude_tag', 'Comma-separated tags: calls with any of them are left out (e.g. agent_test, the calls of agent-test runs)', str)],
    responses: { 200: ok(usageSummary), 422: err('Invalid window or exclude_tag (array)') },
  },
};

registerOpenApiPaths({
  '/user/api-keys': {
    post: { tags: ['API keys'], summary: 'Create an API key (the value is returned only here)', requestBody: body({ type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: 255 } }, required: ['name'] }), responses: { 200: ok({ type: 'object', properties: { id: int, name: str, key_prefix: str, api_key: str, created_at: ts } }), 422: err('Validation failed (array)') } },
    get: { tags: ['API keys'], summary: 'List API keys (never the key value)', parameters: page, responses: { 200: ok(pageOf(apiKey)) } },
  },
  '/user/api-keys/{api_key_id}': {
    delete: { tags: ['API keys'], summary: 'Revoke (archive) an API key', parameters: [{ name: 'api_key_id', in: 'path', required: true, schema: int }], responses: { 200: ok({ type: 'object', properties: { success: { type: 'boolean' }, message: str } }), 404: err("'API key not found'") } },
  },
  '/user/api-keys/{api_key_id}/reactivate': {
    put: { tags: ['API keys'], summary: 'Reactivate an archived key (its original value works again)', parameters: [{ name: 'api_key_id', in: 'path', required: true, schema: int }], responses: { 200: ok({ type: 'object', properties: { success: { type: 'boolean' }, message: str } }), 404: err("'API key not found'"), 500: err("'Failed to reactivate API key'") } },
  },
  '/call': {
    post: {
      tags: ['Calls'], summary: 'Create a call (WebSocket by default, WebRTC with transport=webrtc)',
      requestBody: body(callEnvelope),
      responses: {
        200: ok({ type: 'object', properties: { callId: str, audioUrl: str, transport: { const: 'websocket' }, status: { const: 'pending' } } }, 'WebSocket call created'),
        201: ok({ type: 'object', properties: { callId: str, offerUrl: str, transport: { const: 'webrtc' }, status: { const: 'pending' } } }, 'WebRTC call created (stored with transport and callSource webrtc, like test calls)'),
        400: err("Validation failed ({error, details}), a business rule (string), or a provider credential not set on this install (string, e.g. \"llm provider 'openai' needs OPENAI_API_KEY\")"), 402: err('Monthly quota (string) or insufficient balance (object)'),
        403: err('Other wallet reason'), 422: err('Model not in the catalog (string)'), 429: err('Concurrency gate (object) or request rate (string)'),
        501: err("A provider without an adapter on this install (string, e.g. \"stt provider 'deepgram' is not implemented on this install\"), or a telephony operation not available yet"),
        503: err("'All media nodes are at capacity; retry shortly' (every live media node is full)"),
      },
    },
  },
  '/calls': {
    get: {
      tags: ['Calls'], summary: 'Call history',
      parameters: [...page,
        q('sort_by', 'ended_at (default; NULLs last), created_at, duration_seconds, cost', { enum: ['ended_at', 'created_at', 'duration_seconds', 'cost'] }),
        q('sort_order', 'default desc', { enum: ['asc', 'desc'] }), q('call_id', 'exact match'), q('transport', 'csv of outbound, inbound, webrtc, websocket, web; web and webrtc each match every browser WebRTC call (POST /call transport=webrtc and test calls are stored as webrtc; older rows as web)'), q('status', 'csv'),
        q('connection_status', 'csv'), q('ended_reason', 'csv'), q('agent_id', 'agent UUID'), q('agent_name', 'case-insensitive substring of the name captured at creation'),
        q('tag', 'csv, any of (OR)'), q('campaign_id', 'int', int), q('phone_number', 'E.164; from or to'), q('telephony_provider', 'carrier id'),
        q('from_date', 'created_at >= (ISO 8601)', ts), q('to_date', 'created_at <= (ISO 8601)', ts), q('call_source', 'csv'),
        q('analysis_status', 'csv of completed, failed, skipped (the post-call analysis)'), q('success', 'true or false: the analysis verdict (passed, or a score of at least 6 under score_1_10)', { type: 'boolean' })],
      responses: { 200: ok(pageOf(callListItem)), 422: err('Invalid parameters (array)') },
    },
  },
  '/calls/{callId}': {
    get: { tags: ['Calls'], summary: 'One call with configSnapshot, logs (per-turn latency in logs.latency), transcript, recording, usage, summary', parameters: [{ name: 'callId', in: 'path', required: true, schema: str }], responses: { 200: ok(callDetailSchema(callListItem)), 404: err("'Call not found'") } },
  },
  '/agents/{agent_uuid}/test-call': {
    post: { tags: ['Calls'], summary: 'Dashboard test call for a saved agent (WebRTC)', parameters: [{ name: 'agent_uuid', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }], requestBody: { required: false, content: { 'application/json': { schema: { type: 'object', properties: { contextVariables: nullable({ type: 'object', additionalProperties: str }), telephonySim: { type: 'boolean', default: false } } } } } }, responses: { 200: ok({ type: 'object', properties: { callId: str, offerUrl: str, status: { const: 'pending' }, agentName: str } }), 400: err('A provider credential not set on this install (string naming the variable), or the resolved snapshot fails validation'), 402: err('Insufficient balance'), 403: err('Other wallet reason'), 404: err("'Agent not found'"), 422: err('Body failed validation (array); like every refusal it leaves a rejected call row (schema_validation)'), 501: err('A provider without an adapter on this install (string naming provider and family)'), 503: err("'All media nodes are at capacity; retry shortly' (every live media node is full)") } },
  },
  '/webrtc/offer/{call_id}': webrtcOffer,
  '/webrtc/ice-servers': {
    get: { tags: ['WebRTC'], summary: 'The ICE servers a browser should use', responses: { 200: ok({ type: 'object', properties: { iceServers }, required: ['iceServers'] }), ...webrtcAuthErrors } },
  },
  '/wallet/dashboard/usage-summary': usagePath,
  '/organizations/reports/usage-summary': usagePath,
  '/files': {
    post: { tags: ['Knowledge base'], summary: 'Upload a document (multipart: file, retrievalMode)', requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' }, retrievalMode: { enum: ['chunked', 'full_document'], default: 'chunked' } }, required: ['file'] } } } }, responses: { 201: ok(fileRecord), 400: err('Filename, retrievalMode, file type or size'), 500: err("'Failed to upload file to storage'") } },
    get: { tags: ['Knowledge base'], summary: 'List documents', parameters: page, responses: { 200: ok(pageOf(fileRecord)) } },
  },
  '/files/{file_id}': {
    get: { tags: ['Knowledge base'], summary: 'One document (poll its status)', parameters: [{ name: 'file_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }], responses: { 200: ok(fileRecord), 404: err("'File not found'") } },
    delete: { tags: ['Knowledge base'], summary: 'Delete a document and its chunks', parameters: [{ name: 'file_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }], responses: { 200: ok({ type: 'object' }), 404: err("'File not found'"), 409: err("Document '…' is used by the query tools of agent(s) '…' (uuid) [and saved tool(s) / inbound binding(s)]; nothing deleted") } },
  },
  '/knowledge-base/upload-url': {
    post: { tags: ['Knowledge base'], summary: 'Presigned PUT URL (30 minutes, max 100 MB)', requestBody: body({ type: 'object', properties: { filename: str, mime_type: str }, required: ['filename', 'mime_type'] }), responses: { 200: ok({ type: 'object', required: ['upload_url', 'document_uuid', 's3_key'], properties: { upload_url: str, document_uuid: str, s3_key: str, upload_form: { type: 'object', description: 'S3 storage only: the same upload as a presigned POST (multipart/form-data: every `fields` entry, then the file as the last part `file`) whose signed policy carries content-length-range 0..100 MB, so the bucket itself refuses a larger file. The PUT to upload_url stays valid; its size is checked at process-document.', properties: { url: str, fields: { type: 'object', additionalProperties: str } }, required: ['url', 'fields'] } } }), 500: err("'Failed to generate presigned upload URL'") } },
  },
  '/knowledge-base/process-document': {
    post: { tags: ['Knowledge base'], summary: 'Start ingestion of an uploaded document', requestBody: body({ type: 'object', properties: { document_uuid: str, s3_key: str, retrieval_mode: { enum: ['chunked', 'full_document'] } }, required: ['document_uuid', 's3_key'] }), responses: { 201: ok(fileRecord), 200: ok(fileRecord, 'Already registered') } },
  },
  '/knowledge-base/create-from-text': {
    post: { tags: ['Knowledge base'], summary: 'Create a document from text', requestBody: body({ type: 'object', properties: { name: str, text: str, retrieval_mode: { enum: ['chunked', 'full_document'] } }, required: ['text'] }), responses: { 201: ok(fileRecord) } },
  },
});
