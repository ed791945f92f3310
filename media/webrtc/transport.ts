// WebRTC audio transport (spec "WebRTC signaling"): one node-datachannel peer connection per call, answering the
// browser's offer. Caller audio: RTP → jitter buffer (reorder, gap filling, PLC) → Opus decode straight to 16 kHz
// (→ phone-line simulation for telephonySim test calls) → the call session. Agent audio: 24 kHz → 20 ms Opus
// frames (call-codec.ts) → node-datachannel's RTP packetizer (+ RTCP sender reports, NACK responder, receiver
// reports/REMB from its RtcpReceivingSession). Events (`rtf-*`, `error`) go to the browser as JSON text on the
// data channel the browser opened; the browser may send `{"type":"hangup"}` on it to end the call at once.
//
// The call session never sees any of this: it talks to the `Transport` interface like every other transport.
import { randomBytes, randomUUID } from 'node:crypto';
import nodeDataChannel, { type DataChannel, type Direction, type PeerConnection, type RtpPacketizationConfig, type Track } from 'node-datachannel';
import type { Logger } from '../../core/logger.ts';
import { PhoneLine } from '../audio/phone-line.ts';
import { codecPool, type CodecChannel } from './codec-pool.ts';
import { JitterBuffer } from './jitter.ts';
import { countCallerBand, countRtpLoss, countRtpReceived, countRtpSent, opusPacketBand } from './metrics.ts';
import { CALLER_RATE } from './call-codec.ts';
import { FRAME_SAMPLES } from '../../core/audio/opus.ts';
import { parseRtp } from './rtp.ts';
import { announceSdp, parseOffer } from './sdp.ts';
import { rtpArrived, timed } from '../stage-cpu.ts';
import type { CloseKind } from '../transports/types.ts';
import { OfferError, PeerListeners, type WebRtcOptions, type WebRtcPeer } from './peer-types.ts';

/**
 * The Opus parameters of our side of the SDP. `maxplaybackrate` (RFC 7587 §6.1): the caller's audio is decoded
 * straight to CALLER_RATE (16 kHz) for the VAD, the STT and the recording, so nothing above 8 kHz is ever heard; a
 * browser that honours it (libwebrtc caps its encoder's band: ≤ 16 kHz → wideband) sends SILK wideband instead of
 * hybrid fullband: fewer bytes, and less decoding per frame here.
 */
const OPUS_FMTP = `minptime=10;useinbandfec=1;maxplaybackrate=${CALLER_RATE}`;

const { Audio, PeerConnection: Pc, RtcpNackResponder, RtcpReceivingSession, RtcpSrReporter, RtpPacketizationConfig: RtpConfig, RtpPacketizer } = nodeDataChannel;

export { OfferError, type WebRtcNetOptions, type WebRtcOptions } from './peer-types.ts';

export type PeerPhase = 'new' | 'connected' | 'closed';

export class WebRtcTransport implements WebRtcPeer {
  readonly kind = 'webrtc';
  /** Identifies this peer connection to the browser (renegotiation sends it back). */
  readonly pcId = randomUUID();
  phase: PeerPhase = 'new';
  /** frames dropped because the peer was not sending/ready */
  dropped = 0;
  framesSent = 0;
  readonly jitter: JitterBuffer;

  private readonly pc: PeerConnection;
  private track: Track | null = null;
  private rtpConfig: RtpPacketizationConfig | null = null;
  private opusPt = 111;
  private dc: DataChannel | null = null;
  /** every data channel the browser opened (closed before the peer connection: destroy()) */
  private readonly channels: DataChannel[] = [];
  private readonly pendingEvents: string[] = [];
  private readonly codec: CodecChannel;
  private readonly line: PhoneLine | null;
  private rtpTs = randomBytes(4).readUInt32BE(0);
  private lastSendAt: number | null = null;
  private readonly listeners = new PeerListeners();
  private disconnectTimer: NodeJS.Timeout | null = null;
  private readonly log: Logger;

