// What the vendor TTS adapters share: the endpoint built from `<ID>_BASE_URL` (scheme/host/port[/prefix] replaced,
// the vendor's own path and query kept; ws/wss follow http/https), a bounded per-request audio channel between
// the socket's message handler and the synthesize() reader, base64 PCM decoding, and one WebSocket per call that
// is opened early, kept warm, reopened when the vendor closes it, and turns a refusal into a fatal engine error.
import WebSocket from 'ws';
import type { EngineError } from '../types.ts';
import { engineError } from '../llm/openai.ts';

export type VendorError = Error & { engineError: EngineError };

/** `base` = http(s)://host[:port][/prefix]; path and query are the vendor's own. `ws` swaps http→ws, https→wss. */
export function vendorUrl(base: string, path: string, query: Record<string, string | number | boolean | undefined> = {}, ws = false): string {
  const root = base.replace(/\/+$/, '');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.append(k, String(v));
  const s = q.toString();
  const url = `${root}${path}${s ? `?${s}` : ''}`;
  return ws ? url.replace(/^http(s?):/i, 'ws$1:') : url;
}

export const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** A refusal (bad key, unknown voice/model, quota): the call cannot go on with this engine. */
export function refusal(vendor: string, reason: string): VendorError {
  return engineError(`${vendor} TTS refused: ${reason}`, false, true);
}
/** A transient failure (network, 5xx, 429, dropped socket). */
export function transient(vendor: string, reason: string): VendorError {
  return engineError(`${vendor} TTS unavailable: ${reason}`, true, false);
}

/** Words that mark an in-band vendor error as a refusal rather than a blip. */
const REFUSAL = /unauthori[sz]ed|forbidden|invalid[ _-]?(api[ _-]?)?key|api key|authenticat|permission|quota|credit|payment|insufficient|not[ _-]?found|unknown (voice|model|speaker)|invalid (voice|model|speaker)|voice[ _-]?(id)?[ _-]?(not|does)|model[ _-]?(id)?[ _-]?(not|does)|unsupported model|not allowed|limit/i;

export function classifyVendorError(vendor: string, reason: string, status?: number): VendorError {
  if (status === 401 || status === 402 || status === 403 || status === 404) return refusal(vendor, reason);
  if (status !== undefined && (status === 429 || status >= 500)) return transient(vendor, reason);
  return REFUSAL.test(reason) ? refusal(vendor, reason) : transient(vendor, reason);
}

/** Decode little-endian s16 PCM from base64, carrying an odd trailing byte into the next piece. */
export class PcmDecoder {
  private odd: Buffer | null = null;
  push(data: Buffer): Int16Array {
    let buf = data;
    if (this.odd) {
      buf = Buffer.concat([this.odd, buf]);
      this.odd = null;
    }
    if (buf.length & 1) {
      this.odd = buf.subarray(buf.length - 1);
      buf = buf.subarray(0, buf.length - 1);
    }
    // the decoded bytes themselves when 2-aligned (a fresh buffer: Buffer.from / concat / a socket message), else a copy
    if (buf.byteOffset % 2 === 0) return new Int16Array(buf.buffer, buf.byteOffset, buf.length / 2);
    const out = new Int16Array(buf.length / 2);
    new Uint8Array(out.buffer).set(buf);
    return out;
  }
  pushBase64(b64: string): Int16Array {
    return this.push(Buffer.from(b64, 'base64'));
  }
}

/** Audio of one request, from the socket handler to the synthesize() reader. Bounded: a reader that stops
 *  reading cannot make it grow past `maxSamples` (the request fails instead). */
export class AudioChannel {
  private readonly items: Int16Array[] = [];
  private queued = 0;
  private wake: (() => void) | null = null;
  private ended = false;
  private error: Error | null = null;
  /** samples handed out so far (word timings are offsets from the start of this request's audio) */
  produced = 0;
  constructor(private readonly maxSamples = 24000 * 120) {}

