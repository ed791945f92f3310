// Output pacer: agent audio (24 kHz) in, 20 ms frames out on the shared clock, never more than `leadMs` ahead of
// real time, so barge-in is instant and no stale audio piles up. It knows what was actually played: each sent
// frame starts playing at its playhead time; chunks count a frame as played once that time has passed.
import type { Frame } from './frames.ts';
import { Processor } from './processor.ts';
import { sharedClock, type FrameClock, type Tickable } from './clock.ts';
import type { Mixer } from './mixer.ts';
import type { SpeechHandle } from '../session/speech.ts';
import { pacerUnderrunsTotal } from './metrics.ts';

type Item =
  | { kind: 'audio'; pcm: Int16Array; off: number; speech: SpeechHandle; chunk: number }
  | { kind: 'end'; speech: SpeechHandle };

export interface PacerOptions {
  sampleRate: number;
  frameMs: number;
  leadMs: number;
  clock: FrameClock;
  mixer: Mixer | null;
  /**
   * Milliseconds into the audio handed to `send` that the far end has confirmed playing (carrier marks). When
   * given, a frame counts as played once confirmed (instead of once its playout time has passed); frames never
   * confirmed within `confirmWithinMs` of their playout time fall back to the clock.
   */
  playedMs?: () => number;
  confirmWithinMs: number;
  /** a frame leaves for the transport; `at` is its playout time on the clock */
  send(pcm: Int16Array, at: number): void;
  onSpeechStart?(speech: SpeechHandle, now: number): void;
  onChunkStart?(speech: SpeechHandle, chunk: number): void;
  onSpeechPlayed?(speech: SpeechHandle): void;
}

export class Pacer extends Processor implements Tickable {
  readonly name = 'pacer';
  private readonly queue: Item[] = [];
  private playhead = 0;
  /** sent frames not yet counted as played */
  /** `pcm`: the frame's speech audio before the mixer (what goes back to the queue when its utterance is paused) */
  private readonly inFlight: Array<{ at: number; end: number; pcm: Int16Array; parts: Array<{ speech: SpeechHandle; chunk: number; n: number }> }> = [];
  /** ms of audio handed to `send` so far (the coordinate of opts.playedMs) */
  private sentMs = 0;
  private readonly ends: Array<{ speech: SpeechHandle; at: number }> = [];
  private readonly frameSamples: number;
  private readonly opts: PacerOptions;
  private started = new WeakSet<SpeechHandle>();
  private chunkStarted = new WeakMap<SpeechHandle, number>();
  private running = false;
  /** the latest time the pacer has filled its lead for: a tick's nominal time, or real time when audio started it
   * from idle (see arrivalTime) */
  private pumpedAt = -Infinity;
  /** the utterance of the last frame sent, and where that frame ends on the clock: a later frame of the same
   * utterance that starts after that is an underrun (counted) */
  private lastSpeech: SpeechHandle | null = null;
  private lastEnd = 0;
  /** underruns of this pacer (also counted in voice_pacer_underruns_total) */
  underruns = 0;

  constructor(opts: Partial<PacerOptions> & Pick<PacerOptions, 'send'>) {
    super();
    this.opts = { sampleRate: 24000, frameMs: 20, leadMs: 100, clock: sharedClock, mixer: null, confirmWithinMs: 1500, ...opts };
    this.frameSamples = Math.round((this.opts.sampleRate * this.opts.frameMs) / 1000);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.opts.clock.add(this);
  }

  override close(): void {
    this.running = false;
    this.opts.clock.delete(this);
    this.queue.length = 0;
  }