  private constructor(private readonly o: WebRtcOptions) {
    this.log = o.logger.child({ callId: o.callId, pcId: this.pcId });
    this.line = o.telephonySim ? new PhoneLine(16_000) : null;
    this.pc = new Pc(`call-${o.callId}`, {
      iceServers: o.iceServers,
      disableAutoNegotiation: true,
      ...(o.portRange ? { portRangeBegin: o.portRange.begin, portRangeEnd: o.portRange.end } : {}),
      ...(o.bindAddress ? { bindAddress: o.bindAddress } : {}),
    });
    this.codec = codecPool(o.codecThreads, o.logger, o.codecDecode === 'inline').open({
      packets: (packets, lost, tsJump) => this.sendPackets(packets, lost, tsJump),
      pcm: (pcm16, corrupt, lost) => {
        if (corrupt || lost) {
          this.jitter.stats.corrupt += corrupt;
          this.jitter.stats.concealed += corrupt + lost;
          countRtpLoss('concealed', corrupt + lost);
        }
        this.deliver(pcm16);
      },
    });
    this.jitter = new JitterBuffer(this.codec.sink, null);
    this.pc.onStateChange(this.guard((state: string) => this.onState(state)));
    this.pc.onDataChannel(this.guard((dc: DataChannel) => this.adoptChannel(dc)));
  }

  /** Answer a browser offer: a new peer connection; resolves with the answer SDP (candidates included). */
  static async answer(offerSdp: string, o: WebRtcOptions): Promise<{ transport: WebRtcTransport; sdp: string }> {
    const facts = parseOffer(offerSdp);
    if (!facts.audio) throw new OfferError('The offer has no audio section with Opus (opus/48000/2)');
    const t = new WebRtcTransport(o);
    try {
      t.addAudio(facts.audio.mid, facts.audio.opusPt, facts.audio.direction);
      const sdp = await t.negotiate(offerSdp);
      return { transport: t, sdp };
    } catch (err) {
      t.destroy();
      throw err instanceof OfferError ? err : new OfferError(`The offer could not be applied: ${(err as Error).message}`);
    }
  }

  /** A new offer on the live peer (renegotiation): resolves with the new answer. */
  async renegotiate(offerSdp: string): Promise<string> {
    if (this.phase === 'closed') throw new OfferError('The peer connection is closed');
    const facts = parseOffer(offerSdp);
    if (!facts.audio) throw new OfferError('The offer has no audio section with Opus (opus/48000/2)');
    try {
      return await this.negotiate(offerSdp);
    } catch (err) {
      throw new OfferError(`The offer could not be applied: ${(err as Error).message}`);
    }
  }

  /** Trickle ICE: one remote candidate ('' or null = end of candidates, ignored). */
  addRemoteCandidate(candidate: string, mid: string | null): void {
    if (!candidate.trim()) return;
    const line = candidate.trim().replace(/^a=/, '');
    this.pc.addRemoteCandidate(line, mid ?? this.track?.mid() ?? '0');
  }

  onConnected(cb: () => void): void {
    this.listeners.onConnected(cb);
  }

  /** The peer failed or closed before it ever connected. */
  onFailed(cb: (why: string) => void): void {
    this.listeners.onFailed(cb);
  }

  // ── LiveTransport ──────────────────────────────────────────────────────────────────────────────────────

  sendAudio(pcm24k: Int16Array): void {
    if (this.phase !== 'connected' || !this.track || !this.rtpConfig) {
      this.dropped++;
      countRtpLoss('unsent');
      return;
    }
    const now = performance.now();
    // the agent was silent for a while (nothing sent): the RTP clock keeps running with wall time
    const jump = this.lastSendAt !== null && now - this.lastSendAt > 100 ? Math.round((now - this.lastSendAt - 20) * 48) : 0;
    this.lastSendAt = now;
    this.codec.encode(pcm24k, jump);
  }

