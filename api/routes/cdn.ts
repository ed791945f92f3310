// Public (no API key) routes outside /api/v1 for the default local storage:
//   GET/HEAD /cdn/<key>         serves recordings/ and transcripts/ at {cdn_url} (byte ranges supported)
//   PUT      /cdn-upload/<key>  the local presigned upload: HMAC signature, expiry, content type and max bytes
// With S3 storage both answer 404: the bucket serves and accepts files itself.
import { createReadStream } from 'node:fs';
import type { Middleware } from 'koa';
import { HttpError } from '../../core/http-error.ts';
import {
  contentTypeFor,
  isValidKey,
  StorageNotFoundError,
  UploadTooLargeError,
  verifyLocalUpload,
  type LocalStorage,
} from '../../core/storage/index.ts';
import { localPath } from '../../core/storage/local.ts';
import type { ApiDeps } from '../deps.ts';

/**
 * Only what the spec publishes at {cdn_url} is served: call recordings, transcripts and the uploaded audio messages
 * (`GET /recordings/{id}` → url). Everything else in storage (spool/, knowledge-base documents/) stays private. With
 * S3, give the bucket's public policy the same prefixes.
 */
export const PUBLIC_PREFIXES = ['recordings/', 'transcripts/', 'audio-messages/'];

function keyFrom(path: string, prefix: string): string | null {
  let key: string;
  try {
    key = decodeURIComponent(path.slice(prefix.length));
  } catch {
    return null;
  }
  return isValidKey(key) ? key : null;
}

export function cdnRoutes(deps: ApiDeps): Middleware {
  return async (ctx, next) => {
    const isGet = ctx.path.startsWith('/cdn/') && (ctx.method === 'GET' || ctx.method === 'HEAD');
    const isPut = ctx.path.startsWith('/cdn-upload/');
    if (!isGet && !isPut) return next();
    if (deps.storage.kind !== 'local') throw new HttpError(404, 'Not Found');
    const storage = deps.storage as LocalStorage;

    if (isGet) {
      const key = keyFrom(ctx.path, '/cdn/');
      if (!key || !PUBLIC_PREFIXES.some((p) => key.startsWith(p))) throw new HttpError(404, 'File not found');
      const st = await storage.stat(key);
      if (!st) throw new HttpError(404, 'File not found');
      ctx.set('Accept-Ranges', 'bytes');
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.type = contentTypeFor(key);
      const range = /^bytes=(\d*)-(\d*)$/.exec(ctx.get('range'));
      if (range && (range[1] || range[2])) {
        let start = range[1] ? Number(range[1]) : st.bytes - Number(range[2]);
        let end = range[1] && range[2] ? Number(range[2]) : st.bytes - 1;
        start = Math.max(0, start);
        end = Math.min(end, st.bytes - 1);
        if (start > end || start >= st.bytes) {
          ctx.set('Content-Range', `bytes */${st.bytes}`);
          throw new HttpError(416, 'Requested range not satisfiable');
        }
        ctx.status = 206;
        ctx.set('Content-Range', `bytes ${start}-${end}/${st.bytes}`);
        ctx.length = end - start + 1;
        if (ctx.method === 'GET') {
          ctx.body = createReadStream(localPath(storage.root, key), { start, end });
        }
        return;
      }
      ctx.status = 200;
      ctx.length = st.bytes;
      if (ctx.method === 'GET') {
        try {
          ctx.body = await storage.getStream(key);
        } catch (err) {
          if (err instanceof StorageNotFoundError) throw new HttpError(404, 'File not found');
          throw err;
        }
      }
      return;
    }

    if (ctx.method !== 'PUT') throw new HttpError(405, 'Method Not Allowed');
    const key = keyFrom(ctx.path, '/cdn-upload/');
    if (!key) throw new HttpError(400, 'Invalid upload key');
    const check = verifyLocalUpload(deps.config, key, ctx.query, ctx.get('content-type') || undefined);
    if (!check.ok) throw new HttpError(check.status, check.detail);
    const declared = ctx.get('content-length');
    if (declared && Number(declared) > check.maxBytes) throw new HttpError(413, `Upload exceeds ${check.maxBytes} bytes`);
    try {
      const { bytes } = await storage.putLimited(key, ctx.req, check.maxBytes);
      ctx.status = 200;
      ctx.body = { key, bytes };
    } catch (err) {
      if (err instanceof UploadTooLargeError) {
        ctx.set('Connection', 'close');
        throw new HttpError(413, err.message);
      }
      throw err;
    }
  };
}
