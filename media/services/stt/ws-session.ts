// The WebSocket lifecycle the vendor STT adapters share (soniox, deepgram, assemblyai, sarvam, cartesia): one
// connection per call, opened while the call connects, to the endpoint built from `<ID>_BASE_URL` (ws/wss follow
// http/https). A transient close (network, 5xx on the upgrade, the vendor ending an idle or long session) reconnects
// with a short backoff, audio meanwhile buffered and bounded (`maxBufferMs`; ≈ 20 s unsent to a vendor that stops
// reading); a refusal (4xx on the upgrade, a vendor error the adapter classifies as fatal, too many failed reconnects)
// emits one fatal `error` naming the vendor and the reason (never the key) and stops. Audio is gathered into the
// vendor's recommended message size (`chunk`), sent early before anything else goes out, on finalize() and when the
// caller's audio stops; with `liveAfterSpeechMs` the quiet frames right after speech go out one by one (the vendor's
// end of turn falls there). `keepalive()` runs through silence every `idleMs`. A stall (no vendor message for
// `stallMs` while audio goes out) reconnects like a transient close, so a hung recogniser never costs the whole call.
import WebSocket from 'ws';
import { rms } from '../../audio/pcm.ts';
import type { EngineError, SttEvent, SttStream } from '../types.ts';

/**
 * The vendor endpoint for `base` (an `http(s)://host[:port][/prefix]` override or the vendor's real origin):
 * scheme → ws/wss, the prefix kept, then the vendor's own path and query.
 */
export function vendorWsUrl(base: string, path: string, query: Array<[string, string | number | boolean]> = []): string {
  const u = new URL(base);
  const scheme = u.protocol === 'http:' || u.protocol === 'ws:' ? 'ws:' : 'wss:';
  const prefix = u.pathname.replace(/\/+$/, '');
  const qs = new URLSearchParams();
  for (const [k, v] of query) qs.append(k, String(v));
  const q = qs.toString();
  return `${scheme}//${u.host}${prefix}${path}${q ? `?${q}` : ''}`;
}

export const SAMPLE_RATE = 16000;
/** bytes the socket may hold unsent before audio is dropped (≈ 20 s of 16 kHz PCM) */
const MAX_IN_FLIGHT_BYTES = 640 * 1024;

