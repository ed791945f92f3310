// Stored audio recordings (core/recordings) as a live call plays them: loaded from storage as the call starts (the
// tool set is built from the config snapshot and asks for every recording its tools may play, so the audio is in
// memory before any tool runs) and kept in a byte-bounded LRU shared by every call on this media process (the
// 50th call of an agent does not read the file again). Content never changes after upload, so entries need no
// invalidation; archived recordings still load (agents that reference them keep playing them). Entries are keyed
// by organization and id: a recording is only ever served to its own organization.
import type { CommonQueryMethods } from 'slonik';
import type { Logger } from '../../core/logger.ts';
import type { Storage } from '../../core/storage/index.ts';
import { loadRecordingAudio, recordingsById } from '../../core/recordings/store.ts';

export interface RecordingAudio {
  name: string;
  /** 24 kHz mono s16, never written to */
  pcm: Int16Array;
}

/** One organization's recordings: null when the id names none (or its audio cannot be read; logged). */
export type RecordingSource = (id: string) => Promise<RecordingAudio | null>;

export class RecordingLibrary {
  private readonly entries = new Map<string, { audio: Promise<RecordingAudio | null>; bytes: number }>(); // LRU order
  private bytes = 0;

  constructor(
    private readonly db: CommonQueryMethods,
    private readonly storage: Pick<Storage, 'get'>,
    private readonly logger: Logger,
    readonly maxBytes = 128 * 1024 * 1024,
  ) {}

  forOrg(orgId: string): RecordingSource {
    return (id) => this.get(orgId, id);
  }

  get(orgId: string, id: string): Promise<RecordingAudio | null> {
    const key = `${orgId}/${id.toLowerCase()}`;
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
      return found.audio;
    }
    const entry = { audio: this.load(orgId, id), bytes: 0 };
    this.entries.set(key, entry);
    void entry.audio.then((a) => {
      if (!a) {
        if (this.entries.get(key) === entry) this.entries.delete(key); // not kept: the next call tries again
        return;
      }
      if (this.entries.get(key) !== entry) return;
      entry.bytes = a.pcm.byteLength;
      this.bytes += entry.bytes;
      this.evict();
    });
    return entry.audio;
  }

  private evict(): void {
    for (const [key, e] of this.entries) {
      if (this.bytes <= this.maxBytes || this.entries.size <= 1) return;
      this.entries.delete(key);
      this.bytes -= e.bytes;
    }
  }

  private async load(orgId: string, id: string): Promise<RecordingAudio | null> {
    try {
      const row = (await recordingsById(this.db, orgId, [id])).get(id.toLowerCase());
      if (!row) {
        this.logger.warn({ recordingId: id }, 'audio recording not found for this organization');
        return null;
      }
      return { name: row.name, pcm: await loadRecordingAudio(this.storage, row) };
    } catch (err) {
      this.logger.warn({ err, recordingId: id }, 'audio recording could not be loaded');
      return null;
    }
  }
}
