// The family of carrier media streams shaped like Twilio Media Streams (Twilio, Smartflo): JSON text messages
// `connected` → `start` → `media`/`dtmf`/`mark` … → `stop` from the carrier; `media`, `mark`, `clear` to it. Audio is
// 8 kHz G.711 µ-law in base64 both ways. This class does the codec, the marks and the events; the carrier files
// (twilio.ts, smartflo.ts) only set their differences (payload size, sequence numbers, who says `connected`).
//
// Marks: after every frame of agent audio a `mark` named `m<n>` goes out; the carrier echoes it once that audio has
// been played to the caller. `playedMs()` is the position (ms into the agent audio handed to sendAudio) up to the
// last echoed mark, i.e. what the caller has actually heard. `clear` drops the carrier's buffer; the marks still
// pending then are echoed by the carrier too (Twilio does so), but their audio was never heard, so they are
// forgotten at the clear and their echoes ignored.
import type { WebSocket } from 'ws';
import { MulawDecoder, MulawEncoder, MULAW_FRAME_BYTES } from '../../audio/mulaw-stream.ts';
import { timed } from '../../stage-cpu.ts';
import type { CloseKind, LiveTransport, TransportEvent } from '../types.ts';

export interface CarrierStart {
  streamSid: string;
  callSid: string;
  accountSid: string;
  /** `<Parameter>` values of the TwiML `<Stream>` (Twilio) / the custom identifier (Smartflo) */
  customParameters: Record<string, string>;
  from: string | null;
  to: string | null;
  direction: string | null;
}

export interface CarrierStreamOptions {
  kind: string;
  /** µ-law bytes per outgoing `media` payload (a multiple of 160) */
  frameBytes?: number;
  /** add a `sequenceNumber` to our messages (Smartflo's examples carry one) */
  sequenceNumbers?: boolean;
  /** send `{"event":"connected"}` as soon as the socket is open (Smartflo: either side may speak first) */
  sendConnected?: boolean;
  /** on a normal close, wait this long at most for the carrier to play (echo the marks of) the audio sent */
  drainMs?: number;
  /** at most this many marks in flight (a carrier that never echoes them must not grow memory) */
  maxPendingMarks?: number;
  /** no echo of any mark this long after the first one was sent: the carrier does not echo marks */
  markSupportMs?: number;
  /** the audio codec both ways (default 8 kHz µ-law); positions are counted in its bytes */
  codec?: StreamCodec;
  /** the carrier echoes marks once played (default true); without them what was sent counts as played */
  marks?: boolean;
}

/** A carrier's audio encoding: decoder to 16 kHz, framing encoder from 24 kHz, and its bytes per millisecond. */
export interface StreamCodec {
  decoder: { decode(bytes: Uint8Array): Int16Array };
  encoder: { push(pcm: Int16Array): Uint8Array[]; flush(): Uint8Array[]; discard(): void; produced: number; readonly frameBytes: number };
  bytesPerMs: number;
}

const MAX_EARLY = 500;

export class CarrierStreamTransport implements LiveTransport {
  readonly kind: string;
  /** stage names of media/stage-cpu.ts */
  private readonly sendStage: string;
  start: CarrierStart | null = null;
  /** why the carrier stopped the stream (Smartflo `stop.reason`), for the logs */
  stopReason: string | null = null;
  /** DTMF digits received, in order */
  readonly digits: string[] = [];
  private readonly opts: Required<Omit<CarrierStreamOptions, 'codec'>>;
  private readonly decoder: StreamCodec['decoder'];
  private readonly encoder: StreamCodec['encoder'];
  private readonly bytesPerMs: number;
  private audioCb: ((pcm16k: Int16Array) => void) | null = null;
  private early: Int16Array[] | null = [];
  private eventCb: ((ev: TransportEvent) => void) | null = null;
  private earlyEvents: TransportEvent[] = [];
  private readonly closeCbs: Array<() => void> = [];
  private gone = false;
  private seq = 0;
  private markSeq = 0;
  private pendingMarks: Array<{ name: string; bytes: number }> = [];
  private playedBytes = 0;
  private firstMarkAt = 0;
  private marksEchoed = 0;
  private startWaiters: Array<{ resolve: (s: CarrierStart) => void; reject: (e: Error) => void }> = [];
  private drainWake: (() => void) | null = null;
  private closing = false;

