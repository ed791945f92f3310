// WebSocket audio transport (spec "WebSocket audio protocol"): binary s16le 16 kHz mono in, binary s16le 24 kHz
// mono out (already paced), JSON text events out.
import type { WebSocket } from 'ws';
import type { Transport } from '../session/call-session.ts';

export class WsTransport implements Transport {
  private carry: number | null = null;
  /** frames dropped because the client stopped reading (bufferedAmount over the limit) */
  dropped = 0;
  constructor(
    private readonly ws: WebSocket,
    private readonly maxBufferedBytes = 256 * 1024,
  ) {}

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  sendAudio(pcm: Int16Array): void {
    if (!this.open) return;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.dropped++;
      return;
    }
    this.ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), { binary: true });
  }

  sendEvent(event: Record<string, unknown>): void {
    if (this.open) this.ws.send(JSON.stringify(event));
  }

  close(code: number, reason?: string): void {
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
    // one copy into an aligned buffer (s16le is the platform order on every target we run on)
    const copy = new Uint8Array(buf.length);
    copy.set(buf);
    return new Int16Array(copy.buffer);
  }
}
