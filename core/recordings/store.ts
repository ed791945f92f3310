// The audio-recordings store (POST/GET/DELETE /recordings): rows in audio_recordings, the audio in storage as a
// 24 kHz mono s16 WAV at `audio-messages/<recording_id>.wav` (served at {cdn_url} like call recordings). Every query
// filters by organization. Archiving keeps the row and the audio: agents and tools that already reference a
// recording keep playing it; new references are refused (referenceProblems).
import { z } from 'zod';
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../db/pool.ts';
import type { Storage } from '../storage/index.ts';
import { parseWavHeader, wavHeader } from '../audio/wav.ts';
import { RECORDING_FORMATS, RECORDING_RATE } from './decode.ts';

export const RECORDING_NOT_FOUND = 'Recording not found';
export const RECORDING_PREFIX = 'audio-messages/';
export const MAX_NAME_CHARS = 255;

export const recordingKey = (id: string) => `${RECORDING_PREFIX}${id}.wav`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isRecordingId = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);

export const recordingRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  format: z.enum(RECORDING_FORMATS),
  duration_seconds: z.number(),
  original_name: z.string(),
  original_bytes: z.number(),
  storage_key: z.string(),
  status: z.enum(['active', 'archived']),
  created_at: z.string(),
  archived_at: z.string().nullable(),
});
export type RecordingRow = z.infer<typeof recordingRow>;

export const RECORDING_COLUMNS = sql.fragment`id::text AS id, organization_id::text AS organization_id, name, format, duration_seconds,
  original_name, original_bytes, storage_key, status, created_at, archived_at`;

/** The create response. */
export function recordingCreated(r: RecordingRow) {
  return { recording_id: r.id, name: r.name, duration_seconds: r.duration_seconds, format: r.format, created_at: r.created_at };
}

/** GET / list item: the create fields plus status and the audio's URL in {cdn_url}. */
export function recordingView(r: RecordingRow, storage: Pick<Storage, 'publicUrl'>) {
  return {
    ...recordingCreated(r),
    status: r.status,
    archived_at: r.archived_at,
    sample_rate: RECORDING_RATE,
    url: storage.publicUrl(r.storage_key),
  };
}

/** The stored audio file: a mono 16-bit WAV at the pipeline's rate. */
export function recordingWav(pcm: Int16Array): Buffer {
  const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  return Buffer.concat([wavHeader({ sampleRate: RECORDING_RATE, channels: 1, bitsPerSample: 16, dataBytes: data.length }), data]);
}

/** Samples of a stored recording WAV (as written by recordingWav). Throws on anything else. */
export function recordingSamples(wav: Buffer): Int16Array {
  const info = parseWavHeader(wav.subarray(0, Math.min(wav.length, 65_536)), wav.length);
  if (info.format !== 1 || info.channels !== 1 || info.bitsPerSample !== 16 || info.sampleRate !== RECORDING_RATE)
    throw new Error(`stored recording is not ${RECORDING_RATE} Hz mono s16 PCM`);
  const n = Math.floor(Math.min(info.dataBytes, wav.length - info.dataOffset) / 2);
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = wav.readInt16LE(info.dataOffset + 2 * i);
  return pcm;
}

export async function getRecording(db: CommonQueryMethods, orgId: string, id: string): Promise<RecordingRow | null> {
  if (!isRecordingId(id)) return null;
  return db.maybeOne(sql.type(recordingRow)`SELECT ${RECORDING_COLUMNS} FROM audio_recordings WHERE id = ${id} AND organization_id = ${orgId}`);
}

/** Rows by id for one organization (any status); absent ids are simply missing from the map. */
export async function recordingsById(db: CommonQueryMethods, orgId: string, ids: readonly string[]): Promise<Map<string, RecordingRow>> {
  const valid = [...new Set(ids.filter(isRecordingId).map((i) => i.toLowerCase()))];
  if (!valid.length) return new Map();
  const rows = await db.any(sql.type(recordingRow)`
    SELECT ${RECORDING_COLUMNS} FROM audio_recordings WHERE organization_id = ${orgId} AND id = ANY(${sql.array(valid, 'uuid')})`);
  return new Map(rows.map((r) => [r.id, r]));
}

export interface RecordingRef {
  id: string;
  path: (string | number)[];
}

/**
 * Validation of recording references (agent configs, saved tools): one problem per reference that names no
 * recording of this organization, or an archived one that is not among `alreadyReferenced` (what the stored
 * agent or tool already references keeps working, like archived saved tools).
 */
export async function referenceProblems(
  db: CommonQueryMethods,
  orgId: string,
  refs: readonly RecordingRef[],
  alreadyReferenced: readonly string[] = [],
): Promise<Array<RecordingRef & { msg: string }>> {
  if (!refs.length) return [];
  const rows = await recordingsById(db, orgId, refs.map((r) => r.id));
  const kept = new Set(alreadyReferenced.map((r) => r.toLowerCase()));
  const out: Array<RecordingRef & { msg: string }> = [];
  for (const ref of refs) {
    const row = rows.get(ref.id.toLowerCase());
    if (!row) out.push({ ...ref, msg: `Recording '${ref.id}' not found` });
    else if (row.status === 'archived' && !kept.has(row.id)) out.push({ ...ref, msg: `Recording '${ref.id}' is archived` });
  }
  return out;
}

const rec = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * The recording a tool plays, by the mode it selected (inline endCall, saved endCall/transferCall: `messageType`
 * 'audio' + `audioRecordingId`; saved function: `customMessageType` 'audio' + `customMessageRecordingId`), with its
 * path under `base` (the tool's `config`).
 */
export function toolRecordingRef(config: unknown, base: (string | number)[]): RecordingRef | null {
  if (!rec(config)) return null;
  if (config.messageType === 'audio' && typeof config.audioRecordingId === 'string' && config.audioRecordingId)
    return { id: config.audioRecordingId, path: [...base, 'audioRecordingId'] };
  if (config.customMessageType === 'audio' && typeof config.customMessageRecordingId === 'string' && config.customMessageRecordingId)
    return { id: config.customMessageRecordingId, path: [...base, 'customMessageRecordingId'] };
  return null;
}

/** The recordings an agent config's inline tools play (saved tools are validated as tools). */
export function agentRecordingRefs(config: unknown): RecordingRef[] {
  const tools = rec(config) && Array.isArray(config.tools) ? config.tools : [];
  const out: RecordingRef[] = [];
  tools.forEach((t, i) => {
    const ref = rec(t) ? toolRecordingRef(t.config, ['tools', i, 'config']) : null;
    if (ref) out.push(ref);
  });
  return out;
}

/** Audio of a stored recording, 24 kHz mono s16 (throws StorageNotFoundError when the object is gone). */
export async function loadRecordingAudio(storage: Pick<Storage, 'get'>, row: Pick<RecordingRow, 'storage_key'>): Promise<Int16Array> {
  return recordingSamples(await storage.get(row.storage_key));
}