  /** queued audio (ms) not yet sent */
  get queuedMs(): number {
    let n = 0;
    for (const it of this.queue) if (it.kind === 'audio') n += it.pcm.length - it.off;
    return (n / this.opts.sampleRate) * 1000;
  }

  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'audioOut':
        if (frame.speech.finished) return;
        this.queue.push({ kind: 'audio', pcm: frame.pcm, off: 0, speech: frame.speech, chunk: frame.chunk });
        this.pump(this.arrivalTime());
        return;
      case 'flush':
        if (frame.speech.finished) return;
        this.queue.push({ kind: 'end', speech: frame.speech });
        this.pump(this.arrivalTime());
        return;
      case 'interrupt': {
        const now = this.opts.clock.now();
        this.settle(now, true);
        for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i]!.speech.finished) this.queue.splice(i, 1);
        for (let i = this.ends.length - 1; i >= 0; i--) if (this.ends[i]!.speech.finished) this.ends.splice(i, 1);
        this.push(frame);
        return;
      }
      default:
        this.push(frame);
    }
  }

  tick(now: number): void {
    this.pump(now);
  }

  /**
   * Stop playing an utterance without dropping it (caller sound that may not be an interruption): what was heard
   * stays played; its audio sent but not yet heard goes back to the head of the queue, so resume() plays on from
   * exactly where the caller stopped hearing it. Nothing else of it is sent meanwhile (what queues behind it waits).
   */
  pause(speech: SpeechHandle): void {
    const now = this.opts.clock.now();
    this.settle(now, false);
    const back: Item[] = [];
    for (let i = 0; i < this.inFlight.length; ) {
      const f = this.inFlight[i]!;
      if (f.parts[0]!.speech !== speech) {
        i++;
        continue;
      }
      this.inFlight.splice(i, 1);
      let off = 0;
      for (const p of f.parts) {
        back.push({ kind: 'audio', pcm: f.pcm.subarray(off, off + p.n), off: 0, speech, chunk: p.chunk });
        off += p.n;
      }
    }
    for (let i = this.ends.length - 1; i >= 0; i--) {
      if (this.ends[i]!.speech !== speech) continue;
      this.ends.splice(i, 1);
      back.push({ kind: 'end', speech });
    }
    this.queue.unshift(...back);
    if (this.lastSpeech === speech) this.lastSpeech = null; // the gap of a pause is not an underrun
  }

  /** Play a paused utterance on. */
  resume(_speech: SpeechHandle): void {
    this.pump(this.arrivalTime());
  }

  /**
   * The time to pump at when audio arrives between ticks. Idle or behind real time: now, so the first audio of a
   * reply (or audio that ends an underrun) leaves at once. Playing, i.e. ahead of real time: the time the lead was
   * last filled for (the latest tick), so arriving audio only fills what that tick would have sent had the audio been
   * there; every later frame waits for its own tick. Pumping at `now` there would send the next tick's frame early
   * whenever a TTS message lands between ticks, and that tick would then have nothing to send: a frame right after
   * the previous one, then a hole (reply jitter; see docs/benchmarks.md).
   */
  private arrivalTime(): number {
    const now = this.opts.clock.now();
    return this.playhead > now ? Math.min(now, this.pumpedAt) : now;
  }

  private pump(now: number): void {
    if (now > this.pumpedAt) this.pumpedAt = now;
    this.settle(now, false);
    const { frameMs, leadMs, mixer } = this.opts;
    if (this.playhead < now) this.playhead = now; // underrun or idle: restart at real time
    while (this.playhead < now + leadMs) {
      const t = this.take();
      // 'wait': speech in progress but its next audio has not arrived yet (sounds keep flowing meanwhile)
      const taken = t === 'wait' ? null : t;
      if (t === 'wait' && !mixer?.active) break;
      const pcm = mixer ? mixer.mix(taken?.pcm ?? null) : (taken?.pcm ?? null);
      if (!pcm) break;
      const at = this.playhead;
      if (taken) {
        const speech = taken.parts[0]!.speech;
        if (speech === this.lastSpeech && at > this.lastEnd + 0.5) {
          this.underruns++;
          pacerUnderrunsTotal.inc();
        }
        this.lastSpeech = speech;
        this.lastEnd = at + frameMs;
        for (const p of taken.parts) {
          if (!this.started.has(p.speech)) {
            this.started.add(p.speech);
            p.speech.markSpeaking(now);
            this.opts.onSpeechStart?.(p.speech, now);
          }
          if ((this.chunkStarted.get(p.speech) ?? -1) < p.chunk) {
            this.chunkStarted.set(p.speech, p.chunk);
            this.opts.onChunkStart?.(p.speech, p.chunk);
          }
        }
      }
      this.sentMs += (pcm.length / this.opts.sampleRate) * 1000;
      if (taken) this.inFlight.push({ at, end: this.sentMs, pcm: taken.pcm, parts: taken.parts });
      this.opts.send(pcm, at);
      this.playhead += frameMs;
    }
    this.settle(now, false);
  }

  /** Count frames whose playout has started as played; finish utterances whose audio has fully played. */
  private settle(now: number, all: boolean): void {
    // runs twice per tick per call: no closure, no allocation on the way
    const confirmed = this.opts.playedMs?.();
    const within = this.opts.confirmWithinMs;
    while (this.inFlight.length) {
      const f = this.inFlight[0]!;
      const heard = confirmed === undefined ? f.at <= now : f.end <= confirmed + 0.5 || f.at + within <= now;
      if (!heard && !all) break;
      this.inFlight.shift();
      if (!heard) continue; // interruption: sent but not yet played → not heard
      for (const p of f.parts) {
        const c = p.speech.chunks[p.chunk];
        if (c) c.played += p.n;
      }
    }
    for (let i = 0; i < this.ends.length; ) {
      const e = this.ends[i]!;
      if (e.at <= now) {
        this.ends.splice(i, 1);
        if (!e.speech.finished) {
          e.speech.markPlayed();
          this.opts.onSpeechPlayed?.(e.speech);
        }
      } else i++;
    }
  }

  /** Take one frame of speech audio (one utterance per frame, padded with silence at its end). */
  private take(): { pcm: Int16Array; parts: Array<{ speech: SpeechHandle; chunk: number; n: number }> } | null | 'wait' {
    const q = this.queue;
    while (q.length && q[0]!.speech.finished) q.shift();
    if (q.length && q[0]!.speech.paused) return 'wait';
    // an utterance whose audio is all sent: it ends when the last sent frame has played
    while (q.length && q[0]!.kind === 'end') this.ends.push({ speech: q.shift()!.speech, at: this.playhead });
    if (!q.length) return null;
    const speech = q[0]!.speech;
    let avail = 0;
    let hasEnd = false;
    for (const it of q) {
      // another utterance queued behind this one (e.g. a tool message during a reply): send what we have
      if (it.speech !== speech || it.kind === 'end') {
        hasEnd = true;
        break;
      }
      avail += it.pcm.length - it.off;
      if (avail >= this.frameSamples) break;
    }
    // a partial frame with more of this utterance still coming: wait for it rather than send a gap
    if (avail < this.frameSamples && !hasEnd) return 'wait';
    const head = q[0]!;
    if (head.kind === 'audio' && head.pcm.length - head.off >= this.frameSamples) {
      // the whole frame inside one chunk (nearly always): a view of the chunk, no copy (chunks are never written to)
      const pcm = head.pcm.subarray(head.off, head.off + this.frameSamples);
      head.off += this.frameSamples;
      if (head.off >= head.pcm.length) q.shift();
      this.endIfLast(speech);
      return { pcm, parts: [{ speech, chunk: head.chunk, n: this.frameSamples }] };
    }
    const out = new Int16Array(this.frameSamples);
    const parts: Array<{ speech: SpeechHandle; chunk: number; n: number }> = [];
    let filled = 0;
    while (filled < this.frameSamples && q.length) {
      const it = q[0]!;
      if (it.speech !== speech || it.kind === 'end') break;
      const n = Math.min(this.frameSamples - filled, it.pcm.length - it.off);
      out.set(it.pcm.subarray(it.off, it.off + n), filled);
      filled += n;
      it.off += n;
      const last = parts[parts.length - 1];
      if (last && last.chunk === it.chunk) last.n += n;
      else parts.push({ speech, chunk: it.chunk, n });
      if (it.off >= it.pcm.length) q.shift();
    }
    this.endIfLast(speech);
    return { pcm: out, parts };
  }

  /** The utterance's end marker is next: it ends when the frame just taken has played. */
  private endIfLast(speech: SpeechHandle): void {
    const next = this.queue[0];
    if (next && next.kind === 'end' && next.speech === speech) {
      this.queue.shift();
      this.ends.push({ speech, at: this.playhead + this.opts.frameMs });
    }
  }
}
