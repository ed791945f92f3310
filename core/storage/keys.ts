// Storage keys are relative, slash-separated object names. Anything that could escape the storage root
// (absolute paths, `..`, backslashes, empty or dot segments, control characters) is refused.

export class InvalidStorageKeyError extends Error {
  constructor(key: string, why: string) {
    super(`Invalid storage key ${JSON.stringify(key.slice(0, 200))}: ${why}`);
    this.name = 'InvalidStorageKeyError';
  }
}

const SEGMENT = /^[A-Za-z0-9._~@+=,-]+$/;

/** Returns the key unchanged when valid; throws InvalidStorageKeyError otherwise. */
export function validateKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidStorageKeyError(String(key), 'empty');
  if (key.length > 1024) throw new InvalidStorageKeyError(key, 'longer than 1024 characters');
  if (key.includes('\\')) throw new InvalidStorageKeyError(key, 'backslashes are not allowed');
  if (key.startsWith('/')) throw new InvalidStorageKeyError(key, 'absolute paths are not allowed');
  if (/^[A-Za-z]:/.test(key)) throw new InvalidStorageKeyError(key, 'drive letters are not allowed');
  for (const segment of key.split('/')) {
    if (segment === '') throw new InvalidStorageKeyError(key, 'empty path segment');
    if (segment === '.' || segment === '..') throw new InvalidStorageKeyError(key, 'dot segments are not allowed');
    if (!SEGMENT.test(segment)) throw new InvalidStorageKeyError(key, 'only letters, digits and ._~@+=,- are allowed in a segment');
  }
  return key;
}

export function isValidKey(key: string): boolean {
  try {
    validateKey(key);
    return true;
  } catch {
    return false;
  }
}

/** Content type for a key by its extension (local serving, S3 default). */
export function contentTypeFor(key: string): string {
  const ext = key.slice(key.lastIndexOf('.') + 1).toLowerCase();
  return (
    {
      wav: 'audio/wav',
      mp3: 'audio/mpeg',
      json: 'application/json',
      txt: 'text/plain; charset=utf-8',
      md: 'text/markdown; charset=utf-8',
      csv: 'text/csv; charset=utf-8',
      pdf: 'application/pdf',
      docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      doc: 'application/msword',
    } as Record<string, string>
  )[ext] ?? 'application/octet-stream';
}
