// One shared frame clock per process: a drift-corrected 20 ms tick that drives every call's pacer, so 200 calls
// cost one timer, not 200. Lateness of each tick is kept for the pacing-jitter figures.
export interface Tickable {
  /** `at` is the tick's nominal time on the 20 ms grid (not the moment the timer actually fired), so a late timer
   * does not change how many frames a pacer sends, only when. */
  tick(at: number): void;
}

export class FrameClock {
  private readonly members = new Set<Tickable>();
  private timer: NodeJS.Timeout | null = null;
  private next = 0;
  /** lateness (ms) of recent ticks, for benchmarks */
  readonly lateness: number[] = [];
  recordLateness = false;

  constructor(
    readonly periodMs = 20,
    readonly now: () => number = () => performance.now(),
  ) {}

  add(m: Tickable): void {
    this.members.add(m);
    if (!this.timer) {
      this.next = this.now() + this.periodMs;
      this.schedule();
    }
  }

  delete(m: Tickable): void {
    this.members.delete(m);
    if (this.members.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  get size(): number {
    return this.members.size;
  }

  private schedule(): void {
    this.timer = setTimeout(this.fire, Math.max(0, this.next - this.now()));
  }

  private readonly fire = (): void => {
    const now = this.now();
    if (this.recordLateness) this.lateness.push(now - this.next);
    const at = this.next;
    for (const m of this.members) m.tick(at);
    this.next += this.periodMs;
    if (this.next < now) this.next = now + this.periodMs; // fell far behind: resync rather than burst
    if (this.members.size) this.schedule();
    else this.timer = null;
  };
}

export const sharedClock = new FrameClock();
