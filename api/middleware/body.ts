// JSON bodies: read the raw bytes (kept for signature checks), parse, and answer malformed JSON with a clear 400.
// Other content types (multipart, form-encoded carrier callbacks) are left to their routes.
import type { Middleware } from 'koa';
import { HttpError } from '../../core/http-error.ts';

const MAX_JSON_BYTES = 2 * 1024 * 1024;
const CALL_STARTS = /^\/api\/v1\/(?:call|agents\/[^/]+\/test-call)\/?$/;

export async function readRaw(req: NodeJS.ReadableStream & { headers?: Record<string, unknown> }, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > limit) throw new HttpError(413, `Request body exceeds ${limit} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

export function jsonBodyMiddleware(): Middleware {
  return async (ctx, next) => {
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) && ctx.is('application/json', '+json')) {
      const raw = await readRaw(ctx.req, MAX_JSON_BYTES);
      ctx.state.rawBody = raw;
      if (raw.length === 0) {
        (ctx.request as { body?: unknown }).body = undefined;
      } else {
        try {
          (ctx.request as { body?: unknown }).body = JSON.parse(raw.toString('utf8'));
        } catch (err) {
          const error = new HttpError(400, `Malformed JSON body: ${(err as Error).message}`);
          // A call start is refused by its route, after authentication, so that it leaves its rejected call row
          // like every other refusal (spec "Rejected calls"; api/routes/calls.ts).
          if (!CALL_STARTS.test(ctx.path)) throw error;
          ctx.state.malformedJson = error;
        }
      }
    }
    await next();
  };
}

declare module 'koa' {
  interface Request {
    body?: unknown;
  }
}
