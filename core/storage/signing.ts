// The service's signing secret (local presigned upload URLs; later carrier stream URLs). SIGNING_SECRET wins; when it is
// unset one is generated once into `${DATA_DIR}/signing-secret` so every local process (api, media, worker) shares it.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';

const cache = new Map<string, string>();

export function signingSecret(config: Pick<Config, 'SIGNING_SECRET' | 'DATA_DIR'>): string {
  if (config.SIGNING_SECRET) return config.SIGNING_SECRET;
  const file = path.resolve(config.DATA_DIR, 'signing-secret');
  const cached = cache.get(file);
  if (cached) return cached;
  let secret: string;
  try {
    secret = readFileSync(file, 'utf8').trim();
  } catch {
    mkdirSync(path.dirname(file), { recursive: true });
    try {
      // 'wx': exactly one process creates it; a racing process falls through and reads the winner's secret.
      writeFileSync(file, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    secret = readFileSync(file, 'utf8').trim();
  }
  if (secret.length < 16) throw new Error(`${file} holds a signing secret shorter than 16 characters`);
  cache.set(file, secret);
  return secret;
}

export function hmacHex(secret: string, data: string | Buffer): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function safeEqualHex(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}
