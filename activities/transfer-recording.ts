// Activities of the transfer-recording workflow: download the carrier's recording of a transferred leg (retried by
// the workflow's policy over ~45 minutes, heartbeating), re-host it in our storage, wait for call.completed, then
// send call.transfer_recording.completed / .failed at most once.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import { policyFromConfig, safeFetch } from '../core/net/ssrf.ts';
import { type Storage } from '../core/storage/index.ts';
import { parseWavHeader } from '../core/audio/wav.ts';
import { recordWebhookResult, sendWebhook } from '../core/webhook.ts';
import type { TransferInfo, TransferRecordingOutcome } from '../workflows/transfer-recording/messages.ts';
import { webhookOf, withHeartbeat } from './post-call.ts';

export interface TransferRecordingDeps {
  config: Config;
  db: Db;
  logger: Logger;
  storage: Storage;
}

const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

function heartbeat(details?: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    /* not in an activity context */
  }
}

function extensionFor(contentType: string | null, url: string): 'wav' | 'mp3' {
  const ct = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (ct === 'audio/mpeg' || ct === 'audio/mp3') return 'mp3';
  if (['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'].includes(ct)) return 'wav';
  return /\.mp3(\?|$)/i.test(url) ? 'mp3' : 'wav';
}

const round2 = (v: number) => Math.round(v * 100) / 100;

const rowSchema = z.object({
  organization_id: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  config_snapshot: z.unknown(),
  transfer_recording: z.unknown(),
  post_call_completed_at: z.string().nullable(),
});

