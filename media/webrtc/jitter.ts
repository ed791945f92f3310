// Receive-side jitter buffer for 20 ms Opus frames: puts RTP packets back in sequence order, drops duplicates and
// packets that arrive after their slot was played, and fills gaps: a lost packet (sequence gap that is still open
// after `maxWaitMs`, or more than `depth` packets queued behind it) becomes one concealed frame (decoder PLC, else
// the last frame repeated with a fading gain, then silence); a timestamp jump with contiguous sequence numbers
// (the sender paused, DTX) becomes silence of the same length (capped). Output is decoded PCM in order (48 kHz
// unless the decoder runs at less). It also keeps the RFC 3550 interarrival jitter estimate and loss counters.
// The buffer only decides *what* plays and *when* (timing stays on the event loop); its decisions go to a FrameSink
// as ordered instructions (play this packet / conceal one frame / this much silence). DecodeStage turns them into PCM,
// inline (a FrameDecoder given to the constructor) or in a codec worker process (codec-pool.ts runs the same
// DecodeStage there), so both give the same audio.
import { FRAME_SAMPLES, OPUS_RATE } from '../../core/audio/opus.ts';
import { seqDiff, type RtpPacket } from './rtp.ts';

export interface FrameDecoder {
  decode(packet: Uint8Array): Int16Array;
  conceal(): Int16Array | null;
}

/** The jitter buffer's decisions, in play order. */
export interface FrameSink {
  /** play this packet's payload (decode it; a corrupt one is concealed) */
  packet(payload: Uint8Array): void;
  /** one 20 ms frame whose packet never came */
  conceal(): void;
  /** the sender paused: this many samples of silence at 48 kHz */
  silence(samples: number): void;
}

/**
 * Instructions → decoded PCM at `rate` (the decoder's output rate; 48 kHz unless the decoder was created for less):
 * decoder PLC for a lost frame where the backend has it, else the last frame repeated at a falling gain (3 frames to
 * silence); a packet that fails to decode is concealed and counted. Silence arrives counted at 48 kHz (the RTP
 * clock) and leaves at `rate`.
 */
export class DecodeStage implements FrameSink {
  private last: Int16Array | null = null;
  private fade = 1;
  private readonly frame: number;
  /** packets that could not be decoded (each also concealed) */
  corrupt = 0;

  constructor(
    private readonly decoder: FrameDecoder,
    private readonly out: (pcm: Int16Array) => void,
    private readonly rate: number = OPUS_RATE,
  ) {
    this.frame = (FRAME_SAMPLES * rate) / OPUS_RATE;
  }

  packet(payload: Uint8Array): void {
    let pcm: Int16Array;
    try {
      pcm = this.decoder.decode(payload);
    } catch {
      this.corrupt++;
      this.conceal();
      return;
    }
    this.last = pcm;
    this.fade = 1;
    this.out(pcm);
  }

  conceal(): void {
    const plc = this.decoder.conceal();
    if (plc) {
      this.out(plc);
      return;
    }
    this.fade = Math.max(0, this.fade - 1 / 3);
    const src = this.last;
    const frame = new Int16Array(this.frame);
    if (src && this.fade > 0) for (let i = 0; i < this.frame; i++) frame[i] = Math.round((src[i % src.length] ?? 0) * this.fade);
    this.out(frame);
  }

  silence(samples48k: number): void {
    this.out(new Int16Array(this.rate === OPUS_RATE ? samples48k : Math.round((samples48k * this.rate) / OPUS_RATE)));
  }
}

export interface JitterStats {
  received: number;
  /** frames concealed because their packet never came */
  concealed: number;
  /** packets dropped: duplicates or too late */
  late: number;
  /** packets that could not be decoded (counted where they are decoded: inline here, else added by the owner) */
  corrupt: number;
  /** silence inserted for timestamp jumps, in ms */
  silenceMs: number;
  /** RFC 3550 interarrival jitter, ms */
  jitterMs: number;
}

export interface JitterOptions {
  /** packets queued behind a gap before it is declared lost (default 3) */
  depth?: number;
  /** how long a gap may stay open (default 60 ms) */
  maxWaitMs?: number;
  /** longest silence inserted for one timestamp jump (default 1000 ms) */
  maxSilenceMs?: number;
  now?: () => number;
}

export class JitterBuffer {
  private readonly depth: number;
  private readonly maxWaitMs: number;
  private readonly maxSilenceSamples: number;
  private readonly now: () => number;
  private readonly queue = new Map<number, { pkt: RtpPacket; at: number }>();
  private next: number | null = null;
  private lastTs: number | null = null;
  private gapSince: number | null = null;
  private gapTimer: NodeJS.Timeout | null = null;
  private readonly sink: FrameSink;
  private readonly stage: DecodeStage | null;
  private prevTransit: number | null = null;
  private jitter = 0; // in timestamp units
  private closed = false;
  readonly stats: JitterStats = { received: 0, concealed: 0, late: 0, corrupt: 0, silenceMs: 0, jitterMs: 0 };

