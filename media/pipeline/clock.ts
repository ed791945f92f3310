// One shared frame clock per process: a drift-corrected 20 ms tick that drives every call's pacer, so all calls
// cost one timer. Lateness of each tick is kept for the pacing-jitter figures.
//
// Under load the timer alone ticks late: Node runs timers only between event-loop phases, and with many calls one
// poll phase (every socket that has data: caller audio, vendor messages) can run long, all of which the due tick
// waits — and every frame waits with it. So the busiest input path (each caller
// frame) also calls poll(), which runs a due tick there and then; the timer remains for quiet moments.
export interface Tickable {
  /** `at` is the tick's nominal time on the 20 ms grid (not the moment the timer actually fired), so a late timer
   * does not change how many frames a pacer sends, only when. */
  tick(at: number): void;
}

export class FrameClock {
  private readonly members = new Set<Tickable>();
  private timer: NodeJS.Timeout | null = null;
  private next = 0;
  private firing = false;
  /** lateness (ms) of recent ticks, for benchmarks */
  readonly lateness: number[] = [];
  /** when each of those ticks ran (performance.timeOrigin + now(): comparable across processes on one machine) */
  readonly latenessAt: number[] = [];
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

  /** Run the tick now if it is due (cheap: one clock read). Called from busy input paths, see the header. */
  poll(): void {
    if (this.timer === null || this.firing) return;
    if (this.now() < this.next) return;
    clearTimeout(this.timer);
    this.fire();
  }

  private schedule(): void {
    this.timer = setTimeout(this.fire, Math.max(0, this.next - this.now()));
  }

  private readonly fire = (): void => {
    const now = this.now();
    if (this.recordLateness) {
      this.lateness.push(now - this.next);
      this.latenessAt.push(performance.timeOrigin + now);
    }
    const at = this.next;
    this.firing = true;
    try {
      for (const m of this.members) m.tick(at);
    } finally {
      this.firing = false;
    }
    this.next += this.periodMs;
    if (this.next < now) this.next = now + this.periodMs; // fell far behind: resync rather than burst
    if (this.members.size) this.schedule();
    else this.timer = null;
  };
}

export const sharedClock = new FrameClock();