export function createTransferRecordingActivities(deps: TransferRecordingDeps) {
  const { config, db, logger, storage } = deps;
  const policy = policyFromConfig(config);

  async function load(callId: string) {
    const row = await db.maybeOne(sql.type(rowSchema)`
      SELECT organization_id, agent_id, agent_uuid, config_snapshot, transfer_recording, post_call_completed_at
      FROM calls WHERE id = ${callId}`);
    if (!row) throw ApplicationFailure.nonRetryable(`call ${callId} not found`, 'CallNotFound');
    return row;
  }

  return {
    /**
     * Download the carrier file and store it at recordings/<callId>-transfer.<wav|mp3>. Retryable failures
     * (404 not ready yet, 408/429/5xx, network) throw plain errors; an empty file is `NoRecording`, other 4xx are
     * `DownloadRejected`, and a file we could not store after 3 tries is `StorageFailed` (all non-retryable).
     */
    async rehostTransferRecording(input: { callId: string; url: string; headers?: Record<string, string>; durationSeconds?: number | null }): Promise<{ recordingUrl: string; durationSeconds: number | null; bytes: number }> {
      const row = await load(input.callId);
      const done = row.transfer_recording as { stored?: { recordingUrl: string; durationSeconds: number | null; bytes: number } } | null;
      if (done?.stored) return done.stored;

      const res = await safeFetch(input.url, { method: 'GET', headers: input.headers ?? {}, policy, timeoutMs: DOWNLOAD_TIMEOUT_MS, redirect: 'follow' });
      if (!res.ok) {
        await res.body?.cancel().catch(() => undefined);
        const msg = `carrier recording download answered HTTP ${res.status}`;
        if (res.status === 404 || res.status === 408 || res.status === 425 || res.status === 429 || res.status >= 500) throw new Error(msg);
        throw ApplicationFailure.nonRetryable(msg, 'DownloadRejected');
      }
      const dir = await mkdtemp(path.join(os.tmpdir(), 'vas-transfer-'));
      const tmp = path.join(dir, 'recording');
      try {
        let received = 0;
        let last = Date.now();
        await pipeline(
          Readable.fromWeb(res.body as never),
          async function* beat(chunks: AsyncIterable<Buffer>) {
            for await (const chunk of chunks) {
              received += chunk.length;
              if (Date.now() - last > 1000) {
                heartbeat({ received });
                last = Date.now();
              }
              yield chunk;
            }
          },
          createWriteStream(tmp),
        );
        const { size } = await stat(tmp);
        if (size === 0) throw ApplicationFailure.nonRetryable('the carrier returned an empty recording', 'NoRecording');
        const ext = extensionFor(res.headers.get('content-type'), input.url);
        let durationSeconds = typeof input.durationSeconds === 'number' ? round2(input.durationSeconds) : null;
        if (ext === 'wav') {
          const fh = await open(tmp, 'r');
          try {
            const head = Buffer.alloc(Math.min(size, 64 * 1024));
            await fh.read(head, 0, head.length, 0);
            durationSeconds = parseWavHeader(head, size).durationSeconds;
          } catch (err) {
            // A truncated or garbled download: try again (retryable) until the window closes.
            throw new Error(`downloaded recording is not a valid WAV: ${(err as Error).message}`);
          } finally {
            await fh.close();
          }
        }
        const key = `recordings/${input.callId}-transfer.${ext}`;
        let lastErr: unknown;
        for (let i = 0; i < 3; i++) {
          try {
            await withHeartbeat(() => storage.put(key, createReadStream(tmp), { contentType: ext === 'wav' ? 'audio/wav' : 'audio/mpeg' }));
            lastErr = undefined;
            break;
          } catch (err) {
            lastErr = err;
            heartbeat({ storeAttempt: i + 1 });
            await sleep(500 * (i + 1));
          }
        }
        if (lastErr) throw ApplicationFailure.nonRetryable(`could not store the transfer recording: ${(lastErr as Error).message}`, 'StorageFailed');
        const stored = { recordingUrl: storage.publicUrl(key), durationSeconds, bytes: size };
        await db.query(sql.unsafe`
          UPDATE calls SET transfer_recording = COALESCE(transfer_recording, '{}'::jsonb) || jsonb_build_object('stored', ${JSON.stringify(stored)}::jsonb),
                 updated_at = now()
          WHERE id = ${input.callId}`);
        return stored;
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },

    /** Waits (heartbeating) until the call's post-processing finished, so this event always follows call.completed. */
    async awaitCallCompleted({ callId, timeoutS }: { callId: string; timeoutS: number }): Promise<{ completed: boolean }> {
      const deadline = Date.now() + timeoutS * 1000;
      for (;;) {
        const row = await load(callId);
        if (row.post_call_completed_at) return { completed: true };
        if (Date.now() >= deadline) {
          logger.warn({ callId }, 'call.completed not sent in time; sending the transfer-recording event anyway');
          return { completed: false };
        }
        heartbeat();
        await sleep(500);
      }
    },

    /** call.transfer_recording.completed / .failed, at most once (claim committed before the POST). */
    async sendTransferRecordingEvent(input: {
      callId: string;
      telephonyProvider: string | null;
      transfer: TransferInfo;
      outcome: TransferRecordingOutcome;
    }): Promise<{ outcome: 'sent' | 'failed' | 'no_webhook' | 'already_sent' }> {
      const row = await load(input.callId);
      const claimed = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
        UPDATE calls SET transfer_event_claimed_at = now(),
               transfer_recording = COALESCE(transfer_recording, '{}'::jsonb) || jsonb_build_object('outcome', ${JSON.stringify(input.outcome)}::jsonb),
               updated_at = now()
        WHERE id = ${input.callId} AND transfer_event_claimed_at IS NULL RETURNING id`);
      if (!claimed) return { outcome: 'already_sent' };
      const webhook = webhookOf(row.config_snapshot);
      if (!webhook) return { outcome: 'no_webhook' };
      const transfer = {
        transferId: input.transfer.transferId ?? null,
        destination: input.transfer.destination ?? null,
        carrierCallId: input.transfer.carrierCallId ?? null,
      };
      const payload =
        input.outcome.event === 'call.transfer_recording.completed'
          ? {
              event: input.outcome.event,
              callId: input.callId,
              agentId: row.agent_uuid,
              recordingUrl: input.outcome.recordingUrl,
              durationSeconds: input.outcome.durationSeconds,
              telephonyProvider: input.telephonyProvider,
              transfer,
            }
          : {
              event: input.outcome.event,
              callId: input.callId,
              agentId: row.agent_uuid,
              reason: input.outcome.reason,
              telephonyProvider: input.telephonyProvider,
              transfer,
            };
      const secret = row.agent_id === null
        ? null
        : await db.maybeOneFirst(sql.type(z.object({ webhook_secret: z.string().nullable() }))`
            SELECT webhook_secret FROM agents WHERE id = ${row.agent_id} AND organization_id = ${row.organization_id}`);
      const result = await sendWebhook({ url: webhook.url, headers: webhook.headers, secret, payload, policy, logger });
      await recordWebhookResult(db, input.callId, input.outcome.event, result);
      return { outcome: result.ok ? 'sent' : 'failed' };
    },
  };
}

export type TransferRecordingActivities = ReturnType<typeof createTransferRecordingActivities>;
