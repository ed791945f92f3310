// The carrier side of a media stream, as Twilio (and, with flavour 'smartflo', Smartflo) runs it: it dials our
// WebSocket, says `connected`, sends `start` with the stream's custom parameters, then streams the caller's audio
// as 8 kHz µ-law `media` in real time (Twilio: 20 ms payloads; Smartflo ~100 ms), silence when the script is empty.
// Agent audio we receive goes into a playout buffer drained in real time (20 ms per tick); a `mark` is echoed when
// the audio before it has been played; `clear` empties the buffer (pending marks are echoed at once, as Twilio
// does); `stop` ends the stream on hang-up or when the REST side updates the call.
import WebSocket from 'ws';
import { decodeMulaw, encodeMulaw } from '../../media/audio/mulaw.ts';
import { resample } from '../../core/audio/resample.ts';
import { CallerScript, tone8k } from './caller-script.ts';

export interface FakeStreamStart {
  callSid: string;
  accountSid?: string;
  streamSid?: string;
  customParameters?: Record<string, string>;
  /** Smartflo only */
  from?: string;
  to?: string;
  direction?: string;
}

export interface FakeStreamOptions {
  flavour?: 'twilio' | 'smartflo';
  /** ms of caller audio per `media` message (Twilio 20, Smartflo 100) */
  payloadMs?: number;
  /** Smartflo: who says `connected` ('carrier' sends it; 'bot' waits for ours first) */
  connected?: 'carrier' | 'bot';
  headers?: Record<string, string>;
  /** network + jitter-buffer latency: agent audio becomes playable this long after it arrived */
  playoutDelayMs?: number;
  /** false: a carrier that plays audio but never echoes marks */
  echoMarks?: boolean;
}

type Queued = { kind: 'audio'; bytes: Uint8Array; at: number } | { kind: 'mark'; name: string };

export class FakeCarrierStream {
  readonly flavour: 'twilio' | 'smartflo';
  readonly ws: WebSocket;
  readonly streamSid: string;
  /** every JSON message the service sent, in order */
  readonly received: Array<Record<string, unknown>> = [];
  /** sizes (bytes) of each received media payload */
  readonly payloadSizes: number[] = [];
  /** set to [] to record when each agent `media` message arrived (performance.now(); bench/webrtc's jitter) */
  arrivals: number[] | null = null;
  /** agent audio played out to the "caller" (µ-law bytes, in playout order) */
  private heard: Uint8Array[] = [];
  heardBytes = 0;
  /** marks echoed back, with whether their audio had really played (false: dropped by a clear) */
  readonly echoed: Array<{ name: string; played: boolean }> = [];
  clears = 0;
  /** agent audio bytes that were in the buffer when a clear dropped them */
  droppedBytes = 0;
  closeCode: number | null = null;
  closeReason = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  private readonly queue: Queued[] = [];
  private readonly caller = new CallerScript();
  private sentBytes = 0;
  private seq = 0;
  private chunk = 0;
  private timer: NodeJS.Timeout | null = null;
  private t0 = 0;
  private ticks = 0;
  private stopped = false;
  private readonly payloadBytes: number;
  private readonly playoutDelayMs: number;
  private readonly echoMarks: boolean;

