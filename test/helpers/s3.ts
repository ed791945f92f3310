// The real S3-compatible server of the test run (versitygw, started by `npm test`: scripts/s3-server.ts). A test
// file takes its own bucket; recordings/ and transcripts/ are publicly readable there, as docs/configuration.md (S3_PUBLIC_URL) asks of a
// production bucket, so the URLs the service hands out are fetched without credentials like a customer would.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { CreateBucketCommand, PutBucketPolicyCommand, S3Client } from '@aws-sdk/client-s3';
import { until } from './wait.ts';

/**
 * The server `npm test` started: scripts/test.ts builds and starts it in the background and writes TEST_S3_STATE
 * once it is up (or why it cannot be); a test file that imports this waits for it.
 */
async function serverState(): Promise<{ endpoint: string; accessKey: string; secretKey: string } | { unavailable: string }> {
  const file = process.env.TEST_S3_STATE;
  if (!file) return { unavailable: 'TEST_S3_STATE is not set: run the tests through `npm test`, which builds and starts versitygw' };
  const ready = await until(() => existsSync(file), { what: 'the S3 test server', timeoutMs: 15 * 60_000, everyMs: 500 }).then(() => true, () => false);
  if (!ready) return { unavailable: 'the S3 test server was not ready within 15 minutes' };
  return JSON.parse(readFileSync(file, 'utf8'));
}

const state = await serverState();
const endpoint = 'endpoint' in state ? state.endpoint : undefined;
const keys = 'endpoint' in state ? { accessKeyId: state.accessKey, secretAccessKey: state.secretKey } : { accessKeyId: '', secretAccessKey: '' };

/** Why the S3 tests cannot run here, or null when they can. */
export const s3Unavailable: string | null = 'unavailable' in state ? state.unavailable : null;

export function s3Client(): S3Client {
  return new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: keys,
  });
}

/** A fresh bucket with the public prefixes readable anonymously; returns the service's S3_* environment for it. */
export async function s3Bucket(prefix: string): Promise<Record<string, string>> {
  if (!endpoint) throw new Error(s3Unavailable!);
  const bucket = `${prefix}-${randomBytes(4).toString('hex')}`;
  const client = s3Client();
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const Resource = ['recordings', 'transcripts'].map((p) => `arn:aws:s3:::${bucket}/${p}/*`);
  await client.send(new PutBucketPolicyCommand({
    Bucket: bucket,
    Policy: JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: '*', Action: ['s3:GetObject'], Resource }] }),
  }));
  client.destroy();
  return {
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: keys.accessKeyId,
    S3_SECRET_ACCESS_KEY: keys.secretAccessKey,
    S3_FORCE_PATH_STYLE: 'true',
  };
}
