// A non-browser WebRTC caller for protocol tests: node-datachannel as the offerer, with an Opus audio track
// (sendrecv) and an `events` data channel, like the call page. It decodes the agent's RTP (Opus) and can send a
// tone or silence as Opus RTP in real time.
import nodeDataChannel, { type DataChannel, type PeerConnection, type RtpPacketizationConfig, type Track } from 'node-datachannel';
import { bandwidthForPlayback, OpusDecoder48, OpusEncoder48, FRAME_SAMPLES } from '../../core/audio/opus.ts';
import { parseRtp } from '../../media/webrtc/rtp.ts';
import { until } from '../helpers/wait.ts';

const { Audio, PeerConnection: Pc, RtpPacketizationConfig: RtpConfig, RtpPacketizer, RtcpSrReporter, RtcpReceivingSession } = nodeDataChannel;

export interface ServerEvent {
  type: string;
  payload?: { text: string; final?: boolean };
  message?: string;
}

export class WebRtcCaller {
  readonly pc: PeerConnection;
  readonly track: Track;
  readonly dc: DataChannel;
  private readonly cfg: RtpPacketizationConfig;
  /** the caller's encoder: fullband until the answer says how far the other side plays back (maxplaybackrate) */
  enc = new OpusEncoder48();
  /** the answer's Opus maxplaybackrate (RFC 7587), null when it names none */
  remotePlaybackRate: number | null = null;
  private readonly dec = new OpusDecoder48();
  private ts = 12345;
  readonly events: ServerEvent[] = [];
  readonly localCandidates: Array<{ candidate: string; mid: string }> = [];
  /** agent audio received, decoded */
  samples = 0;
  energy = 0;
  packets = 0;
  lastPacketAt = 0;
  payloadTypes = new Set<number>();
  dcClosed = false;
  state = 'new';
  /** when set, the arrival time (performance.now()) of every agent RTP packet (benchmark) */
  arrivals: number[] | null = null;
  /** decode agent audio (off in the benchmark's client, which only times packets) */
  decode = true;

  constructor(name = 'test-caller') {
    this.pc = new Pc(name, { iceServers: [], disableAutoNegotiation: true });
    const audio = new Audio('0', 'SendRecv');
    audio.addOpusCodec(111, 'minptime=10;useinbandfec=1');
    audio.addSSRC(4242, 'caller', 'caller', 'caller-audio');
    this.track = this.pc.addTrack(audio);
    this.cfg = new RtpConfig(4242, 'caller', 111, 48_000);
    const pk = new RtpPacketizer(this.cfg);
    pk.addToChain(new RtcpSrReporter(this.cfg));
    pk.addToChain(new RtcpReceivingSession());
    this.track.setMediaHandler(pk);
    this.track.onMessage((msg) => {
      const p = parseRtp(msg);
      if (!p) return;
      this.packets++;
      this.lastPacketAt = Date.now();
      this.payloadTypes.add(p.payloadType);
      this.arrivals?.push(performance.now());
      if (!this.decode) return;
      const pcm = this.dec.decode(p.payload);
      this.samples += pcm.length;
      for (const s of pcm) this.energy += s * s;
    });
    this.dc = this.pc.createDataChannel('events');
    this.dc.onMessage((m) => {
      if (typeof m === 'string') this.events.push(JSON.parse(m) as ServerEvent);
    });
    this.dc.onClosed(() => { this.dcClosed = true; });
    this.pc.onLocalCandidate((candidate, mid) => this.localCandidates.push({ candidate, mid }));
    this.pc.onStateChange((s) => { this.state = s; });
  }

  /** Seconds of agent audio received. */
  get audioSeconds(): number {
    return this.samples / 48_000;
  }

  /** RMS of all agent audio received. */
  get rms(): number {
    return this.samples ? Math.sqrt(this.energy / this.samples) : 0;
  }