  /** Inline decoding: `decoder` → `out` (decoded 48 kHz PCM); or, with `out` null, `target` is the sink of instructions. */
  constructor(target: FrameDecoder | FrameSink, out: ((pcm48k: Int16Array) => void) | null, o: JitterOptions = {}) {
    if (out) {
      this.stage = new DecodeStage(target as FrameDecoder, out);
      this.sink = this.stage;
    } else {
      this.stage = null;
      this.sink = target as FrameSink;
    }
    this.depth = o.depth ?? 3;
    this.maxWaitMs = o.maxWaitMs ?? 60;
    this.maxSilenceSamples = Math.round(((o.maxSilenceMs ?? 1000) / 1000) * OPUS_RATE);
    this.now = o.now ?? (() => performance.now());
  }

  push(pkt: RtpPacket): void {
    if (this.closed) return;
    const at = this.now();
    this.stats.received++;
    this.updateJitter(pkt.timestamp, at);
    if (this.next === null) this.next = pkt.sequence;
    if (pkt.sequence === this.next && this.queue.size === 0) {
      // the usual case: the packet due, nothing waiting behind a gap: it plays at once, without going through the
      // queue (a Map that would otherwise grow and shrink, an entry object, for every packet of every call)
      this.play(pkt);
      this.next = (this.next + 1) & 0xffff;
      this.gapSince = null;
      this.armGapTimer();
      return;
    }
    if (seqDiff(pkt.sequence, this.next) < 0 || this.queue.has(pkt.sequence)) {
      this.stats.late++;
      return;
    }
    // a sender restart (huge jump) resynchronises instead of concealing thousands of frames
    if (seqDiff(pkt.sequence, this.next) > 500) {
      this.queue.clear();
      this.next = pkt.sequence;
      this.lastTs = null;
    }
    this.queue.set(pkt.sequence, { pkt, at });
    this.drain(false);
  }

  /** Stop: pending packets are dropped, no more output. */
  close(): void {
    this.closed = true;
    this.queue.clear();
    if (this.gapTimer) clearTimeout(this.gapTimer);
    this.gapTimer = null;
  }

  private updateJitter(ts: number, at: number): void {
    const arrival = (at / 1000) * OPUS_RATE;
    const transit = arrival - ts;
    if (this.prevTransit !== null) {
      let d = Math.abs(transit - this.prevTransit);
      if (d > OPUS_RATE * 10) d = 0; // timestamp wrap or restart
      this.jitter += (d - this.jitter) / 16;
      this.stats.jitterMs = (this.jitter / OPUS_RATE) * 1000;
    }
    this.prevTransit = transit;
  }

  private drain(force: boolean): void {
    for (;;) {
      if (this.next === null || this.closed) return;
      const hit = this.queue.get(this.next);
      if (hit) {
        this.queue.delete(this.next);
        this.play(hit.pkt);
        this.next = (this.next + 1) & 0xffff;
        this.gapSince = null;
        continue;
      }
      if (this.queue.size === 0) break;
      // a gap with packets waiting behind it
      const now = this.now();
      this.gapSince ??= Math.min(...[...this.queue.values()].map((e) => e.at));
      if (force || this.queue.size >= this.depth || now - this.gapSince >= this.maxWaitMs) {
        this.concealOne();
        this.next = (this.next + 1) & 0xffff;
        if (this.lastTs !== null) this.lastTs = (this.lastTs + FRAME_SAMPLES) >>> 0;
        force = force && this.queue.size > 0;
        continue;
      }
      break;
    }
    this.armGapTimer();
  }

  private armGapTimer(): void {
    if (this.gapTimer) {
      clearTimeout(this.gapTimer);
      this.gapTimer = null;
    }
    if (this.queue.size === 0 || this.closed) return;
    const wait = Math.max(1, this.maxWaitMs - (this.now() - (this.gapSince ?? this.now())));
    this.gapTimer = setTimeout(() => {
      this.gapTimer = null;
      this.drain(true);
    }, wait);
    this.gapTimer.unref?.();
  }

  private play(pkt: RtpPacket): void {
    // timestamp jump with no missing sequence numbers: the sender paused; keep the timeline with silence
    if (this.lastTs !== null) {
      const gap = ((pkt.timestamp - this.lastTs) | 0) - FRAME_SAMPLES;
      if (gap >= FRAME_SAMPLES && gap < OPUS_RATE * 60) {
        const n = Math.min(gap, this.maxSilenceSamples);
        this.stats.silenceMs += (n / OPUS_RATE) * 1000;
        this.sink.silence(n);
      }
    }
    this.lastTs = pkt.timestamp;
    if (!this.stage) return this.sink.packet(pkt.payload);
    const corrupt = this.stage.corrupt;
    this.stage.packet(pkt.payload);
    if (this.stage.corrupt > corrupt) {
      this.stats.corrupt++;
      this.stats.concealed++;
    }
  }

  private concealOne(): void {
    this.stats.concealed++;
    this.sink.conceal();
  }
}