export function pcmBytes(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

export function clamp(v: unknown, lo: number, hi: number, dflt: number): number {
  const n = typeof v === 'number' && Number.isFinite(v) ? v : dflt;
  return Math.min(hi, Math.max(lo, n));
}

/** HTTP statuses on the upgrade that mean "refused" (credentials, payment/quota, unknown model or bad parameters). */
export function isRefusalStatus(status: number): boolean {
  return status === 400 || status === 401 || status === 402 || status === 403 || status === 404 || status === 422 || status === 429;
}

export interface SttSocketOptions {
  vendor: string;
  url: string;
  headers: Record<string, string>;
  /** emits errors to the call (fatal refusals) */
  emit(ev: SttEvent): void;
  /** runs on every (re)connect before buffered audio goes out: send the configuration message here */
  onOpen?(sock: SttSocket, reconnect: boolean): void;
  onMessage(data: Buffer, isBinary: boolean): void;
  /** audio chunk → wire frame (default: raw binary PCM) */
  encodeAudio?(pcm: Int16Array): Buffer | string;
  /** keepalive through silence: after idleMs without audio, run send() (repeats every idleMs) */
  keepalive?: { idleMs: number; send(sock: SttSocket): void };
  /** the vendor's end-of-stream message sent by close() */
  closeMessage?: () => Buffer | string | null;
  /** a vendor close code/reason the adapter knows to be a refusal (else any unexpected close is transient) */
  isFatalClose?(code: number, reason: string): boolean;
  maxBufferMs?: number;
  /** gather caller audio into messages of `ms` (the vendor's recommended size) instead of one per frame written; a
   * part sent early is padded with silence to `minMs` (a vendor that refuses shorter messages) */
  chunk?: {
    ms: number;
    minMs?: number;
    /** quiet frames (below −56 dBFS RMS) within this many ms after the last speech frame are sent as they come */
    liveAfterSpeechMs?: number;
  };
  /** consecutive failed connection attempts before giving up (fatal) */
  maxReconnects?: number;
  connectTimeoutMs?: number;
  /** no vendor message for this long while audio is being sent = a stalled stream: reconnect (default 10 000; 0 = off) */
  stallMs?: number;
}

/** The default stall bound for every vendor STT stream (see the header); a vendor quiet through caller silence gets a
 * harmless reconnect per stall period of it. */
export const STT_STALL_MS = 10_000;

type State = 'connecting' | 'open' | 'waiting' | 'failed' | 'closed';

export class SttSocket {
  private ws: WebSocket | null = null;
  private state: State = 'connecting';
  private buffer: Array<Buffer | string> = [];
  private bufferedSamples = 0;
  private bufferSizes: number[] = [];
  /** the chunk being gathered (`chunk` option): its samples so far and when its first one came */
  private acc: Int16Array | null = null;
  private accN = 0;
  private accSince = 0;
  /** samples since the last loud frame (the `liveAfterSpeechMs` window); starts outside it */
  private sinceLoud = Number.POSITIVE_INFINITY;
  private failures = 0;
  private opens = 0;
  private lastAudioAt = Date.now();
  /** caller audio only (keepalives excluded): the stall needs audio the vendor should have answered */
  private lastCallerAudioAt = 0;
  /** the last vendor message (or the open): the stall clock */
  private lastHeardAt = Date.now();
  /** connections dropped because the vendor went quiet while audio flowed */
  stalls = 0;
  private keepTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private firstResolve: (() => void) | null = null;
  /** resolves after the first connection attempt settles (open, refused or given up) */
  readonly ready: Promise<void>;
  /** audio samples dropped because the buffer was full while disconnected */
  dropped = 0;
  /** connections made (the first one and every reconnect) */
  get connections(): number {
    return this.opens;
  }
  get isOpen(): boolean {
    return this.state === 'open';
  }
  get failed(): boolean {
    return this.state === 'failed';
  }

  constructor(private readonly o: SttSocketOptions) {
    this.ready = new Promise((r) => (this.firstResolve = r));
    this.connect();
    const stallMs = o.stallMs ?? STT_STALL_MS;
    if (o.keepalive || stallMs > 0) {
      const every = Math.max(20, Math.min(o.keepalive?.idleMs ?? 1000, stallMs > 0 ? stallMs : 1000, 1000) / 2);
      this.keepTimer = setInterval(() => this.tick(), every);
      this.keepTimer.unref?.();
    }
  }

  /** Send caller audio (gathered into `chunk`-sized messages when set; buffered while reconnecting). */
  sendAudio(pcm: Int16Array): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    this.lastAudioAt = Date.now();
    this.lastCallerAudioAt = this.lastAudioAt;
    const chunk = this.o.chunk;
    if (!chunk) return this.sendMessage(pcm);
    if (chunk.liveAfterSpeechMs) {
      if (rms(pcm) > LOUD_RMS) this.sinceLoud = 0;
      else {
        this.sinceLoud += pcm.length;
        if (this.sinceLoud <= (chunk.liveAfterSpeechMs * SAMPLE_RATE) / 1000) {
          this.flushAudio();
          return this.sendMessage(pcm);
        }
      }
    }
    const size = (chunk.ms * SAMPLE_RATE) / 1000;
    for (let off = 0; off < pcm.length; ) {
      if (!this.acc) {
        this.acc = new Int16Array(size);
        this.accN = 0;
        this.accSince = this.lastAudioAt;
      }
      const take = Math.min(size - this.accN, pcm.length - off);
      this.acc.set(pcm.subarray(off, off + take), this.accN);
      this.accN += take;
      off += take;
      if (this.accN === size) this.flushAudio();
    }
  }

  /** Send the chunk gathered so far now (padded with silence to `chunk.minMs`): before anything else goes out, at
   * the end of the caller's speech, and when the caller's audio stopped. */
  flushAudio(): void {
    const acc = this.acc;
    if (!acc) return;
    this.acc = null;
    if (this.accN === 0) return;
    // the gathered chunk is zeros past accN: padding is a longer view of it
    const len = Math.min(acc.length, Math.max(this.accN, ((this.o.chunk?.minMs ?? 0) * SAMPLE_RATE) / 1000));
    this.sendMessage(len === acc.length ? acc : acc.subarray(0, len));
  }

  /** One audio message to the vendor (or into the reconnect buffer). */
  private sendMessage(pcm: Int16Array): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    const frame = this.o.encodeAudio ? this.o.encodeAudio(pcm) : pcmBytes(pcm);
    if (this.state === 'open' && this.ws?.readyState === WebSocket.OPEN) {
      // a vendor that stops reading: drop audio rather than queue it without bound in the socket
      if (this.ws.bufferedAmount > MAX_IN_FLIGHT_BYTES) {
        this.dropped += pcm.length;
        return;
      }
      this.ws.send(frame, { binary: typeof frame !== 'string' });
      return;
    }
    this.buffer.push(frame);
    this.bufferSizes.push(pcm.length);
    this.bufferedSamples += pcm.length;
    const max = ((this.o.maxBufferMs ?? 5000) * SAMPLE_RATE) / 1000;
    while (this.bufferedSamples > max && this.buffer.length) {
      this.buffer.shift();
      const n = this.bufferSizes.shift() ?? 0;
      this.bufferedSamples -= n;
      this.dropped += n;
    }
  }

  /** Send a control message now (dropped when not connected: control messages are only meaningful live). */
  sendControl(msg: unknown): boolean {
    if (this.state !== 'open' || this.ws?.readyState !== WebSocket.OPEN) return false;
    this.flushAudio();
    this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
    return true;
  }

  /** The adapter saw a vendor error message that is a refusal: report it and stop. */
  refuse(reason: string): void {
    this.fail(reason);
  }

  /** Close the stream: vendor's end message, wait briefly for the vendor's close, then terminate. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    if (this.state === 'open') this.flushAudio();
    const wasOpen = this.state === 'open';
    this.state = 'closed';
    this.stopTimers();
    this.buffer = [];
    this.bufferSizes = [];
    this.bufferedSamples = 0;
    this.firstResolve?.();
    const ws = this.ws;
    if (!ws) return;
    if (wasOpen && ws.readyState === WebSocket.OPEN) {
      const m = this.o.closeMessage?.();
      if (m != null) ws.send(m, { binary: typeof m !== 'string' });
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          ws.terminate();
          resolve();
        }, 1000);
        ws.once('close', () => {
          clearTimeout(t);
          resolve();
        });
        if (m == null) ws.close(1000);
      });
    } else {
      ws.terminate();
    }
  }

  // ── internals ────────────────────────────────────────────────────────────────────────────────────────
  private connect(): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    this.state = 'connecting';
    const ws = new WebSocket(this.o.url, { headers: this.o.headers, handshakeTimeout: this.o.connectTimeoutMs ?? 5000, perMessageDeflate: false });
    this.ws = ws;
    let settled = false;
    ws.on('unexpected-response', (req, res) => {
      settled = true;
      const status = res.statusCode ?? 0;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (body.length < 600) body += d;
      });
      const done = () => {
        req.destroy();
        if (ws !== this.ws) return;
        const reason = `HTTP ${status}${describeBody(body)}`;
        if (isRefusalStatus(status)) this.fail(reason);
        else this.retry(reason);
      };
      res.on('end', done);
      res.on('error', done);
    });
    ws.on('open', () => {
      if (ws !== this.ws || this.state !== 'connecting') return;
      this.state = 'open';
      const reconnect = this.opens > 0;
      this.opens++;
      this.failures = 0;
      this.o.onOpen?.(this, reconnect);
      for (const f of this.buffer) ws.send(f, { binary: typeof f !== 'string' });
      this.buffer = [];
      this.bufferSizes = [];
      this.bufferedSamples = 0;
      this.lastAudioAt = Date.now();
      this.lastHeardAt = Date.now();
      this.firstResolve?.();
      this.firstResolve = null;
    });
    ws.on('message', (data, isBinary) => {
      if (ws !== this.ws || this.state !== 'open') return;
      this.lastHeardAt = Date.now();
      this.o.onMessage(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), isBinary);
    });
    ws.on('error', () => {
      /* the close event follows */
    });
    ws.on('close', (code, r) => {
      if (ws !== this.ws || settled) return;
      if (this.state === 'closed' || this.state === 'failed') return;
      const reason = r.toString();
      if (this.o.isFatalClose?.(code, reason)) return this.fail(`closed ${code}${reason ? ` ${reason}` : ''}`);
      this.retry(`closed ${code}${reason ? ` ${reason}` : ''}`);
    });
  }

  private retry(reason: string): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    this.failures++;
    if (this.failures > (this.o.maxReconnects ?? 5)) return this.fail(`connection lost and ${this.failures - 1} reconnects failed (last: ${reason})`);
    this.state = 'waiting';
    const delay = this.failures === 1 ? 0 : Math.min(2000, 100 * 2 ** (this.failures - 2));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, delay);
  }

  private fail(reason: string): void {
    if (this.state === 'failed' || this.state === 'closed') return;
    this.state = 'failed';
    this.stopTimers();
    this.acc = null;
    this.buffer = [];
    this.bufferSizes = [];
    this.bufferedSamples = 0;
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) ws.terminate();
    const error: EngineError = { message: `${this.o.vendor} STT refused: ${reason}`, retryable: false, fatal: true };
    this.o.emit({ type: 'error', error });
    this.firstResolve?.();
    this.firstResolve = null;
  }

  private tick(): void {
    if (this.state !== 'open') return;
    const stallMs = this.o.stallMs ?? STT_STALL_MS;
    const now = Date.now();
    // audio went out after the last thing heard, and nothing came back for stallMs: the stream is hung
    if (stallMs > 0 && now - this.lastHeardAt >= stallMs && this.lastCallerAudioAt > this.lastHeardAt) {
      this.stalls++;
      const ws = this.ws;
      this.ws = null;
      ws?.terminate();
      this.retry(`stalled: no message for ${Math.round((now - this.lastHeardAt) / 1000)} s`);
      return;
    }
    // the caller's audio stopped part-way into a chunk: what was gathered goes out
    if (this.acc && this.o.chunk && now - this.accSince >= this.o.chunk.ms) this.flushAudio();
    const k = this.o.keepalive;
    if (!k) return;
    if (Date.now() - this.lastAudioAt < k.idleMs) return;
    k.send(this);
    this.lastAudioAt = Date.now();
  }

  /** Silence for keepalive (sent as audio but not counted as caller audio). */
  sendSilence(ms: number): void {
    if (this.state !== 'open' || this.ws?.readyState !== WebSocket.OPEN) return;
    this.flushAudio();
    const pcm = new Int16Array(Math.round((ms * SAMPLE_RATE) / 1000));
    const frame = this.o.encodeAudio ? this.o.encodeAudio(pcm) : pcmBytes(pcm);
    this.ws.send(frame, { binary: typeof frame !== 'string' });
  }

  private stopTimers(): void {
    if (this.keepTimer) clearInterval(this.keepTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.keepTimer = null;
    this.retryTimer = null;
  }
}