  constructor(
    protected readonly ws: WebSocket,
    opts: CarrierStreamOptions,
  ) {
    this.kind = opts.kind;
    this.sendStage = `${opts.kind}: send (µ-law encode, JSON)`;
    const receiveStage = `${opts.kind}: receive (JSON, µ-law decode)`;
    const { codec, ...rest } = opts;
    this.opts = { frameBytes: MULAW_FRAME_BYTES, sequenceNumbers: false, sendConnected: false, drainMs: 2000, maxPendingMarks: 3000, markSupportMs: 3000, marks: true, ...rest };
    this.decoder = codec?.decoder ?? new MulawDecoder(16000);
    this.encoder = codec?.encoder ?? new MulawEncoder(24000, this.opts.frameBytes);
    this.bytesPerMs = codec?.bytesPerMs ?? 8;
    ws.on('message', (data, isBinary) => timed(receiveStage, () => {
      if (isBinary) return this.onBinary(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer)); // Twilio-family protocols are JSON text only
      let msg: unknown;
      try {
        msg = JSON.parse(String(data));
      } catch {
        return;
      }
      if (msg && typeof msg === 'object') this.onMessage(msg as Record<string, unknown>);
    }));
    ws.on('close', () => this.fireClose());
    if (this.opts.sendConnected) this.send({ event: 'connected' });
  }

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  /** Resolves with the carrier's `start`; rejects when the socket closes first or after timeoutMs. */
  waitStart(timeoutMs: number): Promise<CarrierStart> {
    if (this.start) return Promise.resolve(this.start);
    if (this.gone) return Promise.reject(new Error('stream closed before start'));
    return new Promise((resolve, reject) => {
      const w = {
        resolve: (s: CarrierStart) => {
          clearTimeout(t);
          resolve(s);
        },
        reject: (e: Error) => {
          clearTimeout(t);
          reject(e);
        },
      };
      const t = setTimeout(() => {
        this.startWaiters = this.startWaiters.filter((x) => x !== w);
        reject(new Error('no start message'));
      }, timeoutMs);
      this.startWaiters.push(w);
    });
  }

  // ── carrier → us ──────────────────────────────────────────────────────────────────────────────────────
  /** A binary message (carriers that stream raw audio frames override this; the Twilio family sends none). */
  protected onBinary(_data: Buffer): void {}

  /** Caller audio in the codec's bytes (carrier dialects with their own framing call this). */
  protected acceptAudio(bytes: Uint8Array): void {
    const pcm = this.decoder.decode(bytes);
    if (!pcm.length) return;
    if (this.audioCb) this.audioCb(pcm);
    else if (this.early && this.early.length < MAX_EARLY) this.early.push(pcm);
  }

  /** One JSON message in the Twilio shape (other dialects translate theirs and call this). */
  protected onMessage(m: Record<string, unknown>): void {
    switch (m.event) {
      case 'start': {
        if (this.start) return;
        const s = obj(m.start);
        const params: Record<string, string> = {};
        for (const [k, v] of Object.entries(obj(s.customParameters ?? s.custom_parameters))) if (v !== undefined && v !== null) params[k] = String(v);
        this.start = {
          streamSid: str(s.streamSid) ?? str(m.streamSid) ?? '',
          callSid: str(s.callSid) ?? '',
          accountSid: str(s.accountSid) ?? '',
          customParameters: params,
          from: str(s.from),
          to: str(s.to),
          direction: str(s.direction),
        };
        for (const w of this.startWaiters.splice(0)) w.resolve(this.start);
        return;
      }
      case 'media': {
        const media = obj(m.media);
        if (media.track !== undefined && media.track !== 'inbound' && media.track !== 'inbound_track') return;
        const payload = str(media.payload);
        if (!payload) return;
        this.acceptAudio(Buffer.from(payload, 'base64'));
        return;
      }
      case 'dtmf': {
        const d = obj(m.dtmf);
        const digit = str(d.digit) ?? str(m.digit);
        if (!digit || !/^[0-9*#A-Da-d]$/.test(digit)) return;
        this.digits.push(digit);
        const ev: TransportEvent = { type: 'dtmf', digit: digit.toUpperCase() };
        if (this.eventCb) this.eventCb(ev);
        else if (this.earlyEvents.length < 100) this.earlyEvents.push(ev);
        return;
      }
      case 'mark': {
        const name = str(obj(m.mark).name);
        const i = name ? this.pendingMarks.findIndex((p) => p.name === name) : -1;
        if (name) this.marksEchoed++;
        if (i < 0) return; // an echo of a mark dropped by a clear: that audio was never played
        this.playedBytes = Math.max(this.playedBytes, this.pendingMarks[i]!.bytes);
        this.pendingMarks.splice(0, i + 1);
        if (!this.pendingMarks.length) this.drainWake?.();
        return;
      }
      case 'stop':
        this.stopReason = str(obj(m.stop).reason) ?? 'stop';
        this.fireClose();
        return;
      default:
        return; // connected, and anything newer we do not use
    }
  }

  private fireClose(): void {
    if (this.gone) return;
    this.gone = true;
    for (const w of this.startWaiters.splice(0)) w.reject(new Error('stream closed before start'));
    this.drainWake?.();
    for (const cb of this.closeCbs) cb();
  }

  // ── us → carrier ──────────────────────────────────────────────────────────────────────────────────────
  /** One JSON message in the Twilio shape (other dialects override this and translate it into theirs). */
  protected send(m: Record<string, unknown>): void {
    if (!this.open) return;
    if (this.opts.sequenceNumbers) m.sequenceNumber = String(++this.seq);
    this.ws.send(JSON.stringify(m));
  }

  /** A dialect's translation of one Twilio-shaped message (null: nothing to send for it), sent while the socket is open. */
  protected sendTranslated(out: Record<string, unknown> | null): void {
    if (out && this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(out));
  }

  /** Frames the encoder just produced (the last ones of its output so far), each with its mark. */
  private sendFrames(frames: Uint8Array[]): void {
    let pos = this.encoder.produced - frames.length * this.encoder.frameBytes;
    for (const frame of frames) this.sendFrame(frame, (pos += frame.length));
  }

  /** One payload and its mark; `endBytes` is the stream position just after this payload. */
  private sendFrame(bytes: Uint8Array, endBytes: number): void {
    const streamSid = this.start?.streamSid ?? '';
    this.send({ event: 'media', streamSid, media: { payload: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') } });
    if (!this.opts.marks) return;
    const name = `m${++this.markSeq}`;
    if (!this.firstMarkAt) this.firstMarkAt = performance.now();
    this.pendingMarks.push({ name, bytes: endBytes });
    if (this.pendingMarks.length > this.opts.maxPendingMarks) this.pendingMarks.shift();
    this.send({ event: 'mark', streamSid, mark: { name } });
  }

  /** Agent audio (24 kHz) → 8 kHz µ-law payloads, each followed by a mark. */
  sendAudio(pcm24k: Int16Array): void {
    if (!this.open || this.gone || this.closing) return;
    timed(this.sendStage, () => this.sendFrames(this.encoder.push(pcm24k)));
  }

  /** Carriers have no text channel: the WebSocket protocol's events have nowhere to go. */
  sendEvent(_event: Record<string, unknown>): void {}

  /** Barge-in: the carrier drops what it has buffered; marks in flight no longer mean "heard". */
  clearAudio(): void {
    this.encoder.discard();
    this.pendingMarks = [];
    this.send({ event: 'clear', streamSid: this.start?.streamSid ?? '' });
  }

  /**
   * Milliseconds into the agent audio that the carrier has confirmed played (last echoed mark). A carrier that
   * never echoes marks (none back within markSupportMs of the first) cannot tell: then what was sent counts.
   */
  playedMs(): number {
    if (!this.opts.marks || this.marksUnsupported()) return this.sentMs();
    return this.playedBytes / this.bytesPerMs;
  }

  private marksUnsupported(): boolean {
    return !this.marksEchoed && this.firstMarkAt > 0 && performance.now() - this.firstMarkAt > this.opts.markSupportMs;
  }

  /** Milliseconds of agent audio sent to the carrier so far. */
  sentMs(): number {
    return this.encoder.produced / this.bytesPerMs;
  }

  onAudio(cb: (pcm16k: Int16Array) => void): void {
    this.audioCb = cb;
    for (const pcm of this.early ?? []) cb(pcm);
    this.early = null;
  }

  onEvent(cb: (ev: TransportEvent) => void): void {
    this.eventCb = cb;
    for (const ev of this.earlyEvents.splice(0)) cb(ev);
  }

  onClose(cb: () => void): void {
    if (this.gone) queueMicrotask(cb);
    else this.closeCbs.push(cb);
  }

  /** Resolves once every mark sent so far has been echoed (the carrier played it all), or after timeoutMs. */
  whenPlayed(timeoutMs: number): Promise<void> {
    if (!this.pendingMarks.length || this.gone || this.marksUnsupported()) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, timeoutMs);
      const check = setInterval(() => {
        if (!this.pendingMarks.length || this.gone) done();
      }, 20);
      function done() {
        clearTimeout(t);
        clearInterval(check);
        resolve();
      }
    });
  }

  /**
   * End the stream. A normal end first lets the carrier play what was sent (what the encoder holds goes out,
   * then we wait for its mark, at most drainMs): closing the socket makes the carrier move on (Twilio continues
   * its TwiML, which ends the call), so an unplayed farewell would be cut.
   */
  close(kind: CloseKind, reason?: string): void {
    if (this.closing) return;
    this.closing = true;
    const code = kind === 'normal' ? 1000 : kind === 'refused' ? 1008 : 1011;
    const shut = () => {
      if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
    };
    if (kind !== 'normal' || !this.open || this.gone) return shut();
    // what the encoder still holds (its resampler's ~1 ms look-ahead, a partial frame) goes out before the end
    this.sendFrames(this.encoder.flush());
    if (!this.pendingMarks.length || this.marksUnsupported()) return shut();
    const t = setTimeout(() => this.drainWake?.(), this.opts.drainMs);
    this.drainWake = () => {
      this.drainWake = null;
      clearTimeout(t);
      shut();
    };
  }

  /** Close with an explicit code (rejections before the call runs: bad token, unknown call). */
  closeWith(code: number, reason: string): void {
    this.closing = true;
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }
}

/** A JSON field as an object ({} for anything else); the dialects (plivo, telnyx, exotel) read with it too. */
export function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null;
}