  get done(): boolean {
    return this.ended || this.error !== null;
  }
  push(pcm: Int16Array): void {
    if (this.done || pcm.length === 0) return;
    this.items.push(pcm);
    this.queued += pcm.length;
    this.produced += pcm.length;
    if (this.queued > this.maxSamples) this.fail(engineError('TTS audio backlog exceeded its bound', false, false));
    this.notify();
  }
  end(): void {
    this.ended = true;
    this.notify();
  }
  fail(err: Error): void {
    if (this.done) return;
    this.error = err;
    this.items.length = 0;
    this.notify();
  }
  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
  async *read(signal: AbortSignal): AsyncIterable<Int16Array> {
    const onAbort = () => this.notify();
    signal.addEventListener('abort', onAbort);
    try {
      for (;;) {
        if (signal.aborted) return;
        const next = this.items.shift();
        if (next) {
          this.queued -= next.length;
          yield next;
          continue;
        }
        if (this.error) throw this.error;
        if (this.ended) return;
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

export interface VendorSocketOptions {
  vendor: string;
  url: string;
  headers: Record<string, string>;
  onMessage(data: WebSocket.RawData, isBinary: boolean): void;
  /** the socket closed without close() (vendor idle timeout, network): settle requests in flight */
  onDrop(err: VendorError): void;
  /** the socket (re)opened: send per-connection configuration (Sarvam config) */
  onOpen?(send: (data: string) => void): void;
  /** keep the connection warm while idle: a vendor keepalive message, or null for a WebSocket ping (default) */
  keepalive?: () => string | null;
  keepaliveMs?: number;
  connectTimeoutMs?: number;
  /** give up reopening after this many consecutive failed attempts (a later request tries again) */
  maxReconnects?: number;
  /** nothing heard for this long after a request was sent = a stalled stream: dropped and reopened (default 10 000) */
  stallMs?: number;
}

/** The stall bound of every WebSocket TTS (see VendorSocket). */
export const TTS_STALL_MS = 10_000;

/**
 * One WebSocket to a vendor for the whole call. open() connects (or joins the connection under way); when the
 * vendor closes it the socket is reopened at once (backoff on repeated failures) so the next reply pays no
 * handshake; an upgrade refused with 401/402/403/404 or a policy close (1008) is fatal and sticks. A stalled stream
 * (open, but no vendor message for `stallMs` = 10 s after the last thing sent) is handled like a dropped one: the
 * requests in flight fail as transient (the turn's text goes unspoken, the call goes on) and the socket is
 * reopened, so a hung vendor costs the caller at most ≈ 10 s of silence per hang, never the rest of the call.
 */
export class VendorSocket {
  private ws: WebSocket | null = null;
  private opening: Promise<WebSocket> | null = null;
  private closed = false;
  private fatal: VendorError | null = null;
  private keepTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private stallTimer: NodeJS.Timeout | null = null;
  /** when the newest message not yet followed by any vendor message was sent (0: nothing unanswered); the clock
   *  restarts on every send, so a vendor that ignores one message (a cancel) cannot fail the next request early */
  private unansweredSince = 0;
  /** connections opened so far (tests: reconnects) */
  opens = 0;
  /** connections dropped because the vendor went quiet after a request */
  stalls = 0;

  constructor(private readonly o: VendorSocketOptions) {}

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** The refusal that stopped this engine, if any. */
  get refused(): VendorError | null {
    return this.fatal;
  }

  async open(): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.closed) throw transient(this.o.vendor, 'engine closed');
    if (this.isOpen) return;
    if (!this.opening) {
      this.opening = this.connect().finally(() => {
        this.opening = null;
      });
    }
    await this.opening;
  }

  /** Send on the open socket; false when it is not open (the caller's request fails as transient). */
  send(data: string): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(data);
    this.unansweredSince = Date.now();
    return true;
  }

  /** Mark the engine refused (an in-band error said so) and close the socket. */
  refuse(err: VendorError): void {
    this.fatal = err;
    this.teardown();
  }

  /** Drop the current connection and open a fresh one (xAI: stale generation that cannot be cleared). */
  recycle(): void {
    const ws = this.ws;
    if (!ws) return;
    this.ws = null;
    ws.removeAllListeners();
    ws.on('error', () => {});
    ws.terminate();
    this.stopKeepalive();
    this.scheduleReconnect(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.teardown();
  }

  private teardown(): void {
    this.stopKeepalive();
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => {});
      if (ws.readyState === WebSocket.OPEN) ws.close(1000);
      else ws.terminate();
    }
  }