/** RMS above −56 dBFS (the VAD's "plainly silent" level, media/vad DEFAULT_SILENCE_RMS): speech or noise. */
const LOUD_RMS = 0.0015 * 32768;

/** A short, key-free description of a vendor's error body. */
function describeBody(body: string): string {
  const text = body.trim();
  if (!text) return '';
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const pick = (v: unknown): string | undefined => (typeof v === 'string' ? v : v && typeof v === 'object' ? pick((v as Record<string, unknown>).message) : undefined);
    const m = pick(j.err_msg) ?? pick(j.description) ?? pick(j.error_message) ?? pick(j.message) ?? pick(j.error) ?? pick(j.detail);
    if (m) return `: ${m.slice(0, 200)}`;
  } catch {
    /* not JSON */
  }
  return `: ${text.slice(0, 200)}`;
}

/** Wait for the first connection, but never hold the call longer than `ms`. */
export async function openWithin(sock: SttSocket, ms = 3000): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  await Promise.race([sock.ready, new Promise<void>((r) => (t = setTimeout(r, ms)))]);
  if (t) clearTimeout(t);
}

/** Split a comma list / array of terms into trimmed non-empty terms. */
export function termsOf(list: string[]): string[] {
  return list.map((t) => t.trim()).filter(Boolean);
}

