// The storage interface every store implements (local.ts, s3.ts) and every process is handed.
export interface Storage {
  /** 'local' serves files itself at /cdn; 's3' hands out the bucket's public URLs. */
  readonly kind: 'local' | 's3';
  put(key: string, body: Buffer | NodeJS.ReadableStream, opts?: { contentType?: string }): Promise<{ bytes: number }>;
  /**
   * Store the file at `file` (left in place) under `key`. Local storage copies it in the kernel on a libuv thread
   * (no bytes pass through JavaScript: a burst of calls ending together does not hold the event loop); S3 streams it.
   */
  putFile(key: string, file: string, opts?: { contentType?: string }): Promise<{ bytes: number }>;
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
   * size, so check `stat(key)` after the upload, or hand out `presignPost`, which the bucket size-checks).
   */
  presignPut(key: string, opts: { contentType: string; maxBytes: number; expiresInS: number }): Promise<string>;
  /**
   * S3 only: a presigned browser-form POST (S3 "POST Object") whose signed policy fixes the key and content type
   * and carries `content-length-range` [0, maxBytes], so the bucket itself refuses an over-limit upload. Absent
   * for local storage, whose presigned PUT is already size-checked by this server while it streams.
   */
  presignPost?(key: string, opts: { contentType: string; maxBytes: number; expiresInS: number }): Promise<PresignedPost>;
}

/** A presigned S3 POST: send `fields` then the file as the last part `file` of a multipart/form-data body to `url`. */
export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}