  /** The offer SDP; with `trickle`, without candidates (they go by PATCH). */
  async offer(o: { trickle?: boolean } = {}): Promise<string> {
    this.pc.setLocalDescription('offer');
    if (!o.trickle) {
      await new Promise<void>((resolve) => {
        if (this.pc.gatheringState() === 'complete') return resolve();
        this.pc.onGatheringStateChange((s) => s === 'complete' && resolve());
      });
    }
    const sdp = this.pc.localDescription()!.sdp;
    return o.trickle ? sdp.split(/\r?\n/).filter((l) => !l.startsWith('a=candidate:') && l !== 'a=end-of-candidates').join('\r\n') : sdp;
  }

  /** A new offer on the connected peer (renegotiation), as the local description has it. */
  reoffer(): string {
    this.pc.setLocalDescription('offer');
    return this.pc.localDescription()!.sdp;
  }

  /** Wait until ICE gathering completes (trickle: all local candidates known). */
  async gathered(): Promise<void> {
    await until(() => this.pc.gatheringState() === 'complete', { what: 'ICE gathering to complete', timeoutMs: 10_000, everyMs: 20 });
  }

  /** An encoder set up as this caller's own: its band capped at the answer's maxplaybackrate, if it named one. */
  newEncoder(): OpusEncoder48 {
    return new OpusEncoder48(undefined, this.remotePlaybackRate ? { maxBandwidth: bandwidthForPlayback(this.remotePlaybackRate) } : {});
  }

  accept(answerSdp: string): void {
    this.pc.setRemoteDescription(answerSdp, 'answer');
    // as a browser does (libwebrtc): the encoder's band capped to what the other side plays back
    const fmtp = /^a=fmtp:111 (.*)$/m.exec(answerSdp)?.[1] ?? '';
    const rate = /(?:^|;)\s*maxplaybackrate=(\d+)/.exec(fmtp)?.[1];
    this.remotePlaybackRate = rate ? Number(rate) : null;
    this.enc = this.newEncoder();
  }

  /**
   * The call page's order: the offer goes without candidates, the answer is applied, then the local candidates
   * follow by PATCH. (With candidates in the offer the server starts connectivity checks before this
   * node-datachannel client has the answer, and libdatachannel as an offerer sometimes drops its ICE transport
   * then — "Got a remote candidate without ICE transport". Browsers do not; the page trickles anyway.)
   */
  async trickleAfterAnswer(patch: (candidates: Array<{ candidate: string; sdpMid: string }>) => Promise<void>): Promise<void> {
    await this.gathered();
    await patch(this.localCandidates.map((c) => ({ candidate: c.candidate, sdpMid: c.mid })));
  }

  /** Send `ms` of a 440 Hz tone (speech for the scripted engines) or silence, as real-time Opus RTP. */
  async send(ms: number, tone = true): Promise<void> {
    const frames = Math.round(ms / 20);
    const start = performance.now();
    for (let f = 0; f < frames; f++) {
      const pcm = new Int16Array(FRAME_SAMPLES);
      if (tone) for (let i = 0; i < FRAME_SAMPLES; i++) pcm[i] = Math.round(9000 * Math.sin((2 * Math.PI * 440 * (f * FRAME_SAMPLES + i)) / 48_000));
      this.cfg.timestamp = this.ts;
      this.ts = (this.ts + FRAME_SAMPLES) >>> 0;
      if (this.track.isOpen()) this.track.sendMessageBinary(Buffer.from(this.enc.encode(pcm)));
      const wait = start + (f + 1) * 20 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Send one already-encoded 20 ms Opus packet (the benchmark sends a pre-encoded silence frame). */
  sendPacket(packet: Uint8Array): void {
    this.cfg.timestamp = this.ts;
    this.ts = (this.ts + FRAME_SAMPLES) >>> 0;
    if (this.track.isOpen()) this.track.sendMessageBinary(Buffer.from(packet));
  }

  hangup(): void {
    if (this.dc.isOpen()) this.dc.sendMessage(JSON.stringify({ type: 'hangup' }));
  }

  close(): void {
    try {
      this.pc.close();
    } catch { /* closed */ }
  }
}
