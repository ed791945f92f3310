// The turn manager, the last caller-side stage: decides when the caller's turn ends and with which text.
import type { Frame } from '../frames.ts';
import { Processor } from '../processor.ts';

export interface TurnManagerOptions {
  /** STT has its own end-of-turn (then VAD silence does not end turns) */
  sttTurnDetection: boolean;
  /** after VAD stop with text already final: wait this long for a trailing final */
  trailingFinalMs: number;
  /** after VAD stop with no final yet: give up waiting for one after this long (uses the last interim) */
  finalTimeoutMs: number;
}

/**
 * Decides when the caller's turn ends: the STT's own end-of-turn where it has one, else the end of the caller's
 * speech (VAD silence, or the turn model's decision where one runs: policy.ts) plus a final transcript. Emits `turnEnd{text}`; passes speaking and transcript frames on for barge-in and the client events.
 */
export class TurnManager extends Processor {
  readonly name = 'turns';
  private text = '';
  private interim = '';
  private speaking = false;
  private waiting: NodeJS.Timeout | null = null;
  constructor(private readonly opts: TurnManagerOptions) {
    super();
  }
  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'userStartedSpeaking':
        this.speaking = true;
        this.clearWait();
        this.push(frame);
        return;
      case 'userStoppedSpeaking':
        this.speaking = false;
        this.push(frame);
        if (!this.opts.sttTurnDetection) this.arm(this.text ? this.opts.trailingFinalMs : this.opts.finalTimeoutMs);
        return;
      case 'transcript':
        this.push(frame);
        if (frame.final) {
          this.text = join(this.text, frame.text);
          this.interim = '';
          if (!this.speaking && !this.opts.sttTurnDetection) this.endTurn();
        } else this.interim = frame.text;
        return;
      case 'turnEnd':
        this.clearWait();
        this.text = join(this.text, '') || frame.text || this.interim;
        this.endTurn();
        return;
      default:
        this.push(frame);
    }
  }
  private arm(ms: number): void {
    this.clearWait();
    this.waiting = setTimeout(() => {
      this.waiting = null;
      if (!this.speaking) {
        if (!this.text && this.interim) this.text = this.interim;
        this.endTurn();
      }
    }, ms);
  }
  private clearWait(): void {
    if (this.waiting) clearTimeout(this.waiting);
    this.waiting = null;
  }
  private endTurn(): void {
    this.clearWait();
    const text = this.text.trim();
    this.text = '';
    this.interim = '';
    if (text) this.push({ type: 'turnEnd', text });
  }
  override close(): void {
    this.clearWait();
  }
}

function join(a: string, b: string): string {
  return [a.trim(), b.trim()].filter(Boolean).join(' ');
}
