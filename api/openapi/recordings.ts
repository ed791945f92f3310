// OpenAPI path items of the audio-recordings store (POST/GET/DELETE /recordings, api/routes/recordings.ts).
import { MAX_RECORDING_SECONDS, RECORDING_FORMATS } from '../../core/recordings/decode.ts';
import { MAX_NAME_CHARS } from '../../core/recordings/store.ts';
import { registerOpenApiPaths } from './document.ts';
import { err, int, nullable, ok, str, ts } from './parts.ts';

const tags = ['Audio recordings'];
const id = [{ name: 'recording_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }];

const created = {
  type: 'object',
  properties: {
    recording_id: { type: 'string', format: 'uuid' },
    name: str,
    duration_seconds: { type: 'number', description: 'Length of the audio, 2 decimals' },
    format: { enum: [...RECORDING_FORMATS], description: 'Container of the uploaded file (wav, mp3, ogg = Ogg/Opus, webm = WebM/Opus)' },
    created_at: ts,
  },
  required: ['recording_id', 'name', 'duration_seconds', 'format', 'created_at'],
};
const recording = {
  ...created,
  properties: {
    ...created.properties,
    status: { enum: ['active', 'archived'], description: 'archived: still played by the agents and tools that referenced it before; new references are refused' },
    archived_at: nullable(ts),
    sample_rate: { ...int, description: 'Rate of the stored audio (always 24000: mono 16-bit PCM WAV)' },
    url: { ...str, description: 'The stored audio (WAV) in {cdn_url}' },
  },
  required: [...created.required, 'status', 'archived_at', 'sample_rate', 'url'],
};

registerOpenApiPaths({
  '/recordings': {
    post: {
      tags,
      summary: 'Upload an audio recording for endCall / transferCall / function-tool audio messages',
      description:
        `multipart/form-data: \`file\` (WAV, MP3, OGG/Opus or WebM/Opus, recognised from the bytes; at most 10 MB and ${MAX_RECORDING_SECONDS} s of audio) ` +
        `and optional \`name\` (1..${MAX_NAME_CHARS} characters; default: the file name without its extension). The audio is decoded once and stored ` +
        'as 24 kHz mono 16-bit PCM, the rate calls play it at. Reference it from an agent or saved tool by `recording_id` ' +
        '(`audioRecordingId`, `customMessageRecordingId`). A refused upload stores nothing.',
      requestBody: {
        required: true,
        content: { 'multipart/form-data': { schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' }, name: { type: 'string', maxLength: MAX_NAME_CHARS } }, required: ['file'] } } },
      },
      responses: {
        201: ok(created, 'Stored'),
        400: err("'Unsupported audio format …', 'The audio file could not be decoded …', 'File exceeds maximum size of 10MB', 'Audio exceeds maximum duration of 120 seconds', missing file, bad name"),
        500: err("'Failed to upload recording to storage'"),
      },
    },
    get: {
      tags,
      summary: 'List audio recordings (newest first)',
      parameters: [
        { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
        { name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
        { name: 'status', in: 'query', schema: { enum: ['active', 'archived', 'all'], default: 'active' } },
      ],
      responses: {
        200: ok({ type: 'object', properties: { items: { type: 'array', items: recording }, total: int, page: int, perPage: int, totalPages: int }, required: ['items', 'total', 'page', 'perPage', 'totalPages'] }),
        422: err('Invalid query parameters'),
      },
    },
  },
  '/recordings/{recording_id}': {
    get: { tags, summary: 'One audio recording: metadata and the audio url', parameters: id, responses: { 200: ok(recording), 404: err("'Recording not found'") } },
    delete: {
      tags,
      summary: 'Archive an audio recording (idempotent)',
      description: 'Agents and tools that already reference it keep playing it; new references are refused. The audio stays in storage.',
      parameters: id,
      responses: { 200: ok(recording), 404: err("'Recording not found'") },
    },
  },
});
