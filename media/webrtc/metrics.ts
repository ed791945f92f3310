// WebRTC media counters in the process registry (/metrics): RTP packets out/in, frames the jitter buffer had to
// conceal, packets dropped (late, or the peer was not ready), caller packets by Opus band. bench/webrtc reads them to
// tell server-side loss from client-side loss.
//
// The audio path counts with plain adds into one array of slots (50 packets a second per call: prom-client's inc
// hashes its labels on every call); the counters take the growth since they were last read when /metrics is read.
// With the media-plane thread (WEBRTC_MEDIA_THREAD, media/webrtc/plane.ts) the peers, and so the counting, run on
// that thread: the slots are then a SharedArrayBuffer both threads adopt (shareWebRtcCounts), written there and
// read here.
import { prom, registry } from '../../core/metrics.ts';
import type { OpusBandwidth } from '../../core/audio/opus.ts';

const BANDS = ['narrowband', 'mediumband', 'wideband', 'superwideband', 'fullband'] as const satisfies readonly OpusBandwidth[];
const LOSS = ['concealed', 'late', 'unsent'] as const;
export type LossKind = (typeof LOSS)[number];
const SENT = 0;
const RECEIVED = 1;
const LOSS0 = 2;
const BAND0 = LOSS0 + LOSS.length;
const SLOTS = BAND0 + BANDS.length;

let counts: Float64Array<ArrayBufferLike> = new Float64Array(SLOTS);
/** what the prom counters have taken so far, per slot */
const taken = new Float64Array(SLOTS);

/** The slots as shared memory: called without an argument (the owning thread) it moves the counts into a new
 * SharedArrayBuffer and returns it; a thread given that buffer counts into it. */
export function shareWebRtcCounts(buf?: SharedArrayBuffer): SharedArrayBuffer {
  if (!buf) {
    buf = new SharedArrayBuffer(SLOTS * 8);
    new Float64Array(buf).set(counts);
  }
  counts = new Float64Array(buf);
  return buf;
}

/** the growth of slots [from, from + n) since the last call, added to the counter by label */
function take(from: number, labels: readonly string[], add: (label: string, n: number) => void): void {
  for (let i = 0; i < labels.length; i++) {
    const n = counts[from + i]! - taken[from + i]!;
    if (n > 0) {
      taken[from + i] = counts[from + i]!;
      add(labels[i]!, n);
    }
  }
}

export const rtpPacketsTotal = new prom.Counter({
  name: 'voice_webrtc_rtp_packets_total',
  help: 'Opus RTP packets of WebRTC calls, by direction (sent: agent audio, received: caller audio)',
  labelNames: ['direction'] as const,
  registers: [registry],
  collect() {
    take(SENT, ['sent', 'received'], (direction, n) => this.inc({ direction }, n));
  },
});

export const rtpLossTotal = new prom.Counter({
  name: 'voice_webrtc_frames_lost_total',
  help: 'WebRTC audio frames lost, by kind (concealed: caller packet never came; late: arrived after its slot; unsent: agent frame not sent)',
  labelNames: ['kind'] as const,
  registers: [registry],
  collect() {
    take(LOSS0, LOSS, (kind, n) => this.inc({ kind }, n));
  },
});

export const callerOpusBandTotal = new prom.Counter({
  name: 'voice_webrtc_caller_opus_packets_total',
  help: 'Caller Opus packets of ended WebRTC calls, by the audio band the browser encoded (the answer asks for at most wideband: maxplaybackrate=16000)',
  labelNames: ['band'] as const,
  registers: [registry],
  collect() {
    take(BAND0, BANDS, (band, n) => this.inc({ band }, n));
  },
});

/** One caller packet received. */
export function countRtpReceived(): void {
  counts[RECEIVED]!++;
}

/** Agent packets sent. */
export function countRtpSent(n: number): void {
  counts[SENT]! += n;
}

/** Frames lost, by kind. */
export function countRtpLoss(kind: LossKind, n = 1): void {
  counts[LOSS0 + LOSS.indexOf(kind)]! += n;
}

/** Caller packets of an ended call in one band. */
export function countCallerBand(band: OpusBandwidth, n: number): void {
  counts[BAND0 + BANDS.indexOf(band)]! += n;
}

/** RFC 6716 §3.1: a packet's audio band from its TOC byte's configuration (the top 5 bits). */
export function opusPacketBand(toc: number): OpusBandwidth {
  const config = toc >> 3;
  if (config < 12) return (['narrowband', 'mediumband', 'wideband'] as const)[config >> 2]!; // SILK only
  if (config < 16) return config < 14 ? 'superwideband' : 'fullband'; // hybrid
  return (['narrowband', 'wideband', 'superwideband', 'fullband'] as const)[(config - 16) >> 2]!; // CELT only
}
