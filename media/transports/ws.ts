// WebSocket audio transport (spec "WebSocket audio protocol"): binary s16le 16 kHz mono in, binary s16le 24 kHz
// mono out (already paced), JSON text events out. In text mode (`?mode=text`, media/session/text-mode.ts) the client
// sends its turns as JSON text messages `{type: 'user-text', text}` instead of audio, and no audio goes out.
import type { WebSocket } from 'ws';
import { timed } from '../stage-cpu.ts';
import type { CloseKind, LiveTransport } from './types.ts';

export class WsTransport implements LiveTransport {
  readonly kind = 'websocket';
  private carry: number | null = null;
  /** frames dropped because the client stopped reading (bufferedAmount over the limit) */
  dropped = 0;
  /** caller audio that arrived before onAudio was registered (bounded) */
  private early: Int16Array[] | null = [];
  private audioCb: ((pcm16k: Int16Array) => void) | null = null;
  private textCb: ((text: string) => void) | null = null;
  private earlyText: string[] = [];
  readonly textMode: boolean;

  constructor(
    private readonly ws: WebSocket,
    private readonly maxBufferedBytes = 256 * 1024,
    opts: { text?: boolean } = {},
  ) {
    this.textMode = opts.text === true;
    // listen from the first moment, so audio sent while the call is being claimed is not lost
    ws.on('message', (data, isBinary) => timed('websocket: receive', () => {
      if (this.textMode) {
        if (!isBinary) this.onTextMessage(String(data));
        return;
      }
      if (!isBinary) return; // the audio protocol has no client text messages
      const pcm = this.decode(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer));
      if (this.audioCb) this.audioCb(pcm);
      else if (this.early && this.early.length < 500) this.early.push(pcm);
    }));
  }

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  sendAudio(pcm: Int16Array): void {
    if (!this.open || this.textMode) return;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.dropped++;
      return;
    }
    timed('websocket: send', () => this.ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), { binary: true }));
  }

  sendEvent(event: Record<string, unknown>): void {
    if (this.open) this.ws.send(JSON.stringify(event));
  }

  onAudio(cb: (pcm16k: Int16Array) => void): void {
    this.audioCb = cb;
    for (const pcm of this.early ?? []) cb(pcm);
    this.early = null;
  }

  /** Text mode: the caller's typed turns. */
  onText(cb: (text: string) => void): void {
    this.textCb = cb;
    for (const t of this.earlyText.splice(0)) cb(t);
  }

  /** `{type: 'user-text', text}` (text at most 4000 characters); anything else is answered with an error event. */
  private onTextMessage(raw: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(raw);
    } catch {
      msg = null;
    }
    const m = msg as { type?: unknown; text?: unknown } | null;
    if (!m || m.type !== 'user-text' || typeof m.text !== 'string' || m.text.length > 4000) {
      this.sendEvent({ type: 'error', message: "text mode expects {\"type\": \"user-text\", \"text\": \"...\"} messages (text at most 4000 characters)" });
      return;
    }
    if (this.textCb) this.textCb(m.text);
    else if (this.earlyText.length < 20) this.earlyText.push(m.text);
  }

  onClose(cb: () => void): void {
    // A socket that closed while the call was still starting (e.g. 1009 for an oversized first frame) will not emit
    // 'close' again: a listener registered after that must still hear it, or the row stays active.
    if (this.ws.readyState === this.ws.CLOSED) setImmediate(cb);
    else this.ws.on('close', cb);
  }

  /** 1000 when the call ended, 1011 on a pipeline error or a call that could not start. */
  close(kind: CloseKind, reason?: string): void {
    const code = kind === 'normal' ? 1000 : 1011;
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }

  /** Close with an explicit code (handshake-time rejections of the WebSocket protocol). */
  closeWith(code: number, reason: string): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
  }

  /** Binary message → 16-bit samples (an odd trailing byte is carried to the next message). */
  decode(data: Buffer): Int16Array {
    let buf = data;
    if (this.carry !== null) {
      buf = Buffer.concat([Buffer.from([this.carry]), data]);
      this.carry = null;
    }
    if (buf.length % 2 === 1) {
      this.carry = buf[buf.length - 1]!;
      buf = buf.subarray(0, buf.length - 1);
    }
    // s16le is the platform order on every target we run on: the message's own bytes when they are 2-aligned (they
    // are not reused: each message gets its own memory), else one copy into an aligned buffer
    if (buf.byteOffset % 2 === 0) return new Int16Array(buf.buffer, buf.byteOffset, buf.length / 2);
    const copy = new Uint8Array(buf.length);
    copy.set(buf);
    return new Int16Array(copy.buffer);
  }
}
