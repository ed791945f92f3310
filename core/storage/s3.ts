// S3-compatible bucket storage (AWS S3, MinIO, R2, ...): S3_BUCKET, S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID,
// S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE; public URLs are S3_PUBLIC_URL/<key> (or endpoint/bucket/<key>).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import type { Config } from '../config.ts';
import { contentTypeFor, validateKey } from './keys.ts';
import { StorageNotFoundError } from './errors.ts';
import type { Storage } from './types.ts';

function isNotFound(err: unknown): boolean {
  if (err instanceof S3ServiceException) {
    return err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404;
  }
  return false;
}

export function createS3Storage(config: Config): Storage {
  const bucket = config.S3_BUCKET!;
  const client = new S3Client({
    region: config.S3_REGION,
    endpoint: config.S3_ENDPOINT,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    // Only the checksums S3 requires: many S3-compatible stores (older MinIO, R2, Ceph) reject the newer default
    // trailing-checksum (aws-chunked) uploads.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials:
      config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY }
        : undefined,
  });
  const publicBase = (
    config.S3_PUBLIC_URL ??
    (config.S3_ENDPOINT ? `${config.S3_ENDPOINT.replace(/\/+$/, '')}/${bucket}` : `https://${bucket}.s3.${config.S3_REGION}.amazonaws.com`)
  ).replace(/\/+$/, '');

  const storage: Storage = {
    kind: 's3',
    async put(key, body, opts) {
      validateKey(key);
      const ContentType = opts?.contentType ?? contentTypeFor(key);
      if (Buffer.isBuffer(body)) {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType, ContentLength: body.length }));
        return { bytes: body.length };
      }
      // PutObject needs a length up front: spool a stream to a temp file first (recordings can be large).
      const dir = await mkdtemp(path.join(os.tmpdir(), 'vas-s3-'));
      const tmp = path.join(dir, 'body');
      try {
        await pipeline(body as Readable, createWriteStream(tmp));
        return await storage.putFile(key, tmp, { contentType: ContentType });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    async putFile(key, file, opts) {
      validateKey(key);
      // the file already has a length: no temp copy (put() spools a stream to learn its length)
      const { size } = await stat(file);
      await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: createReadStream(file), ContentType: opts?.contentType ?? contentTypeFor(key), ContentLength: size }),
      );
      return { bytes: size };
    },
    async get(key) {
      const stream = await storage.getStream(key);
      const chunks: Buffer[] = [];
      for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
      return Buffer.concat(chunks);
    },
    async getStream(key) {
      validateKey(key);
      try {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        if (!res.Body) throw new StorageNotFoundError(key);
        return res.Body as Readable;
      } catch (err) {
        if (isNotFound(err)) throw new StorageNotFoundError(key);
        throw err;
      }
    },
    async exists(key) {
      return (await storage.stat(key)) !== null;
    },
    async stat(key) {
      validateKey(key);
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return { bytes: res.ContentLength ?? 0 };
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    async delete(key) {
      validateKey(key);
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
    publicUrl(key) {
      validateKey(key);
      return `${publicBase}/${key}`;
    },
    async presignPut(key, opts) {
      validateKey(key);
      return getSignedUrl(client, new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: opts.contentType }), {
        expiresIn: Math.max(1, Math.floor(opts.expiresInS)),
        signableHeaders: new Set(['content-type']),
      });
    },
    async presignPost(key, opts) {
      validateKey(key);
      const { url, fields } = await createPresignedPost(client, {
        Bucket: bucket,
        Key: key,
        Fields: { 'Content-Type': opts.contentType },
        Conditions: [['content-length-range', 0, opts.maxBytes], ['eq', '$Content-Type', opts.contentType]],
        Expires: Math.max(1, Math.floor(opts.expiresInS)),
      });
      return { url, fields };
    },
  };
  return storage;
}
