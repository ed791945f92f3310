// RTP (RFC 3550) header parsing for the receive side. node-datachannel hands the track's raw RTP packets to
// onMessage (RTCP is consumed by its RtcpReceivingSession); the Opus payload is what follows the fixed 12-byte
// header, the CSRC list, an optional header extension (RFC 8285 one- or two-byte form) and before any padding.

export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
}

/** Parse one RTP packet; null for anything that is not RTP version 2 or is truncated. */
export function parseRtp(buf: Uint8Array): RtpPacket | null {
  if (buf.length < 12) return null;
  const b0 = buf[0]!;
  if (b0 >> 6 !== 2) return null;
  const padding = (b0 & 0x20) !== 0;
  const extension = (b0 & 0x10) !== 0;
  const csrcCount = b0 & 0x0f;
  const b1 = buf[1]!;
  const payloadType = b1 & 0x7f;
  // RTCP packet types 200..207 have the marker bit set in this position (RFC 5761 demultiplexing)
  if (payloadType >= 72 && payloadType <= 79) return null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let offset = 12 + 4 * csrcCount;
  if (offset > buf.length) return null;
  if (extension) {
    if (offset + 4 > buf.length) return null;
    const words = view.getUint16(offset + 2);
    offset += 4 + 4 * words;
    if (offset > buf.length) return null;
  }
  let end = buf.length;
  if (padding) {
    const pad = buf[buf.length - 1]!;
    if (pad === 0 || offset + pad > end) return null;
    end -= pad;
  }
  return {
    payloadType,
    marker: (b1 & 0x80) !== 0,
    sequence: view.getUint16(2),
    timestamp: view.getUint32(4),
    ssrc: view.getUint32(8),
    payload: buf.subarray(offset, end),
  };
}

/** Build an RTP packet (tests and the non-browser peer; the server's send side uses node-datachannel's packetizer). */
export function buildRtp(p: Omit<RtpPacket, 'marker'> & { marker?: boolean }): Buffer {
  const out = Buffer.alloc(12 + p.payload.length);
  out[0] = 0x80;
  out[1] = (p.marker ? 0x80 : 0) | (p.payloadType & 0x7f);
  out.writeUInt16BE(p.sequence & 0xffff, 2);
  out.writeUInt32BE(p.timestamp >>> 0, 4);
  out.writeUInt32BE(p.ssrc >>> 0, 8);
  out.set(p.payload, 12);
  return out;
}

/** Signed distance a − b between two 16-bit sequence numbers (wrap-around aware). */
export function seqDiff(a: number, b: number): number {
  const d = (a - b) & 0xffff;
  return d >= 0x8000 ? d - 0x10000 : d;
}
