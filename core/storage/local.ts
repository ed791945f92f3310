// Local-directory storage under config.storageDir, publicly served at {cdn_url} by api/routes/cdn.ts.
import { createReadStream, createWriteStream } from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../config.ts';
import { validateKey } from './keys.ts';
import { hmacHex, safeEqualHex, signingSecret } from './signing.ts';
import { StorageNotFoundError } from './errors.ts';
import type { Storage } from './types.ts';

export function localPath(root: string, key: string): string {
  validateKey(key);
  const full = path.resolve(root, key);
  // Defence in depth: validateKey already makes escaping impossible.
  if (!full.startsWith(path.resolve(root) + path.sep)) throw new Error(`key escapes storage root: ${key}`);
  return full;
}

function uploadPayload(key: string, expires: number, max: number, ct: string): string {
  return `PUT\n${key}\n${expires}\n${max}\n${ct}`;
}

export type LocalUploadCheck =
  | { ok: true; maxBytes: number; contentType: string }
  | { ok: false; status: 403 | 400; detail: string };

/** Checks a local presigned upload's query (not its body size: the route counts the streamed bytes). */
export function verifyLocalUpload(
  config: Config,
  key: string,
  query: { expires?: unknown; max?: unknown; ct?: unknown; sig?: unknown },
  requestContentType: string | undefined,
  nowMs = Date.now(),
): LocalUploadCheck {
  const { expires, max, ct, sig } = query;
  if (typeof expires !== 'string' || typeof max !== 'string' || typeof ct !== 'string' || typeof sig !== 'string') {
    return { ok: false, status: 403, detail: 'Missing upload signature parameters' };
  }
  const expiresN = Number(expires);
  const maxN = Number(max);
  if (!/^\d+$/.test(expires) || !/^\d+$/.test(max) || !Number.isSafeInteger(expiresN) || !Number.isSafeInteger(maxN)) {
    return { ok: false, status: 403, detail: 'Invalid upload signature' };
  }
  const expected = hmacHex(signingSecret(config), uploadPayload(key, expiresN, maxN, ct));
  if (!safeEqualHex(expected, sig)) return { ok: false, status: 403, detail: 'Invalid upload signature' };
  if (nowMs > expiresN * 1000) return { ok: false, status: 403, detail: 'Upload URL expired' };
  const sent = (requestContentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (sent !== ct.split(';')[0]!.trim().toLowerCase()) {
    return { ok: false, status: 403, detail: `Content-Type must be ${ct}` };
  }
  return { ok: true, maxBytes: maxN, contentType: ct };
}

/** Write `file` through a temp file beside it, renamed into place once `write` resolved; removed on failure. */
async function atomically<T>(file: string, write: (tmp: string) => Promise<T>): Promise<T> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.part`;
  try {
    const r = await write(tmp);
    await rename(tmp, file);
    return r;
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

function writeAtomically(file: string, body: Buffer | NodeJS.ReadableStream, maxBytes?: number): Promise<number> {
  return atomically(file, async (tmp) => {
    let bytes = 0;
    const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
    await pipeline(
      source,
      async function* count(chunks: AsyncIterable<Buffer | string>) {
        for await (const chunk of chunks) {
          const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          bytes += buf.length;
          if (maxBytes !== undefined && bytes > maxBytes) throw new UploadTooLargeError(maxBytes);
          yield buf;
        }
      },
      createWriteStream(tmp),
    );
    return bytes;
  });
}

export class UploadTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`Upload exceeds ${maxBytes} bytes`);
    this.name = 'UploadTooLargeError';
  }
}

export interface LocalStorage extends Storage {
  readonly kind: 'local';
  readonly root: string;
  /** Used by the upload route: writes atomically and fails with UploadTooLargeError past maxBytes. */
  putLimited(key: string, body: NodeJS.ReadableStream, maxBytes: number): Promise<{ bytes: number }>;
}

export function createLocalStorage(config: Config): LocalStorage {
  const root = path.resolve(config.storageDir);
  const notFound = (err: unknown, key: string) => {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return new StorageNotFoundError(key);
    return err;
  };
  const storage: LocalStorage = {
    kind: 'local',
    root,
    async put(key, body) {
      return { bytes: await writeAtomically(localPath(root, key), body) };
    },
    async putFile(key, file) {
      // a reflink where the filesystem has them, else copy_file_range/sendfile: on the thread pool either way
      const bytes = await atomically(localPath(root, key), async (tmp) => {
        await copyFile(file, tmp, fsConstants.COPYFILE_FICLONE);
        return (await stat(tmp)).size;
      });
      return { bytes };
    },
    async putLimited(key, body, maxBytes) {
      return { bytes: await writeAtomically(localPath(root, key), body, maxBytes) };
    },
    async get(key) {
      try {
        return await readFile(localPath(root, key));
      } catch (err) {
        throw notFound(err, key);
      }
    },
    async getStream(key) {
      const file = localPath(root, key);
      try {
        const st = await stat(file);
        if (!st.isFile()) throw new StorageNotFoundError(key);
      } catch (err) {
        throw notFound(err, key);
      }
      return createReadStream(file);
    },
    async exists(key) {
      return (await storage.stat(key)) !== null;
    },
    async stat(key) {
      try {
        const st = await stat(localPath(root, key));
        return st.isFile() ? { bytes: st.size } : null;
      } catch (err) {
        if (notFound(err, key) instanceof StorageNotFoundError) return null;
        throw err;
      }
    },
    async delete(key) {
      await rm(localPath(root, key), { force: true });
    },
    publicUrl(key) {
      validateKey(key);
      return `${config.cdnUrl}/${key}`;
    },
    async presignPut(key, opts) {
      validateKey(key);
      const expires = Math.floor(Date.now() / 1000) + Math.max(1, Math.floor(opts.expiresInS));
      const max = Math.max(0, Math.floor(opts.maxBytes));
      const sig = hmacHex(signingSecret(config), uploadPayload(key, expires, max, opts.contentType));
      const q = new URLSearchParams({ expires: String(expires), max: String(max), ct: opts.contentType, sig });
      return `${config.publicUrl}/cdn-upload/${key}?${q.toString()}`;
    },
  };
  return storage;
}
