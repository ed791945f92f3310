// Vonage Voice API WebSockets (the NCCO `connect` action with a `websocket` endpoint, content-type
// audio/l16;rate=16000): the first message is text `{"event":"websocket:connected","content-type":…, …our
// endpoint headers}`; audio then flows both ways as binary frames of raw 16-bit little-endian PCM, 20 ms each (640
// bytes at 16 kHz); DTMF arrives as text `{"event":"websocket:dtmf","digit":…}`; the socket closes when the call
// ends. Vonage has neither marks nor a clear message: what we sent counts as played (`marks: false`), and barge-in
// relies on the pipeline sending in real time — the carrier's buffer holds at most a frame or two, so stopping
// sending is what clears it. Mechanics: carrier-stream.ts; this file maps Vonage's framing.
import type { WebSocket } from 'ws';
import { L16Decoder, L16Encoder } from '../../audio/l16-stream.ts';
import { CarrierStreamTransport } from './stream.ts';

const RATE = 16000;
const FRAME_BYTES = (RATE / 50) * 2; // 20 ms of s16le

export class VonageStreamTransport extends CarrierStreamTransport {
  constructor(ws: WebSocket, opts: { drainMs?: number } = {}) {
    super(ws, {
      kind: 'vonage',
      marks: false,
      codec: { decoder: new L16Decoder(RATE), encoder: new L16Encoder(RATE, FRAME_BYTES), bytesPerMs: (RATE * 2) / 1000 },
      ...opts,
    });
  }

  protected override onBinary(data: Buffer): void {
    if (this.start) this.acceptAudio(data);
  }

  protected override onMessage(m: Record<string, unknown>): void {
    if (m.event === 'websocket:connected') {
      const params: Record<string, string> = {};
      for (const [k, v] of Object.entries(m)) if (k !== 'event' && k !== 'content-type' && (typeof v === 'string' || typeof v === 'number')) params[k] = String(v);
      super.onMessage({ event: 'start', start: { streamSid: 'vonage', callSid: params.uuid ?? params.call_uuid ?? '', customParameters: params } });
    } else if (m.event === 'websocket:dtmf') {
      super.onMessage({ event: 'dtmf', dtmf: { digit: m.digit } });
    }
  }

  protected override send(m: Record<string, unknown>): void {
    if (this.ws.readyState !== this.ws.OPEN || m.event !== 'media') return; // no marks, no clear on Vonage
    const payload = (m.media as { payload?: unknown } | undefined)?.payload;
    if (typeof payload === 'string') this.ws.send(Buffer.from(payload, 'base64'), { binary: true });
  }
}
