// One storage interface for recordings, transcripts and uploaded documents: a local directory served at
// {cdn_url} (default install) or any S3-compatible bucket (S3_BUCKET set). Keys are validated (keys.ts).
import type { Config } from '../config.ts';
import { createLocalStorage } from './local.ts';
import { createS3Storage } from './s3.ts';
import type { Storage } from './types.ts';

export { InvalidStorageKeyError, validateKey, isValidKey, contentTypeFor } from './keys.ts';
export { signingSecret } from './signing.ts';
export { verifyLocalUpload, UploadTooLargeError, type LocalUploadCheck, type LocalStorage } from './local.ts';

export { StorageNotFoundError } from './errors.ts';

export type { PresignedPost, Storage } from './types.ts';

export function createStorage(config: Config): Storage {
  return config.S3_BUCKET ? createS3Storage(config) : createLocalStorage(config);
}
