// The shape shared by TTS vendors whose WebSocket carries one generation at a time without context ids (xAI,
// Sarvam): one socket per call, requests strictly one after another (a bounded queue of waiting chunks), each ended
// by the vendor's completion marker (xAI `audio.done`, Sarvam `final` event). Barge-in cancels the generation in
// flight (xAI `text.clear`; Sarvam has no cancel message) and everything up to its completion marker is dropped as
// stale; should the next request come before that marker, the socket is replaced rather than risk stale audio.
// No synthesis ahead (lookahead 0): without ids a request sent early could not be cancelled apart from the one
// playing (xAI's text.clear clears both, Sarvam has no cancel), so the stage sends a chunk once the previous ended.
import type WebSocket from 'ws';
import type { TtsService, TtsSynthesizeOptions } from '../types.ts';
import { AudioChannel, PcmDecoder, VendorSocket, transient, type VendorError, type VendorSocketOptions } from './vendor.ts';

interface Request {
  channel: AudioChannel;
  decoder: PcmDecoder;
}

/** chunks waiting for their turn at most (a reply's next chunk, sound words being prepared) */
const MAX_WAITING = 32;

export abstract class SequentialTts implements TtsService {
  abstract readonly provider: string;
  abstract readonly model: string;
  abstract readonly voice: string;
  /** one generation at a time on a socket without ids: no chunk is sent before the previous one's audio ended */
  readonly lookahead = 0;
  protected abstract readonly vendorName: string;
  protected socket!: VendorSocket;
  private busy: Request | null = null;
  private readonly waiting: Array<() => void> = [];
  private locked = false;
  /** cancelled generations whose completion marker has not arrived yet */
  private stale = 0;
  private staleWake: (() => void) | null = null;
  /** how long a new request waits for a cancelled generation to finish before replacing the socket */
  protected staleWaitMs = 300;

  /** Send one chunk and ask for its audio now. */
  protected abstract sendRequest(text: string): void;
  /** Barge-in: ask the vendor to drop the generation in flight (when it can). */
  protected abstract sendCancel(): void;
  protected abstract onMessage(data: WebSocket.RawData, isBinary: boolean): void;

  protected makeSocket(o: Omit<VendorSocketOptions, 'onMessage' | 'onDrop'>): VendorSocket {
    return new VendorSocket({
      ...o,
      onMessage: (d, b) => this.onMessage(d, b),
      onDrop: (err) => {
        this.stale = 0;
        this.failBusy(err);
      },
    });
  }

  async connect(): Promise<void> {
    await this.socket.open();
  }

  async *synthesize(text: string, signal: AbortSignal, _opts: TtsSynthesizeOptions = {}): AsyncIterable<Int16Array> {
    if (signal.aborted || !text.trim()) return;
    if (!(await this.acquire(signal))) return;
    try {
      for (let attempt = 0; ; attempt++) {
        if (signal.aborted) return;
        await this.settleStale();
        await this.socket.open();
        if (signal.aborted) return;
        const req: Request = { channel: new AudioChannel(), decoder: new PcmDecoder() };
        this.busy = req;
        const onAbort = () => this.cancel(req);
        signal.addEventListener('abort', onAbort, { once: true });
        if (!this.socket.isOpen) req.channel.fail(transient(this.vendorName, 'connection lost'));
        else this.sendRequest(text);
        try {
          yield* req.channel.read(signal);
          return;
        } catch (err) {
          const e = (err as VendorError).engineError;
          // a chunk that got no audio because the connection dropped is sent once more
          if (attempt > 0 || !e || e.fatal || req.channel.produced > 0 || signal.aborted) throw err;
        } finally {
          signal.removeEventListener('abort', onAbort);
          if (this.busy === req) {
            if (!req.channel.done) this.cancel(req); // the reader stopped early
            else this.busy = null;
          }
        }
      }
    } finally {
      this.release();
    }
  }

  /** Wait for this chunk's turn; false when the signal aborted while waiting (the turn was not taken). */
  private acquire(signal: AbortSignal): Promise<boolean> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve(true);
    }
    if (this.waiting.length >= MAX_WAITING) return Promise.reject(transient(this.vendorName, 'too many chunks waiting'));
    return new Promise<boolean>((resolve) => {
      const go = () => {
        signal.removeEventListener('abort', skip);
        resolve(true);
      };
      const skip = () => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      this.waiting.push(go);
      signal.addEventListener('abort', skip, { once: true });
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.locked = false;
  }

  private cancel(req: Request): void {
    if (this.busy !== req) return;
    this.busy = null;
    req.channel.end();
    this.stale++;
    if (this.socket.isOpen) this.sendCancel();
  }

  /** A cancelled generation still running: wait briefly for its end, else start over on a fresh socket. */
  private async settleStale(): Promise<void> {
    if (this.stale === 0) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, this.staleWaitMs);
      this.staleWake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.staleWake = null;
    if (this.stale > 0) {
      this.stale = 0;
      this.socket.recycle();
    }
  }

  // ── for subclasses' message handlers ──────────────────────────────────────────────────────────────────
  protected audio(bytes: Buffer): void {
    if (this.stale > 0 || !this.busy) return; // audio of a cancelled generation
    this.busy.channel.push(this.busy.decoder.push(bytes));
  }

  /** The vendor's completion marker. */
  protected done(): void {
    if (this.stale > 0) {
      this.stale--;
      if (this.stale === 0) this.staleWake?.();
      return;
    }
    const req = this.busy;
    this.busy = null;
    req?.channel.end();
  }

  /** An error for the generation in flight (fatal ones stop the engine). */
  protected error(err: VendorError): void {
    if (err.engineError.fatal) this.socket.refuse(err);
    if (this.stale > 0 && !err.engineError.fatal) {
      this.stale--;
      return;
    }
    this.failBusy(err);
  }

  private failBusy(err: VendorError): void {
    const req = this.busy;
    if (!req) return;
    this.busy = null;
    if (req.channel.produced > 0 && !err.engineError.fatal) req.channel.end();
    else req.channel.fail(err);
  }

  async close(): Promise<void> {
    this.busy?.channel.end();
    this.busy = null;
    await this.socket.close();
  }
}