  /** The codec's packets for agent audio, in order, onto the RTP track. */
  private sendPackets(packets: Uint8Array[], lost: number, tsJump: number): void {
    this.rtpTs = (this.rtpTs + tsJump) >>> 0;
    if (lost) {
      // encoded by a codec thread that died: never came back
      this.dropped += lost;
      countRtpLoss('unsent', lost);
      this.rtpTs = (this.rtpTs + lost * FRAME_SAMPLES) >>> 0;
    }
    let sent = 0;
    for (const packet of packets) {
      try {
        if (this.phase === 'connected' && this.track?.isOpen() && this.rtpConfig) {
          this.rtpConfig.timestamp = this.rtpTs;
          const track = this.track;
          timed('webrtc: rtp send (packetize, SRTP, UDP)', () => track.sendMessageBinary(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength)));
          this.framesSent++;
          sent++;
        } else {
          this.dropped++;
          countRtpLoss('unsent');
        }
      } catch (err) {
        this.dropped++;
        countRtpLoss('unsent');
        this.log.debug({ err }, 'rtp send failed');
      }
      this.rtpTs = (this.rtpTs + FRAME_SAMPLES) >>> 0;
    }
    if (sent) countRtpSent(sent);
  }

  sendEvent(event: Record<string, unknown>): void {
    this.sendEventText(JSON.stringify(event));
  }

  /** An event already in its JSON text (the media-plane thread gets them so). */
  sendEventText(text: string): void {
    if (this.dc?.isOpen()) {
      try {
        this.dc.sendMessage(text);
        return;
      } catch (err) {
        this.log.debug({ err }, 'data channel send failed');
      }
    }
    if (this.phase !== 'closed' && this.pendingEvents.length < 200) this.pendingEvents.push(text);
  }

  onAudio(cb: (pcm16k: Int16Array) => void): void {
    this.listeners.onAudio(cb);
  }

  onClose(cb: () => void): void {
    this.listeners.onClose(cb);
  }

  close(_kind: CloseKind, _reason?: string): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    // the data channel closes first: the page sees its close event as "the call ended"
    try {
      this.dc?.close();
    } catch { /* already closed */ }
    // let the SCTP stream reset leave before DTLS goes away
    setTimeout(() => this.destroy(), 200).unref();
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────────────────

  private addAudio(mid: string, pt: number, offerDir: string): void {
    const dir: Direction = offerDir === 'sendonly' ? 'RecvOnly' : offerDir === 'recvonly' ? 'SendOnly' : offerDir === 'inactive' ? 'Inactive' : 'SendRecv';
    const audio = new Audio(mid, dir);
    audio.addOpusCodec(pt, OPUS_FMTP);
    const ssrc = randomBytes(4).readUInt32BE(0) || 1;
    const cname = `agent-${randomBytes(6).toString('hex')}`;
    audio.addSSRC(ssrc, cname, 'agent', 'agent-audio');
    const track = this.pc.addTrack(audio);
    const cfg = new RtpConfig(ssrc, cname, pt, 48_000);
    const packetizer = new RtpPacketizer(cfg);
    packetizer.addToChain(new RtcpSrReporter(cfg));
    packetizer.addToChain(new RtcpNackResponder());
    packetizer.addToChain(new RtcpReceivingSession());
    track.setMediaHandler(packetizer);
    const onRtp = (msg: Buffer) => this.onRtp(msg);
    track.onMessage(this.guard((msg: Buffer) => timed('webrtc: rtp receive (parse, jitter buffer)', onRtp, msg)));
    track.onError(this.guard((err: string) => this.log.debug({ err }, 'audio track error')));
    this.track = track;
    this.rtpConfig = cfg;
    this.opusPt = pt;
  }

  private async negotiate(offerSdp: string): Promise<string> {
    this.pc.setRemoteDescription(offerSdp, 'offer');
    this.pc.setLocalDescription();
    await this.gathered(this.o.gatherTimeoutMs ?? 3000);
    const local = this.pc.localDescription();
    if (!local?.sdp) throw new Error('no local description');
    return announceSdp(local.sdp, this.o.announcedAddress);
  }

  private gathered(timeoutMs: number): Promise<void> {
    if (this.pc.gatheringState() === 'complete') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      this.pc.onGatheringStateChange(this.guard((s: string) => {
        if (s === 'complete') {
          clearTimeout(timer);
          resolve();
        }
      }));
    });
  }

  private onRtp(msg: Buffer): void {
    if (this.phase === 'closed') return;
    const pkt = parseRtp(msg);
    if (!pkt || pkt.payloadType !== this.opusPt) return;
    rtpArrived(this, pkt.timestamp);
    countRtpReceived();
    if (pkt.payload.length) this.tocConfigs[pkt.payload[0]! >> 3]!++;
    const { concealed, late } = this.jitter.stats;
    this.jitter.push(pkt);
    if (this.jitter.stats.late > late) countRtpLoss('late');
    if (this.jitter.stats.concealed > concealed) countRtpLoss('concealed', this.jitter.stats.concealed - concealed);
  }

  private deliver(pcm16: Int16Array): void {
    if (pcm16.length === 0) return;
    const pcm = this.line ? this.line.process(pcm16) : pcm16;
    if (pcm.length === 0) return;
    this.listeners.audio(pcm);
  }

  private adoptChannel(dc: DataChannel): void {
    this.channels.push(dc);
    if (this.dc && this.dc.isOpen()) return; // one events channel per call
    this.dc = dc;
    const flush = () => {
      for (const text of this.pendingEvents.splice(0)) {
        try {
          dc.sendMessage(text);
        } catch { /* closed meanwhile */ }
      }
    };
    if (dc.isOpen()) flush();
    dc.onOpen(this.guard(flush));
    dc.onMessage(this.guard((msg: string | Buffer | ArrayBuffer) => {
      if (typeof msg !== 'string') return;
      let m: { type?: unknown };
      try {
        m = JSON.parse(msg) as { type?: unknown };
      } catch {
        return; // not JSON: ignored
      }
      if (m.type === 'hangup') this.gone('peer hung up');
    }));
  }

  private onState(state: string): void {
    if (this.phase === 'closed') return;
    this.log.debug({ state }, 'peer connection state');
    if (state === 'connected') {
      if (this.disconnectTimer) clearTimeout(this.disconnectTimer);
      this.disconnectTimer = null;
      if (this.phase === 'new') {
        this.phase = 'connected';
        this.listeners.connected();
      }
    } else if (state === 'disconnected') {
      if (this.phase !== 'connected' || this.disconnectTimer) return;
      // ICE may recover (network change); a peer that stays away is gone
      this.disconnectTimer = setTimeout(() => this.gone('peer disconnected'), this.o.disconnectGraceMs ?? 5000);
      this.disconnectTimer.unref();
    } else if (state === 'failed' || state === 'closed') {
      if (this.phase === 'new') {
        this.listeners.failed(`peer connection ${state}`);
        return;
      }
      this.gone(`peer connection ${state}`);
    }
  }

  /** Set when this peer failed on our side (an exception in one of its callbacks): the call ends as a pipeline error. */
  lostWith: string | null = null;

  /**
   * A callback handed to node-datachannel. An exception escaping one is not an uncaught exception but a C++
   * `Napi::Error` that aborts the whole process ("terminate called after throwing an instance of 'Napi::Error'",
   * measured on the main thread and on a worker), ending every call of the node; caught here, it ends this call only.
   */
  private guard<A extends unknown[]>(fn: (...a: A) => void): (...a: A) => void {
    return (...a: A) => {
      try {
        fn(...a);
      } catch (err) {
        try {
          this.fault(err);
        } catch (again) {
          this.log.error({ err: again }, 'webrtc peer failed while ending its call');
        }
      }
    };
  }

  private fault(err: unknown): void {
    this.log.error({ err }, 'webrtc peer failed: its call ends');
    if (this.lostWith) return;
    this.lostWith = `webrtc peer failed: ${(err as Error)?.message ?? String(err)}`;
    if (this.phase === 'new') {
      this.listeners.failed(this.lostWith);
      return;
    }
    this.gone(this.lostWith);
    this.destroy();
  }

  /** The far end went away: the runner ends the call (user_hangup; pipeline_error when lostWith is set). */
  private gone(why: string): void {
    if (this.phase !== 'connected') return;
    this.log.info({ why }, 'webrtc peer went away');
    this.phase = 'closed';
    this.listeners.gone();
    setTimeout(() => this.destroy(), 50).unref();
  }

  private destroyed = false;
  /** the caller's Opus packets by TOC configuration (RFC 6716 §3.1), added to /metrics by band when the call ends:
   * one array increment per packet */
  private readonly tocConfigs = new Uint32Array(32);
  /** Free the peer connection (UDP ports, DTLS/SCTP state). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.phase = 'closed';
    if (this.disconnectTimer) clearTimeout(this.disconnectTimer);
    this.tocConfigs.forEach((n, config) => n && countCallerBand(opusPacketBand(config << 3), n));
    this.jitter.close();
    this.codec.close();
    // data channels before their peer connection: node-datachannel's cleanup() releases a data channel's callbacks
    // a second time (a use after free: a segfault on a worker thread, the media plane's) unless the channel was
    // closed first
    for (const dc of this.channels) {
      try {
        dc.close();
      } catch { /* already closed */ }
    }
    try {
      this.pc.close();
    } catch { /* already closed */ }
  }

  /** For stats and the benchmark. */
  stats() {
    return { framesSent: this.framesSent, dropped: this.dropped, ...this.jitter.stats, codec: this.codec.mode, rttMs: safe(() => this.pc.rtt()), bytesReceived: safe(() => this.pc.bytesReceived()) };
  }
}

function safe(fn: () => number): number | null {
  try {
    return fn();
  } catch {
    return null;
  }
}

