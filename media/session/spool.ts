// Recording spool on the media node's disk: each call's mixed timeline goes to
// <MEDIA_SPOOL_DIR>/<node id>/<callId>.wav as the call runs (media/pipeline/recorder.ts hands it 1-second blocks),
// the WAV header is fixed up when the call ends, the file is uploaded to storage's spool/recordings/<callId>.wav
// for the post-call workflow, and removed once the upload succeeded.
//
// A spool file left behind (process killed mid-call, upload refused past the retries) is recovered by the periodic
// reconcile (recoverSpools): files of this node whose call is not running here, and files of dead nodes. Such a file
// is a valid recording up to the crash: its header is rebuilt from the file size and it is uploaded, as long as the
// call's post-call processing (which publishes recordings) has not completed; the reconcile runs before orphaned rows
// are ended, so a restarted node's calls get their partial recording. Otherwise the file is deleted with a warning.
import { mkdir, open, readdir, rm, rmdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Config } from '../../core/config.ts';
import { sql, type Db } from '../../core/db/pool.ts';
import type { Logger } from '../../core/logger.ts';
import type { Storage } from '../../core/storage/index.ts';
import { spoolRecordingKey } from '../../workflows/post-call/messages.ts';
import { recordingHeader, type RecordingSink } from '../pipeline/recorder.ts';
import { NODE_ID, retrying } from './lifecycle.ts';

const HEADER = 44;

export function spoolRoot(config: Pick<Config, 'MEDIA_SPOOL_DIR' | 'DATA_DIR'>): string {
  return config.MEDIA_SPOOL_DIR ?? path.join(config.DATA_DIR, 'media-spool');
}

const nodeDir = (root: string, nodeId: string) => path.join(root, encodeURIComponent(nodeId));

/** Spool files this process has open (live or finishing calls): the recovery leaves them alone. */
const inUse = new Set<string>();

/** One call's spool file. Opened on the first write (nothing synchronous, nothing on disk for a call that never spoke). */
export class FileSink implements RecordingSink {
  private fh: Promise<FileHandle> | null = null;
  private closed = false;

  constructor(readonly file: string) {
    inUse.add(file);
  }

  static forCall(config: Pick<Config, 'MEDIA_SPOOL_DIR' | 'DATA_DIR'>, callId: string): FileSink {
    return new FileSink(path.join(nodeDir(spoolRoot(config), NODE_ID), `${callId}.wav`));
  }

  private handle(): Promise<FileHandle> {
    this.fh ??= (async () => {
      await mkdir(path.dirname(this.file), { recursive: true });
      const fh = await open(this.file, 'w+');
      await fh.write(recordingHeader(0), 0, HEADER, 0);
      return fh;
    })();
    return this.fh;
  }

  async write(pcm: Int16Array, at: number): Promise<void> {
    const fh = await this.handle();
    await fh.write(new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength), 0, pcm.byteLength, HEADER + at * 2);
  }

  async read(at: number, n: number): Promise<Int16Array> {
    const fh = await this.handle();
    const out = new Int16Array(n);
    await fh.read(new Uint8Array(out.buffer), 0, n * 2, HEADER + at * 2); // past the end / holes: stays zero
    return out;
  }

  async close(samples: number): Promise<void> {
    const fh = await this.handle(); // a silent call still yields a valid (empty) WAV
    await fh.write(recordingHeader(samples), 0, HEADER, 0);
    await fh.truncate(HEADER + samples * 2);
    await fh.close();
    this.closed = true;
  }

  async discard(): Promise<void> {
    if (this.fh && !this.closed) await (await this.fh).close().catch(() => {});
    this.closed = true;
    await rm(this.file, { force: true });
    inUse.delete(this.file);
  }

  /** Upload the finished file to storage (retried with backoff), then remove it. False: it stays for the recovery. */
  async upload(deps: { storage: Storage; logger: Logger }, callId: string): Promise<boolean> {
    try {
      await uploadFile(deps, callId, this.file);
      return true;
    } catch (err) {
      deps.logger.error({ err, callId, file: this.file }, 'could not upload the call recording: kept in the spool for the next reconcile');
      return false;
    } finally {
      inUse.delete(this.file);
    }
  }
}

async function uploadFile(deps: { storage: Storage; logger: Logger }, callId: string, file: string): Promise<void> {
  await retrying(deps.logger, { callId, step: 'recording upload' }, () =>
    deps.storage.putFile(spoolRecordingKey(callId), file, { contentType: 'audio/wav' }));
  await rm(file, { force: true });
}

/** Rebuild the header of a spool file the process did not finish (its data runs to the end of the file). */
async function sealLeftover(file: string): Promise<number> {
  const fh = await open(file, 'r+');
  try {
    const { size } = await fh.stat();
    const samples = Math.max(0, Math.floor((size - HEADER) / 2));
    await fh.write(recordingHeader(samples), 0, HEADER, 0);
    await fh.truncate(HEADER + samples * 2);
    return samples;
  } finally {
    await fh.close();
  }
}

const postCallState = z.object({ done: z.boolean() });

/**
 * Upload (or drop) spool files no live call of this process owns: this node's leftovers and those of dead nodes.
 * Returns the call ids whose recording was recovered.
 */
export async function recoverSpools(deps: { db: Db; storage: Storage; logger: Logger; config: Config }, deadAfterS: number): Promise<string[]> {
  const root = spoolRoot(deps.config);
  const dirs = await readdir(root).catch(() => [] as string[]);
  if (!dirs.length) return [];
  const alive = new Set(await deps.db.anyFirst(sql.type(z.object({ node_id: z.string() }))`
    SELECT node_id FROM media_nodes WHERE heartbeat_at > now() - make_interval(secs => ${deadAfterS})`));
  const recovered: string[] = [];
  for (const d of dirs) {
    const node = decodeURIComponent(d);
    if (node !== NODE_ID && alive.has(node)) continue; // another live process's calls
    const dir = path.join(root, d);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const file = path.join(dir, name);
      const callId = name.replace(/\.wav$/, '');
      if (inUse.has(file) || !/^[0-9a-f-]{36}$/.test(callId)) continue;
      const st = await stat(file).catch(() => null);
      if (!st?.isFile()) continue;
      // another node's file still being written (its heartbeat merely late, e.g. after a database outage): not yet
      if (node !== NODE_ID && Date.now() - st.mtimeMs < deadAfterS * 1000) continue;
      const row = await deps.db.maybeOne(sql.type(postCallState)`
        SELECT post_call_completed_at IS NOT NULL AS done FROM calls WHERE id = ${callId}`);
      if (!row || row.done) {
        deps.logger.warn({ callId, file }, 'spool recording of a call whose post-call already ran (or is unknown): deleted');
        await rm(file, { force: true });
        continue;
      }
      const samples = await sealLeftover(file);
      await uploadFile(deps, callId, file);
      deps.logger.warn({ callId, seconds: samples / 24000, fromNode: node }, 'recovered a spool recording left behind');
      recovered.push(callId);
    }
    if (node !== NODE_ID) await rmdir(dir).catch(() => {});
  }
  return recovered;
}
