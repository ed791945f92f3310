// Secrets at rest (carrier credentials of telephony configurations, stored HTTP-tool credentials): AES-256-GCM. Key: TELEPHONY_ENCRYPTION_KEY (64 hex characters are used as the raw
// key; anything else is hashed with SHA-256); when unset, derived from the service signing secret (SIGNING_SECRET,
// or the secret generated once into DATA_DIR/signing-secret, core/storage/signing.ts), so a dev install needs no
// setup. Stored format: "v1" (2 bytes) + iv (12) + tag (16) + ciphertext.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import { signingSecret } from './storage/signing.ts';

const VERSION = Buffer.from('v1');

export function encryptionKey(config: Pick<Config, 'TELEPHONY_ENCRYPTION_KEY' | 'SIGNING_SECRET' | 'DATA_DIR'>): Buffer {
  const k = config.TELEPHONY_ENCRYPTION_KEY;
  if (k && /^[0-9a-f]{64}$/i.test(k)) return Buffer.from(k, 'hex');
  if (k) return createHash('sha256').update(k).digest();
  return createHash('sha256').update(`telephony-credentials:${signingSecret(config)}`).digest();
}

export function encryptJson(key: Buffer, value: unknown): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([VERSION, iv, cipher.getAuthTag(), body]);
}

/**
 * A sealed record that the current key cannot open: TELEPHONY_ENCRYPTION_KEY (or the signing secret it is derived
 * from) changed after it was saved, or the bytes were damaged. Reads show the record without its secret
 * (`credentials_state: 'credentials_unreadable'`); whatever needs the secret is refused with this message (409).
 */
export class SecretUnreadable extends Error {
  constructor(readonly what: string, readonly remedy = 'save the credentials again') {
    super(`credentials_unreadable: the stored credentials of ${what} cannot be decrypted with the current TELEPHONY_ENCRYPTION_KEY (the key changed after they were saved); restore the previous key, or ${remedy}`);
    this.name = 'SecretUnreadable';
  }
}

/** Opens a sealed value; throws SecretUnreadable (naming `what`) when the key or the bytes do not match. */
export function decryptJson<T = unknown>(key: Buffer, blob: Buffer, what = 'a stored record', remedy?: string): T {
  try {
    if (blob.length < 30 || !blob.subarray(0, 2).equals(VERSION)) throw new Error('unknown credential encryption format');
    const iv = blob.subarray(2, 14);
    const tag = blob.subarray(14, 30);
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(tag);
    const plain = Buffer.concat([decipher.update(blob.subarray(30)), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as T;
  } catch {
    throw new SecretUnreadable(what, remedy);
  }
}

const keys = new WeakMap<object, Buffer>();
/** The encryption key of a loaded config, derived once per config object. */
export function keyOf(config: Config): Buffer {
  let k = keys.get(config);
  if (!k) {
    k = encryptionKey(config);
    keys.set(config, k);
  }
  return k;
}

/** "••••" + the last 4 characters (nothing of short secrets). */
export function mask(secret: unknown): string | null {
  if (typeof secret !== 'string' || secret.length === 0) return null;
  return secret.length <= 8 ? '••••' : `••••${secret.slice(-4)}`;
}
