// Barge-in on caller sound (interruptionMinWords 0) without losing the agent's sentence to a cough, a door or a
// "mm": the sound stops the agent at once, but its utterances are held (SpeechHandle.pause, Pacer.pause) rather than
// cut. A word transcribed while they are held makes it a real interruption: they are cut, and the context and the
// transcript keep what was heard. No word by RESUME_AFTER_MS after the caller's sound stopped: it was not an
// interruption, and the held utterances play on from the part the caller did not hear (one transcript entry, the
// whole text once). Sound that resumes restarts the wait.
import type { SpeechHandle } from './speech.ts';
import { falseInterruptionsTotal } from '../pipeline/metrics.ts';

/** Quiet after the caller's sound with no word transcribed, after which the agent plays on (ms). */
export const RESUME_AFTER_MS = 1500;

export interface HoldDeps {
  pause(s: SpeechHandle): void;
  resume(s: SpeechHandle): void;
  /** the real interruption: cut one utterance (the session rewrites what was heard) */
  cut(s: SpeechHandle): void;
  /** a timer the session owns (cleared when the call ends) */
  after(ms: number, fn: () => void): NodeJS.Timeout;
  onResumed?(speeches: SpeechHandle[]): void;
}

export class FalseInterruptionGuard {
  private held: SpeechHandle[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: HoldDeps,
    private readonly resumeAfterMs = RESUME_AFTER_MS,
  ) {}

  /** Utterances held now (none: nothing to resume or cut). */
  get holding(): boolean {
    return this.held.length > 0;
  }

  /** Caller sound over the agent: hold these utterances. Returns whether one of them was playing. */
  hold(speeches: SpeechHandle[]): boolean {
    let playing = false;
    for (const s of speeches) {
      if (s.finished || s.paused) continue;
      if (s.state === 'speaking') playing = true;
      s.pause();
      this.deps.pause(s);
      this.held.push(s);
    }
    this.clearTimer();
    return playing;
  }

  /** The caller's sound stopped (VAD): the wait for a word starts. */
  quiet(): void {
    if (!this.held.length) return;
    this.clearTimer();
    this.timer = this.deps.after(this.resumeAfterMs, () => {
      this.timer = null;
      this.resume();
    });
  }

  /** The caller makes sound again: no resuming while they do. */
  sound(): void {
    this.clearTimer();
  }

  /** Words were transcribed: a real interruption. Returns whether a held utterance had been playing. */
  words(): boolean {
    this.clearTimer();
    const held = this.held.splice(0);
    let playing = false;
    for (const s of held) {
      if (s.finished) continue;
      if (s.state === 'speaking') playing = true;
      this.deps.cut(s);
    }
    return playing;
  }

  private resume(): void {
    const held = this.held.splice(0).filter((s) => !s.finished);
    for (const s of held) {
      s.resume();
      this.deps.resume(s);
    }
    if (held.length) {
      falseInterruptionsTotal.inc();
      this.deps.onResumed?.(held);
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  close(): void {
    this.clearTimer();
    this.held = [];
  }
}
