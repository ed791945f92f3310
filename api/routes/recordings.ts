// Audio recordings: POST /recordings (multipart `file` + optional `name`), GET /recordings (list
// envelope), GET /recordings/{recording_id} (metadata + `url` in {cdn_url}), DELETE /recordings/{recording_id}
// (archive). The upload is decoded once (core/recordings/decode.ts), normalised to 24 kHz mono s16 and stored as a
// WAV; a refused upload stores nothing.
import { randomUUID } from 'node:crypto';
import type Router from '@koa/router';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { HttpError } from '../../core/http-error.ts';
import {
  AudioDecodeError,
  decodeOffThread,
  getRecording,
  isRecordingId,
  MAX_NAME_CHARS,
  MAX_RECORDING_BYTES,
  RECORDING_COLUMNS,
  RECORDING_NOT_FOUND,
  recordingCreated,
  recordingKey,
  recordingRow,
  recordingView,
  recordingWav,
  TOO_LARGE,
} from '../../core/recordings/index.ts';
import { requireOrg } from '../middleware/auth.ts';
import { parseOr422 } from '../parse.ts';
import { envelope, pageWindow, paginationQuery } from '../pagination.ts';
import { readMultipart, uploadedFileName } from '../middleware/multipart.ts';
import type { ApiDeps } from '../deps.ts';

/** Past this declared request size the upload is refused without reading it (the file part plus form overhead). */
const MAX_MULTIPART_REQUEST = MAX_RECORDING_BYTES + 1024 * 1024;

const listQuery = paginationQuery().extend({
  status: z.enum(['active', 'archived', 'all']).default('active'),
});

/** The display name: the `name` field, else the file's name without its extension. */
function recordingName(field: string | undefined, filename: string): string {
  if (field !== undefined) {
    const name = field.trim();
    if (!name) throw new HttpError(400, 'name must not be blank');
    if (name.length > MAX_NAME_CHARS) throw new HttpError(400, `name must be at most ${MAX_NAME_CHARS} characters`);
    if (name.includes('\u0000') || !name.isWellFormed()) throw new HttpError(400, 'name must be a valid string without NUL characters');
    return name;
  }
  const dot = filename.lastIndexOf('.');
  const stem = (dot > 0 ? filename.slice(0, dot) : filename).replace(/\u0000/g, '').toWellFormed().trim();
  return stem.slice(0, MAX_NAME_CHARS) || 'Recording';
}

export function recordingsRoutes(router: Router, deps: ApiDeps): void {
  const { db, storage } = deps;

  router.post('/recordings', async (ctx) => {
    const orgId = requireOrg(ctx);
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > MAX_MULTIPART_REQUEST) {
      ctx.set('Connection', 'close');
      throw new HttpError(400, TOO_LARGE);
    }
    const { file, fields } = await readMultipart(ctx, { fileField: 'file', maxFileBytes: MAX_RECORDING_BYTES });
    if (!file) throw new HttpError(400, "A multipart/form-data 'file' part with the audio is required");
    if (file.truncated || file.data.length > MAX_RECORDING_BYTES) throw new HttpError(400, TOO_LARGE);
    const filename = uploadedFileName(file);
    const name = recordingName(fields.name, filename);

    let decoded;
    try {
      decoded = await decodeOffThread(file.data);
    } catch (err) {
      if (err instanceof AudioDecodeError) throw new HttpError(400, err.message);
      throw err;
    }

    const id = randomUUID();
    const key = recordingKey(id);
    try {
      await storage.put(key, recordingWav(decoded.pcm), { contentType: 'audio/wav' });
    } catch (err) {
      ctx.state.log?.error({ err }, 'recording upload to storage failed');
      throw new HttpError(500, 'Failed to upload recording to storage');
    }
    try {
      const row = await db.one(sql.type(recordingRow)`
        INSERT INTO audio_recordings (id, organization_id, name, format, duration_seconds, original_name, original_bytes, storage_key)
        VALUES (${id}, ${orgId}, ${name}, ${decoded.format}, ${decoded.durationSeconds}, ${filename}, ${file.data.length}, ${key})
        RETURNING ${RECORDING_COLUMNS}`);
      ctx.status = 201;
      ctx.body = recordingCreated(row);
    } catch (err) {
      await storage.delete(key).catch(() => {}); // nothing stored for a refused upload
      throw err;
    }
  });

  router.get('/recordings', async (ctx) => {
    const orgId = requireOrg(ctx);
    const q = parseOr422(listQuery, ctx.query, 'query');
    const { limit, offset } = pageWindow(q);
    const where = sql.fragment`organization_id = ${orgId} ${q.status === 'all' ? sql.fragment`` : sql.fragment`AND status = ${q.status}`}`;
    const [rows, total] = await Promise.all([
      db.any(sql.type(recordingRow)`
        SELECT ${RECORDING_COLUMNS} FROM audio_recordings WHERE ${where} ORDER BY created_at DESC, id LIMIT ${limit} OFFSET ${offset}`),
      db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audio_recordings WHERE ${where}`),
    ]);
    ctx.body = envelope(rows.map((r) => recordingView(r, storage)), total, q);
  });

  router.get('/recordings/:recording_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const row = await getRecording(db, orgId, ctx.params.recording_id ?? '');
    if (!row) throw new HttpError(404, RECORDING_NOT_FOUND);
    ctx.body = recordingView(row, storage);
  });

  router.delete('/recordings/:recording_id', async (ctx) => {
    const orgId = requireOrg(ctx);
    const id = ctx.params.recording_id ?? '';
    if (!isRecordingId(id)) throw new HttpError(404, RECORDING_NOT_FOUND);
    // archive (idempotent): the audio stays in storage for the agents and tools that already play it
    const row = await db.maybeOne(sql.type(recordingRow)`
      UPDATE audio_recordings SET status = 'archived', archived_at = COALESCE(archived_at, now())
      WHERE id = ${id} AND organization_id = ${orgId} RETURNING ${RECORDING_COLUMNS}`);
    if (!row) throw new HttpError(404, RECORDING_NOT_FOUND);
    ctx.body = recordingView(row, storage);
  });
}
