// The turn model's policy, between the VAD and the STT, for engines without an end of turn of their own. The VAD's
// short stop window (STOP_WINDOW_MS of silence) asks the model (media/services/turn) whether what the caller said so
// far sounds finished: "complete" ends the caller's speech at once; "incomplete" keeps the turn open, and the model
// is asked again at the next pause after the caller goes on. Whatever it says, MAX_SILENCE_MS of silence ends the
// turn. Only the end of the turn goes on as `userStoppedSpeaking` (so the STT finalizes once per turn, with the whole
// turn's audio, and the session sees one end of speech); a pause that does not end the turn goes on as `userPaused`
// and the speech after it as `userResumed`. One decision at a time per call: a decision that comes back after the
// caller went on is dropped, and the model is asked again at the next pause. A model that fails falls back to the
// VAD-only stop window for that pause.
import type { Logger } from '../../../core/logger.ts';
import type { Frame } from '../frames.ts';
import { Processor } from '../processor.ts';
import type { Engines, TurnDecision, TurnModel } from '../../services/types.ts';

/** The VAD's stop window while a turn model decides (ms of silence before it is asked). */
export const STOP_WINDOW_MS = 200;
/** The VAD-only stop window (the VAD's default; used when the model cannot decide). */
export const VAD_ONLY_STOP_MS = 600;
/** Silence that ends the turn whatever the model says (ms since the caller's speech stopped). */
export const MAX_SILENCE_MS = 3000;
/** Audio before the turn's first speech onset that the model hears (ms): the onset comes after ~160 ms of speech. */
const PRE_SPEECH_MS = 700;
/** The model reads the last 8 s of the turn. */
const WINDOW_MS = 8000;

export interface TurnPolicyOptions {
  /** the VAD's stop window in force (ms): the pause has lasted this long when the stop arrives */
  stopWindowMs?: number;
  maxSilenceMs?: number;
  vadOnlyStopMs?: number;
  /** monotonic clock (ms) */
  now?: () => number;
  /** each decision the model made (bench, logs): `stale` when the caller went on before it came back */
  onDecision?(d: TurnDecision & { waitMs: number; stale: boolean }): void;
  /** the model failed on a pause (that pause fell back to the VAD-only window) */
  onFailure?(err: unknown): void;
}

export class TurnPolicyStage extends Processor {
  readonly name = 'turnModel';
  private readonly rate = 16000;
  private readonly ring: Int16Array;
  /** samples written since the call started */
  private written = 0;
  /** the sample index the turn's audio starts at; -1: no turn open */
  private turnStart = -1;
  /** a VAD stop is being held: the caller is silent inside a turn the model has not ended */
  private holding = false;
  private stoppedAt = 0;
  /** counts pauses and resumes: a decision made for an older one is stale */
  private generation = 0;
  private deciding = false;
  private timer: NodeJS.Timeout | null = null;
  private enabled = true;
  private readonly opts: Required<Omit<TurnPolicyOptions, 'onDecision' | 'onFailure'>> & Pick<TurnPolicyOptions, 'onDecision' | 'onFailure'>;

  constructor(
    private readonly model: TurnModel,
    opts: TurnPolicyOptions = {},
  ) {
    super();
    this.opts = {
      stopWindowMs: STOP_WINDOW_MS,
      maxSilenceMs: MAX_SILENCE_MS,
      vadOnlyStopMs: VAD_ONLY_STOP_MS,
      now: () => performance.now(),
      ...opts,
    };
    this.ring = new Int16Array(((WINDOW_MS + PRE_SPEECH_MS + 2000) / 1000) * this.rate);
  }

  /** The stop window the VAD now uses (the session sets the VAD to STOP_WINDOW_MS once the model is ready). */
  setStopWindow(ms: number): void {
    this.opts.stopWindowMs = ms;
  }

  /** From now on VAD stops pass straight through (the model cannot run here). */
  disable(): void {
    this.enabled = false;
    if (this.holding) this.endTurn();
  }

  get active(): boolean {
    return this.enabled;
  }

