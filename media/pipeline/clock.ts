// One shared frame clock per process: a drift-corrected 20 ms tick that drives every call's pacer, so 200 calls
// cost one timer, not 200. Lateness of each tick is kept for the pacing-jitter figures.
//
// Slots: with `slots` > 1 the period is cut into that many sub-ticks and each member ticks in one slot (the one with
// the fewest members when it joins), so every member still ticks once per period, exactly one period apart, but the
// members' work is spread over the period instead of landing in one event-loop turn. With 80 WebRTC calls speaking,
// one tick for all of them (an Opus encode and an SRTP send per call) held the event loop ≈ 7 ms every 20 ms, and
// everything else that came in meanwhile (caller packets, vendor replies) waited behind it.
//
// Under load the timer alone ticks late: Node runs timers only between event-loop phases, and with a few hundred
// calls one poll phase (every socket that has data: caller audio, vendor messages) can take tens of milliseconds,
// every one of which the due tick waits — and every frame waits with it. So the busiest input path (each caller
// frame) also calls poll(), which runs a due tick there and then; the timer remains for quiet moments.
export interface Tickable {
  /** `at` is the tick's nominal time on the 20 ms grid (not the moment the timer actually fired), so a late timer
   * does not change how many frames a pacer sends, only when. */
  tick(at: number): void;
}

export class FrameClock {
  private readonly members = new Map<Tickable, number>();
  /** the members of each slot */
  private slotMembers: Array<Set<Tickable>> = [];
  /** the slot the next sub-tick runs */
  private slot = 0;
  private subMs = 0;
  private slotCount = 1;
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
    slots = 1,
  ) {
    this.setSlots(slots);
  }

  get slots(): number {
    return this.slotCount;
  }

  /** Cut the period into `n` slots (see the header); only while the clock has no members. */
  setSlots(n: number): void {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`slots must be a positive integer (got ${n})`);
    if (this.members.size) throw new Error('the clock has members: its slots are fixed until they leave');
    this.slotCount = n;
    this.slotMembers = Array.from({ length: n }, () => new Set<Tickable>());
    this.subMs = this.periodMs / n;
    this.slot = 0;
  }

  add(m: Tickable): void {
    if (this.members.has(m)) return;
    let best = 0;
    for (let i = 1; i < this.slots; i++) if (this.slotMembers[i]!.size < this.slotMembers[best]!.size) best = i;
    this.members.set(m, best);
    this.slotMembers[best]!.add(m);
    if (!this.timer) {
      this.next = this.now() + this.subMs;
      this.schedule();
    }
  }

  delete(m: Tickable): void {
    const slot = this.members.get(m);
    if (slot === undefined) return;
    this.members.delete(m);
    this.slotMembers[slot]!.delete(m);
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
    // a late timer can find several slots due: each runs (in order), so no slot misses its tick
    for (let n = 0; n < this.slots && this.next <= now; n++) {
      const members = this.slotMembers[this.slot]!;
      if (members.size) {
        if (this.recordLateness) {
          this.lateness.push(now - this.next);
          this.latenessAt.push(performance.timeOrigin + now);
        }
        const at = this.next;
        this.firing = true;
        try {
          for (const m of members) m.tick(at);
        } finally {
          this.firing = false;
        }
      }
      this.next += this.subMs;
      this.slot = (this.slot + 1) % this.slots;
    }
    if (this.next < now) this.next = now + this.subMs; // fell far behind: resync rather than burst
    if (this.members.size) this.schedule();
    else this.timer = null;
  };
}

/** The process's clock: 4 slots of 5 ms (the media server sets MEDIA_CLOCK_SLOTS at start; 1 = every member in one
 * tick). */
export const sharedClock = new FrameClock(20, undefined, 4);
