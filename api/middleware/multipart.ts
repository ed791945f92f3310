// The one multipart reader (busboy) for routes that take uploads. Text fields and the file name go through the input
// guard (guard.ts) before the route sees them: a NUL or unpaired surrogate is refused with the same 422 naming the
// field as everywhere else. Routes read multipart through here, never through busboy directly (a test checks).
import busboy from 'busboy';
import type { ParameterizedContext } from 'koa';
import { HttpError } from '../../core/http-error.ts';
import { assertStorable } from './guard.ts';

export interface Multipart {
  file: { filename: string | undefined; data: Buffer; truncated: boolean } | null;
  fields: Record<string, string>;
}

/**
 * Streams a multipart body: keeps at most `maxFileBytes` + 1 bytes of the `fileField` part (the first one),
 * discards the rest. A request that is not multipart reads as no file and no fields.
 */
export async function readMultipart(ctx: ParameterizedContext, opts: { fileField: string; maxFileBytes: number }): Promise<Multipart> {
  const out = await new Promise<Multipart & { allFields: Record<string, string[]> }>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: ctx.req.headers,
        limits: { fileSize: opts.maxFileBytes + 1, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 40 },
        defParamCharset: 'utf8',
      });
    } catch {
      ctx.req.resume();
      resolve({ file: null, fields: {}, allFields: {} }); // not multipart: there is no file, so no filename
      return;
    }
    const out: Multipart & { allFields: Record<string, string[]> } = { file: null, fields: Object.create(null), allFields: Object.create(null) };
    let pendingFile: Promise<void> = Promise.resolve();
    bb.on('file', (name, stream, info) => {
      if (name !== opts.fileField || out.file) {
        stream.on('error', () => {});
        stream.resume();
        return;
      }
      const file = { filename: info.filename, data: Buffer.alloc(0), truncated: false };
      out.file = file;
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => { file.truncated = true; });
      // A body cut short errors the part's stream ('Unexpected end of form'): a 400, never an unlistened error
      // thrown out of the process, and never a wait for a 'close' that does not come.
      pendingFile = new Promise((res, rej) => {
        stream.on('error', (err: Error) => rej(new HttpError(400, `Malformed multipart body: ${err.message}`)));
        stream.on('close', () => {
          file.data = Buffer.concat(chunks);
          res();
        });
      });
      pendingFile.catch(() => {});
    });
    bb.on('field', (name, value) => {
      (out.allFields[name] ??= []).push(value);
      if (!(name in out.fields)) out.fields[name] = value;
    });
    bb.on('error', (err: Error) => {
      ctx.req.unpipe(bb);
      ctx.req.resume();
      reject(new HttpError(400, `Malformed multipart body: ${err.message}`));
    });
    bb.on('close', () => { pendingFile.then(() => resolve(out), reject); });
    ctx.req.pipe(bb);
  });
  const { allFields, ...result } = out;
  assertStorable(ctx, { ...allFields, ...(out.file?.filename !== undefined ? { [`${opts.fileField}.filename`]: out.file.filename } : {}) });
  return result;
}

/** The uploaded file's own name (no directories), trimmed; '' when absent. */
export function uploadedFileName(file: Multipart['file']): string {
  return file?.filename?.replace(/\\/g, '/').split('/').pop()?.trim() ?? '';
}
