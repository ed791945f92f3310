// WebRTC media counters in the process registry (/metrics): RTP packets out/in, frames the jitter buffer had to
// conceal, packets dropped (late, or the peer was not ready). bench/webrtc reads them to tell server-side loss from
// client-side loss.
import { prom, registry } from '../../core/metrics.ts';

export const rtpPacketsTotal = new prom.Counter({
  name: 'voice_webrtc_rtp_packets_total',
  help: 'Opus RTP packets of WebRTC calls, by direction (sent: agent audio, received: caller audio)',
  labelNames: ['direction'] as const,
  registers: [registry],
});

export const rtpLossTotal = new prom.Counter({
  name: 'voice_webrtc_frames_lost_total',
  help: 'WebRTC audio frames lost, by kind (concealed: caller packet never came; late: arrived after its slot; unsent: agent frame not sent)',
  labelNames: ['kind'] as const,
  registers: [registry],
});
