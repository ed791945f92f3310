// One multipart reader for the upload endpoints (POST /files, POST /recordings): streams the body through busboy,
// keeps at most `maxFileBytes + 1` bytes of the `file` part (the rest is discarded and `truncated` set, so the
// route can refuse with its own limit), and collects the text fields (first value wins).
import type { ParameterizedContext } from 'koa';
import busboy from 'busboy';
import { HttpError } from '../core/http-error.ts';

export interface Multipart {
  file: { filename: string | undefined; data: Buffer; truncated: boolean } | null;
  fields: Record<string, string>;
}

export function readMultipart(ctx: ParameterizedContext, maxFileBytes: number): Promise<Multipart> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: ctx.req.headers,
        limits: { fileSize: maxFileBytes + 1, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 40 },
        defParamCharset: 'utf8',
      });
    } catch {
      ctx.req.resume();
      resolve({ file: null, fields: {} }); // not multipart: there is no file, so no filename
      return;
    }
    const out: Multipart = { file: null, fields: {} };
    let pendingFile: Promise<void> = Promise.resolve();
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || out.file) {
        stream.resume();
        return;
      }
      const file = { filename: info.filename, data: Buffer.alloc(0), truncated: false };
      out.file = file;
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => { file.truncated = true; });
      pendingFile = new Promise((res) => stream.on('close', () => {
        file.data = Buffer.concat(chunks);
        res();
      }));
    });
    bb.on('field', (name, value) => {
      if (!(name in out.fields)) out.fields[name] = value;
    });
    bb.on('error', (err: Error) => {
      ctx.req.unpipe(bb);
      ctx.req.resume();
      reject(new HttpError(400, `Malformed multipart body: ${err.message}`));
    });
    bb.on('close', () => { pendingFile.then(() => resolve(out)); });
    ctx.req.pipe(bb);
  });
}

/** The uploaded file's own name (no directories), trimmed; '' when absent. */
export function uploadedFileName(file: Multipart['file']): string {
  return file?.filename?.replace(/\\/g, '/').split('/').pop()?.trim() ?? '';
}
