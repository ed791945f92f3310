// The carrier side of a media stream for the carriers of the scenario table (Plivo, Telnyx, Vonage, Exotel):
// the same behaviour as twilio-media.ts — dial our WebSocket, announce the stream, send the caller's audio in real
// time (silence when the script is empty), play the agent's audio out of a buffer drained in real time, echo marks
// once the audio before them has played, empty the buffer on a clear — with each carrier's wire dialect (message
// names and casing, µ-law or raw 16-bit PCM, base64 JSON or binary frames) supplied by its fake (test/fakes/<id>.ts).
import WebSocket from 'ws';
import { decodeMulaw, encodeMulaw } from '../../media/audio/mulaw.ts';
import { resample } from '../../core/audio/resample.ts';
import { CallerScript, tone8k } from './caller-script.ts';

/** What the service sent, as the fake carrier understood it. */
export type DialectIn = { kind: 'audio'; bytes: Uint8Array } | { kind: 'mark'; name: string } | { kind: 'clear' } | { kind: 'other' };

export interface PhoneDialect {
  /** 'mulaw' (1 byte per sample) or 'l16' (2 bytes per sample, little-endian) */
  codec: 'mulaw' | 'l16';
  rate: 8000 | 16000;
  /** ms of caller audio per message */
  callerMs: number;
  /** the messages opening the stream (connected, start, …) */
  hello(): Array<string | Buffer>;
  /** one message of caller audio (codec bytes) */
  media(bytes: Uint8Array, chunk: number, timestampMs: number): string | Buffer;
  dtmf(digit: string): string;
  /** the echo of a mark once its audio has played */
  markEcho(name: string): string | null;
  /** the carrier's acknowledgement of a clear (Plivo `clearedAudio`), if any */
  clearEcho?(): string | null;
  /** the message ending the stream (null: the carrier just closes the socket) */
  stop(): string | null;
  parse(data: Buffer, isBinary: boolean): DialectIn;
}

type Queued = { kind: 'audio'; bytes: Uint8Array } | { kind: 'mark'; name: string };

export class FakePhoneStream {
  readonly ws: WebSocket;
  /** every text message the service sent (parsed JSON), in order */
  readonly received: Array<Record<string, unknown>> = [];
  readonly payloadSizes: number[] = [];
  binaryFrames = 0;
  heardBytes = 0;
  clears = 0;
  readonly echoed: Array<{ name: string; played: boolean }> = [];
  closeCode: number | null = null;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  private readonly queue: Queued[] = [];
  private heard: Uint8Array[] = [];
  private readonly caller = new CallerScript();
  private timer: NodeJS.Timeout | null = null;
  private t0 = 0;
  private ticks = 0;
  private chunk = 0;
  private stopped = false;
  private readonly bytesPerMs: number;