  /**
   * Load the model (its pool is shared by the process's calls). Ready: the VAD's stop window becomes STOP_WINDOW_MS
   * (a VAD that cannot change it keeps its own, and the model is asked at that). Not ready: VAD-only from now on;
   * resolves with the reason.
   */
  async activate(vad: { setRedemptionMs?(ms: number): void }, log?: Logger): Promise<string | null> {
    try {
      await this.model.ready();
    } catch (err) {
      this.disable();
      const why = err instanceof Error ? err.message : String(err);
      if (log) reportFallback(log, why);
      return why;
    }
    if (vad.setRedemptionMs) {
      vad.setRedemptionMs(STOP_WINDOW_MS);
      this.setStopWindow(STOP_WINDOW_MS);
    } else this.setStopWindow(VAD_ONLY_STOP_MS);
    return null;
  }

  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'audioIn':
        if (this.enabled) this.record(frame.pcm);
        this.push(frame);
        return;
      case 'userStartedSpeaking':
        if (this.holding) {
          // the caller goes on: the same turn
          this.holding = false;
          this.generation++;
          this.clearTimer();
          this.push({ type: 'userResumed' });
          return;
        }
        if (this.turnStart < 0) this.turnStart = Math.max(0, this.written - (PRE_SPEECH_MS / 1000) * this.rate);
        this.push(frame);
        return;
      case 'userStoppedSpeaking':
        if (!this.enabled || this.turnStart < 0) {
          this.turnStart = -1;
          this.push(frame);
          return;
        }
        this.holding = true;
        this.stoppedAt = this.opts.now();
        this.generation++;
        this.arm(this.opts.maxSilenceMs - this.opts.stopWindowMs);
        this.push({ type: 'userPaused' });
        this.ask();
        return;
      default:
        this.push(frame);
    }
  }

  private record(pcm: Int16Array): void {
    const ring = this.ring;
    let at = this.written % ring.length;
    for (let i = 0; i < pcm.length; i++) {
      ring[at++] = pcm[i]!;
      if (at === ring.length) at = 0;
    }
    this.written += pcm.length;
  }

  /** The turn's audio so far (at most the model's window), oldest first. */
  private turnAudio(): Int16Array {
    const ring = this.ring;
    const from = Math.max(this.turnStart, this.written - (WINDOW_MS / 1000) * this.rate, this.written - ring.length);
    const out = new Int16Array(this.written - from);
    for (let i = 0; i < out.length; i++) out[i] = ring[(from + i) % ring.length]!;
    return out;
  }

  private ask(): void {
    if (this.deciding) return; // asked again when the one in flight comes back
    const gen = this.generation;
    const askedAt = this.opts.now();
    this.deciding = true;
    this.model.decide(this.turnAudio()).then(
      (d) => {
        this.deciding = false;
        const stale = gen !== this.generation || !this.holding;
        this.opts.onDecision?.({ ...d, waitMs: this.opts.now() - askedAt, stale });
        if (stale) {
          if (this.holding) this.ask(); // a newer pause is waiting for its decision
          return;
        }
        if (d.complete) this.safely(() => this.endTurn());
      },
      (err: unknown) => {
        this.deciding = false;
        this.opts.onFailure?.(err);
        // this pause ends like a VAD-only one: after the VAD-only stop window of silence
        if (this.holding && gen === this.generation) this.arm(this.opts.vadOnlyStopMs - (this.opts.now() - this.stoppedAt) - this.opts.stopWindowMs);
        else if (this.holding) this.ask();
      },
    );
  }

  private arm(ms: number): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.holding) this.safely(() => this.endTurn());
    }, Math.max(0, ms));
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onError(err, this.name);
    }
  }

  private endTurn(): void {
    this.clearTimer();
    this.holding = false;
    this.generation++;
    this.turnStart = -1;
    this.push({ type: 'userStoppedSpeaking', turnModel: { model: this.model.id, heldMs: this.opts.now() - this.stoppedAt } });
  }

  override close(): void {
    this.clearTimer();
    this.holding = false;
    this.generation++;
  }
}

/** The policy for a call's engines: their turn model, unless the STT ends turns itself (then none). */
export function turnPolicyFor(engines: Engines, now: () => number, log: Logger): TurnPolicyStage | null {
  if (engines.stt.hasTurnDetection || !engines.turn) return null;
  return new TurnPolicyStage(engines.turn, { now, onFailure: (err) => log.warn({ err }, 'turn model failed: this pause ends on VAD silence') });
}

/** Why the turn model cannot run here, logged once per process per reason (every call then runs VAD-only quietly). */
let fallbackReported = '';
function reportFallback(log: Logger, why: string): void {
  if (fallbackReported === why) return;
  fallbackReported = why;
  log.warn({ reason: why }, 'turn model unavailable: caller turns end on VAD silence alone');
}
