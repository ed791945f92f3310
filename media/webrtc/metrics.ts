// WebRTC media counters in the process registry (/metrics): RTP packets out/in, frames the jitter buffer had to
// conceal, packets dropped (late, or the peer was not ready). bench/webrtc reads them to tell server-side loss from
// client-side loss.
import { prom, registry } from '../../core/metrics.ts';
import type { OpusBandwidth } from './opus.ts';

/** caller packets received since /metrics was last read (see countRtpReceived) */
let receivedPending = 0;

export const rtpPacketsTotal = new prom.Counter({
  name: 'voice_webrtc_rtp_packets_total',
  help: 'Opus RTP packets of WebRTC calls, by direction (sent: agent audio, received: caller audio)',
  labelNames: ['direction'] as const,
  registers: [registry],
  collect() {
    if (receivedPending) this.inc({ direction: 'received' }, receivedPending);
    receivedPending = 0;
  },
});

/** One caller packet received: a plain add on the audio path (50 a second per call); the counter gets the sum when
 * /metrics is read (prom-client's inc hashes its labels on every call). */
export function countRtpReceived(): void {
  receivedPending++;
}

export const rtpLossTotal = new prom.Counter({
  name: 'voice_webrtc_frames_lost_total',
  help: 'WebRTC audio frames lost, by kind (concealed: caller packet never came; late: arrived after its slot; unsent: agent frame not sent)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

/** RFC 6716 §3.1: a packet's audio band from its TOC byte's configuration (the top 5 bits). */
export function opusPacketBand(toc: number): OpusBandwidth {
  const config = toc >> 3;
  if (config < 12) return (['narrowband', 'mediumband', 'wideband'] as const)[config >> 2]!; // SILK only
  if (config < 16) return config < 14 ? 'superwideband' : 'fullband'; // hybrid
  return (['narrowband', 'wideband', 'superwideband', 'fullband'] as const)[(config - 16) >> 2]!; // CELT only
}

export const callerOpusBandTotal = new prom.Counter({
  name: 'voice_webrtc_caller_opus_packets_total',
  help: 'Caller Opus packets of ended WebRTC calls, by the audio band the browser encoded (the answer asks for at most wideband: maxplaybackrate=16000)',
  labelNames: ['band'] as const,
  registers: [registry],
});