  constructor(url: string, readonly dialect: PhoneDialect, opts: { headers?: Record<string, string> } = {}) {
    this.bytesPerMs = ((dialect.codec === 'l16' ? 2 : 1) * dialect.rate) / 1000;
    this.ws = new WebSocket(url, opts.headers ? { headers: opts.headers } : {});
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.halt();
        resolve({ code, reason: reason.toString() });
      });
    });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => {
        for (const m of dialect.hello()) this.ws.send(m);
        this.t0 = performance.now();
        this.timer = setInterval(() => this.tick(), 10);
        resolve();
      });
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      this.ws.once('close', () => reject(new Error('closed before open')));
    });
    this.opened.catch(() => {});
    this.ws.on('message', (data: Buffer, isBinary) => {
      if (!isBinary) {
        try {
          this.received.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
        } catch {
          /* not JSON */
        }
      } else this.binaryFrames++;
      const m = dialect.parse(data, isBinary);
      if (m.kind === 'audio') {
        this.payloadSizes.push(m.bytes.length);
        this.queue.push({ kind: 'audio', bytes: m.bytes });
      } else if (m.kind === 'mark') {
        this.queue.push({ kind: 'mark', name: m.name });
        this.echoReady();
      } else if (m.kind === 'clear') {
        this.clears++;
        for (const q of this.queue.splice(0)) if (q.kind === 'mark') this.echo(q.name, false);
        const ack = dialect.clearEcho?.();
        if (ack) this.send(ack);
      }
    });
  }

  private send(m: string | Buffer): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(m);
  }

  private echo(name: string, played: boolean): void {
    this.echoed.push({ name, played });
    const e = this.dialect.markEcho(name);
    if (e) this.send(e);
  }

  private echoReady(): void {
    while (this.queue.length && this.queue[0]!.kind === 'mark') this.echo((this.queue.shift() as { name: string }).name, true);
  }

  private tick(): void {
    const due = Math.floor((performance.now() - this.t0) / 20);
    const perCaller = Math.max(1, Math.round(this.dialect.callerMs / 20));
    while (this.ticks < due) {
      this.ticks++;
      this.playout(20 * this.bytesPerMs);
      if (this.ticks % perCaller === 0) this.sendCaller();
    }
  }

  private playout(n: number): void {
    let left = n;
    while (left > 0 && this.queue.length) {
      const q = this.queue[0]!;
      if (q.kind === 'mark') {
        this.echoReady();
        continue;
      }
      const take = Math.min(left, q.bytes.length);
      this.heard.push(q.bytes.subarray(0, take));
      this.heardBytes += take;
      left -= take;
      if (take === q.bytes.length) this.queue.shift();
      else q.bytes = q.bytes.subarray(take);
    }
    this.echoReady();
  }

  private sendCaller(): void {
    const size = Math.round(this.dialect.callerMs * this.bytesPerMs);
    const out = this.caller.take(new Uint8Array(size).fill(this.dialect.codec === 'mulaw' ? 0xff : 0));
    this.chunk++;
    this.send(this.dialect.media(out, this.chunk, (this.chunk - 1) * this.dialect.callerMs));
  }

  /** Queue caller audio (s16 at `rate`); resolves once it has all been sent. */
  say(pcm: Int16Array, rate: number): Promise<void> {
    const at = rate === this.dialect.rate ? pcm : resample(pcm, rate, this.dialect.rate);
    const bytes = this.dialect.codec === 'mulaw' ? encodeMulaw(at) : new Uint8Array(at.buffer, at.byteOffset, at.byteLength).slice();
    return this.caller.push(bytes);
  }

  /** A 440 Hz tone (speech for the energy-VAD fake engines). */
  tone(ms: number, amplitude = 8000): Promise<void> {
    return this.say(tone8k(ms, amplitude), 8000);
  }

  silence(ms: number): Promise<void> {
    return this.say(new Int16Array(Math.round((ms * 8000) / 1000)), 8000);
  }

  dtmf(digit: string): void {
    this.send(this.dialect.dtmf(digit));
  }

  /** The call ends: the carrier's stop message (if it has one), then the socket closes. */
  hangup(): void {
    if (this.stopped) return;
    this.stopped = true;
    const stop = this.dialect.stop();
    if (stop) this.send(stop);
    this.halt();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
  }

  private halt(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.caller.release();
  }

  get heardMs(): number {
    return this.heardBytes / this.bytesPerMs;
  }

  get bufferedMs(): number {
    let n = 0;
    for (const q of this.queue) if (q.kind === 'audio') n += q.bytes.length;
    return n / this.bytesPerMs;
  }

  /** agent audio played so far, decoded to s16 at the dialect's rate */
  heardPcm(): Int16Array {
    const all = new Uint8Array(this.heardBytes);
    let o = 0;
    for (const h of this.heard) {
      all.set(h, o);
      o += h.length;
    }
    return this.dialect.codec === 'mulaw' ? decodeMulaw(all) : new Int16Array(all.buffer, 0, all.length >> 1);
  }
}