  private connect(): Promise<WebSocket> {
    const { vendor } = this.o;
    return new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(this.o.url, { headers: this.o.headers, handshakeTimeout: this.o.connectTimeoutMs ?? 10_000, perMessageDeflate: false });
      let settled = false;
      const fail = (err: VendorError) => {
        if (settled) return;
        settled = true;
        ws.removeAllListeners();
        ws.on('error', () => {});
        ws.terminate();
        if (err.engineError.fatal) this.fatal = err;
        reject(err);
      };
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          if (body.length < 500) body += d.toString();
        });
        res.on('end', () => fail(classifyVendorError(vendor, `HTTP ${res.statusCode}${body ? `: ${errorText(body)}` : ''}`, res.statusCode)));
        res.on('error', () => fail(classifyVendorError(vendor, `HTTP ${res.statusCode}`, res.statusCode)));
      });
      ws.once('error', (err) => fail(transient(vendor, err.message)));
      ws.once('open', () => {
        if (settled) return;
        settled = true;
        if (this.closed) {
          ws.close(1000);
          reject(transient(vendor, 'engine closed'));
          return;
        }
        ws.removeAllListeners();
        this.attach(ws);
        resolve(ws);
      });
    });
  }

  private attach(ws: WebSocket): void {
    this.ws = ws;
    this.opens++;
    const openedAt = Date.now();
    this.unansweredSince = 0;
    ws.on('message', (data, isBinary) => {
      this.unansweredSince = 0;
      this.o.onMessage(data, isBinary);
    });
    const stallMs = this.o.stallMs ?? TTS_STALL_MS;
    if (stallMs > 0) {
      this.stallTimer = setInterval(() => this.checkStall(ws, stallMs), Math.max(50, Math.min(1000, stallMs / 4)));
      this.stallTimer.unref();
    }
    ws.on('error', () => {}); // 'close' follows
    ws.on('close', (code, reasonBuf) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopKeepalive();
      const reason = reasonBuf.toString() || `closed (${code})`;
      const err = code === 1008 || (code >= 4001 && code <= 4003) ? refusal(this.o.vendor, reason) : transient(this.o.vendor, `connection closed: ${reason}`);
      if (err.engineError.fatal) this.fatal = err;
      this.o.onDrop(err);
      if (err.engineError.fatal) return;
      // a connection that lived a while is simply reopened; one closed right after opening counts as a failure
      // (backoff, then give up until the next request) so a vendor that keeps closing cannot spin a loop
      if (Date.now() - openedAt >= 1000) this.failures = 0;
      else if (++this.failures >= (this.o.maxReconnects ?? 5)) return;
      this.scheduleReconnect(this.failures ? Math.min(5000, 100 * 2 ** this.failures) : 0);
    });
    this.o.onOpen?.((d) => ws.send(d));
    const every = this.o.keepaliveMs ?? 15_000;
    this.keepTimer = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const msg = this.o.keepalive?.() ?? null;
      if (msg !== null) ws.send(msg);
      else ws.ping();
    }, every);
    this.keepTimer.unref();
  }

  private stopKeepalive(): void {
    if (this.keepTimer) clearInterval(this.keepTimer);
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.keepTimer = null;
    this.stallTimer = null;
  }

  /** A request went out and the vendor has said nothing since, for stallMs: drop the socket as if it had closed. */
  private checkStall(ws: WebSocket, stallMs: number): void {
    if (this.ws !== ws || !this.unansweredSince) return;
    const quietMs = Date.now() - this.unansweredSince;
    if (quietMs < stallMs) return;
    this.stalls++;
    this.unansweredSince = 0;
    this.ws = null;
    this.stopKeepalive();
    ws.removeAllListeners();
    ws.on('error', () => {});
    ws.terminate();
    this.o.onDrop(transient(this.o.vendor, `stalled: no message for ${Math.round(quietMs / 1000)} s`));
    this.scheduleReconnect(0);
  }

  private scheduleReconnect(delayMs: number): void {
    if (this.closed || this.fatal || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.closed || this.fatal || this.isOpen) return;
      this.open().catch(() => {
        this.failures++;
        if (this.failures < (this.o.maxReconnects ?? 5)) this.scheduleReconnect(Math.min(5000, 100 * 2 ** this.failures));
      });
    }, delayMs);
    this.reconnectTimer.unref();
  }
}

/** The PCM after a WAV header (its `data` chunk); bytes without a RIFF header are returned as they are. */
export function stripWavHeader(b: Buffer): Buffer {
  if (b.length < 44 || b.subarray(0, 4).toString('latin1') !== 'RIFF') return b;
  const at = b.indexOf('data', 12, 'latin1');
  return at >= 0 && at + 8 <= b.length ? b.subarray(at + 8) : b.subarray(44);
}

/** The human part of a vendor's JSON error body, else the text itself (bounded). */
export function errorText(body: string): string {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    const d = j.detail as Record<string, unknown> | string | undefined;
    const e = j.error as Record<string, unknown> | string | undefined;
    const pick = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return (
      pick(d) ?? pick((d as Record<string, unknown> | undefined)?.message) ?? pick(e) ?? pick((e as Record<string, unknown> | undefined)?.message) ?? pick(j.message) ?? body.slice(0, 300)
    ).slice(0, 300);
  } catch {
    return body.slice(0, 300);
  }
}

/**
 * Word end times from character alignment (ElevenLabs): chars with start and duration in ms, relative to the
 * audio of the message that carried them (`offsetSamples` = where that audio starts in the chunk). A word split
 * across messages is completed by the next message; flush() gives the last word at the chunk's end.
 */
export class CharAligner {
  private word = '';
  private end = 0;
  push(chars: string[], startMs: number[], durMs: number[], offsetSamples: number): Array<{ word: string; endSample: number }> {
    const out: Array<{ word: string; endSample: number }> = [];
    for (let i = 0; i < chars.length; i++) {
      const ch = chars[i] ?? '';
      if (/^\s*$/.test(ch)) {
        if (this.word) out.push({ word: this.word, endSample: this.end });
        this.word = '';
        continue;
      }
      this.word += ch;
      this.end = offsetSamples + Math.round((((startMs[i] ?? 0) + (durMs[i] ?? 0)) * 24000) / 1000);
    }
    return out;
  }
  flush(): Array<{ word: string; endSample: number }> {
    const out = this.word ? [{ word: this.word, endSample: this.end }] : [];
    this.word = '';
    return out;
  }
}

/** A vendor's WebSocket message as a JSON object (null for unparsable text or a non-object). */
export function jsonMessage<T extends object = Record<string, unknown>>(data: WebSocket.RawData): T | null {
  try {
    const v: unknown = JSON.parse(data.toString());
    return v && typeof v === 'object' ? (v as T) : null;
  } catch {
    return null;
  }
}
