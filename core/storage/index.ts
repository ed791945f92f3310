// One storage interface for recordings, transcripts and uploaded documents: a local directory served at
// {cdn_url} (default install) or any S3-compatible bucket (S3_BUCKET set). Keys are validated (keys.ts).
import type { Config } from '../config.ts';
import { createLocalStorage } from './local.ts';
import { createS3Storage } from './s3.ts';

export { InvalidStorageKeyError, validateKey, isValidKey, contentTypeFor } from './keys.ts';
export { signingSecret } from './signing.ts';
export { verifyLocalUpload, UploadTooLargeError, type LocalUploadCheck, type LocalStorage } from './local.ts';

export { StorageNotFoundError } from './errors.ts';
export { parseWavHeader, wavHeader, InvalidWavError, type WavInfo } from './wav.ts';

export interface Storage {
  /** 'local' serves files itself at /cdn; 's3' hands out the bucket's public URLs. */
  readonly kind: 'local' | 's3';
  put(key: string, body: Buffer | NodeJS.ReadableStream, opts?: { contentType?: string }): Promise<{ bytes: number }>;
  /** Throws StorageNotFoundError. */
  get(key: string): Promise<Buffer>;
  /** Throws StorageNotFoundError. */
  getStream(key: string): Promise<NodeJS.ReadableStream>;
  exists(key: string): Promise<boolean>;
  /** Size in bytes, or null when absent. */
  stat(key: string): Promise<{ bytes: number } | null>;
  /** Deleting an absent key is not an error. */
  delete(key: string): Promise<void>;
  publicUrl(key: string): string;
  /**
   * A URL a client can PUT the object to. Local: HMAC-signed, enforcing expiry, content type and max bytes.
   * S3: a SigV4 presigned PutObject URL (expiry and content type enforced by the bucket; S3 cannot cap a PUT's
   * size, so check `stat(key)` after the upload).
   */
  presignPut(key: string, opts: { contentType: string; maxBytes: number; expiresInS: number }): Promise<string>;
}

export function createStorage(config: Config): Storage {
  return config.S3_BUCKET ? createS3Storage(config) : createLocalStorage(config);
}