  constructor(
    url: string,
    readonly start: FakeStreamStart,
    opts: FakeStreamOptions = {},
  ) {
    this.flavour = opts.flavour ?? 'twilio';
    this.playoutDelayMs = opts.playoutDelayMs ?? 0;
    this.echoMarks = opts.echoMarks ?? true;
    this.payloadBytes = Math.round(((opts.payloadMs ?? (this.flavour === 'smartflo' ? 100 : 20)) * 8000) / 1000);
    this.streamSid = start.streamSid ?? `MZ${Math.random().toString(16).slice(2, 18).padEnd(16, '0')}`;
    this.ws = new WebSocket(url, opts.headers ? { headers: opts.headers } : {});
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        this.halt();
        resolve({ code, reason: this.closeReason });
      });
    });
    this.ws.on('error', () => {});
    const waitConnected = opts.connected === 'bot';
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => {
        if (!waitConnected) this.begin();
        resolve();
      });
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      this.ws.once('close', () => reject(new Error('closed before open')));
    });
    this.opened.catch(() => {});
    let begun = !waitConnected;
    this.ws.on('message', (data) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(String(data)) as Record<string, unknown>;
      } catch {
        return;
      }
      this.received.push(m);
      if (m.event === 'connected' && !begun) {
        begun = true;
        this.begin();
      }
      this.onMessage(m);
    });
  }

  static connect(url: string, start: FakeStreamStart, opts?: FakeStreamOptions): FakeCarrierStream {
    return new FakeCarrierStream(url, start, opts);
  }

  private sendJson(m: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ ...m, sequenceNumber: String(++this.seq) }));
  }

  private begin(): void {
    if (this.flavour === 'twilio') this.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    else this.ws.send(JSON.stringify({ event: 'connected' }));
    const s = this.start;
    const start: Record<string, unknown> = {
      accountSid: s.accountSid ?? 'AC00000000000000000000000000000000',
      streamSid: this.streamSid,
      callSid: s.callSid,
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      customParameters: s.customParameters ?? {},
    };
    if (this.flavour === 'smartflo') Object.assign(start, { from: s.from ?? null, to: s.to ?? null, direction: s.direction ?? 'inbound' });
    this.sendJson({ event: 'start', streamSid: this.streamSid, start });
    this.t0 = performance.now();
    this.timer = setInterval(() => this.tick(), 10);
  }

  private onMessage(m: Record<string, unknown>): void {
    switch (m.event) {
      case 'media': {
        const payload = String((m.media as { payload?: unknown } | undefined)?.payload ?? '');
        const bytes = new Uint8Array(Buffer.from(payload, 'base64'));
        this.payloadSizes.push(bytes.length);
        this.arrivals?.push(performance.now());
        this.queue.push({ kind: 'audio', bytes, at: performance.now() });
        return;
      }
      case 'mark': {
        const name = String((m.mark as { name?: unknown } | undefined)?.name ?? '');
        this.queue.push({ kind: 'mark', name });
        this.echoReady();
        return;
      }
      case 'clear': {
        this.clears++;
        for (const q of this.queue.splice(0)) {
          if (q.kind === 'audio') this.droppedBytes += q.bytes.length;
          else this.echo(q.name, false);
        }
        return;
      }
      default:
        return;
    }
  }

  private echo(name: string, played: boolean): void {
    if (!this.echoMarks) return;
    this.echoed.push({ name, played });
    this.sendJson({ event: 'mark', streamSid: this.streamSid, mark: { name } });
  }

  /** echo the marks at the head of the buffer (all audio before them has played) */
  private echoReady(): void {
    while (this.queue.length && this.queue[0]!.kind === 'mark') this.echo((this.queue.shift() as { name: string }).name, true);
  }

  private tick(): void {
    const due = Math.floor((performance.now() - this.t0) / 20);
    while (this.ticks < due) {
      this.ticks++;
      this.playout(160);
      // caller audio: one payload every payloadBytes/8 ms
      if (((this.ticks * 160) % this.payloadBytes) === 0 || this.payloadBytes <= 160) this.sendCaller();
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
      if (q.at + this.playoutDelayMs > performance.now()) break; // not playable yet
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
    const out = this.caller.take(new Uint8Array(this.payloadBytes).fill(0xff));
    this.sentBytes += this.payloadBytes;
    this.chunk++;
    this.sendJson({
      event: 'media',
      streamSid: this.streamSid,
      media: { track: 'inbound', chunk: String(this.chunk), timestamp: String(Math.round((this.sentBytes - this.payloadBytes) / 8)), payload: Buffer.from(out).toString('base64') },
    });
  }

  /** Queue caller speech (s16 at `rate`, converted to 8 kHz µ-law); resolves when it has all been sent (or the stream ended). */
  say(pcm: Int16Array, rate = 8000): Promise<void> {
    if (this.closeCode !== null || this.stopped) return Promise.resolve();
    const bytes = encodeMulaw(rate === 8000 ? pcm : resample(pcm, rate, 8000));
    return this.caller.push(bytes);
  }

  /** A tone of `ms` at 440 Hz (speech for energy-VAD fakes). */
  tone(ms: number, amplitude = 8000): Promise<void> {
    return this.say(tone8k(ms, amplitude), 8000);
  }

  /** Wait `ms` of stream time (silence is sent meanwhile). */
  silence(ms: number): Promise<void> {
    return this.say(new Int16Array(Math.round((ms * 8000) / 1000)), 8000);
  }

  dtmf(digit: string): void {
    this.sendJson({ event: 'dtmf', streamSid: this.streamSid, dtmf: { track: 'inbound_track', digit } });
  }

  /** The call left the stream (hang-up, or a call update with new TwiML): `stop`, then the socket closes. */
  stop(reason = 'callended'): void {
    if (this.stopped) return;
    this.stopped = true;
    const stop: Record<string, unknown> = { accountSid: this.start.accountSid ?? 'AC00000000000000000000000000000000', callSid: this.start.callSid };
    if (this.flavour === 'smartflo') stop.reason = reason;
    this.sendJson({ event: 'stop', streamSid: this.streamSid, stop });
    this.halt();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
  }

  hangup(): void {
    this.stop('callended');
  }

  /** The stream is over: the clock stops, and whatever waits for caller audio to be sent is released. */
  private halt(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.caller.release();
  }

  /** agent audio buffered but not yet played (ms) */
  get bufferedMs(): number {
    let n = 0;
    for (const q of this.queue) if (q.kind === 'audio') n += q.bytes.length;
    return n / 8;
  }

  /** all agent audio played so far, decoded to 8 kHz s16 */
  heardPcm(): Int16Array {
    const all = new Uint8Array(this.heardBytes);
    let o = 0;
    for (const h of this.heard) {
      all.set(h, o);
      o += h.length;
    }
    return decodeMulaw(all);
  }

  get heardMs(): number {
    return this.heardBytes / 8;
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }
}