/** A stream whose engine refused before connecting (no key): one fatal error, then nothing. */
export function refusedStream(emit: (ev: SttEvent) => void, vendor: string, reason: string): SttStream {
  queueMicrotask(() => emit({ type: 'error', error: { message: `${vendor} STT refused: ${reason}`, retryable: false, fatal: true } }));
  return { write: () => {}, finalize: () => {}, close: async () => {} };
}

/** A vendor's text frame as JSON (null for binary frames, unparsable text or a non-object). */
export function jsonFrame<T extends object>(data: Buffer, isBinary = false): T | null {
  if (isBinary) return null;
  try {
    const v: unknown = JSON.parse(data.toString('utf8'));
    return v && typeof v === 'object' ? (v as T) : null;
  } catch {
    return null;
  }
}

/**
 * The turn state the turn-detecting adapters keep between vendor messages: whether the caller's turn has started,
 * whether an eager end is pending, and the last interim text (so an unchanged interim is not emitted twice).
 */
export class TurnTracker {
  inTurn = false;
  eager = false;
  private lastInterim = '';
  constructor(private readonly emit: (ev: SttEvent) => void) {}

  /** The vendor says the caller started speaking. */
  start(): void {
    this.inTurn = true;
    this.emit({ type: 'speech_started' });
  }

  /** The turn's text so far: speech_started first if the turn had not started, then the interim when it changed
   *  (`interim` false: only the start). */
  update(text: string, interim = true): void {
    if (!this.inTurn && text) this.start();
    if (interim && text && text !== this.lastInterim) {
      this.lastInterim = text;
      this.emit({ type: 'interim', text });
    }
  }

  eagerEnd(text: string): void {
    this.eager = true;
    this.emit({ type: 'eager_turn_end', text });
  }

  /** The caller resumed after an eager end: turn_resumed only if an eager end was emitted. */
  resume(): void {
    if (this.eager) this.emit({ type: 'turn_resumed' });
    this.eager = false;
  }

  reset(): void {
    this.inTurn = false;
    this.eager = false;
    this.lastInterim = '';
  }

  /** The turn ended: reset, then turn_end with the text (nothing for an empty turn). */
  end(text: string): void {
    this.reset();
    if (text) this.emit({ type: 'turn_end', text });
  }
}
