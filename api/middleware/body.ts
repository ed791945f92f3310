// JSON and form-encoded bodies: read the raw bytes (kept in ctx.state.rawBody for signature checks), parse, and
// answer malformed JSON with a clear 400. The input guard (guard.ts) checks what is parsed here. Form fields
// (carrier callbacks) go to ctx.state.form; multipart bodies are streamed by their routes (multipart.ts).
import type { Middleware } from 'koa';
import { HttpError } from '../../core/http-error.ts';

const MAX_JSON_BYTES = 2 * 1024 * 1024;
const CALL_STARTS = /^\/api\/v1\/(?:call|agents\/[^/]+\/test-call)\/?$/;
/** Carrier callbacks are a few hundred bytes; 64 KB leaves room for long SIP headers and still bounds memory. */
export const MAX_FORM_BYTES = 64 * 1024;

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
    } else if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) && ctx.is('application/x-www-form-urlencoded')) {
      const raw = await readRaw(ctx.req, MAX_FORM_BYTES);
      ctx.state.rawBody = raw;
      const form: Record<string, string[]> = Object.create(null); // keys like 'constructor' are field names here
      for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) (form[k] ??= []).push(v);
      ctx.state.form = form;
    }
    await next();
  };
}

/** The raw form-encoded body a route needs (signature checks), read once by the body middleware. */
export async function rawFormBody(ctx: { state: { rawBody?: Buffer }; req: NodeJS.ReadableStream }): Promise<Buffer> {
  return ctx.state.rawBody ?? readRaw(ctx.req, MAX_FORM_BYTES);
}

declare module 'koa' {
  interface Request {
    body?: unknown;
  }
  interface DefaultState {
    /** Form-encoded body fields (every value of each name), set by the body middleware. */
    form?: Record<string, string[]>;
  }
}
