// Percentiles for every benchmark: nearest-rank (the smallest sample with at least p % of samples at or below it).
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** A figure with one (f1) or two (f2) decimals; 'n/a' where there was nothing to measure (NaN, ∞). */
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
export const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** An event-loop stall: when it began (epoch ms) and how long the loop was held (ms). */
export type Stall = [at: number, ms: number];

/**
 * This process's event-loop stalls of at least `minMs`: a 5 ms timer that fired that much late, stamped on the epoch
 * clock so stalls of different processes line up with each other and with the callers' turns. `take()` hands over
 * the stalls so far and starts a new list.
 */
export function stallWatch(minMs = 40): { take(): Stall[] } {
  const stalls: Stall[] = [];
  let last = performance.now();
  const t = setInterval(() => {
    const now = performance.now();
    if (now - last - 5 >= minMs) stalls.push([performance.timeOrigin + last + 5, now - last - 5]);
    last = now;
  }, 5);
  t.unref();
  return { take: () => stalls.splice(0) };
}

/** Of the turns slower than `slowMs` ([end of speech, reply], epoch ms), how many overlap a stall of each process. */
export function slowTurnsByStall(turns: Array<[number, number]>, slowMs: number, stalls: Record<string, readonly Stall[]>): string {
  const slow = turns.filter(([end, reply]) => reply - end >= slowMs);
  if (slow.length === 0) return 'none';
  const overlaps = ([end, reply]: [number, number], ss: readonly Stall[]) => ss.some(([at, ms]) => at < reply && at + ms > end);
  const hit = (ss: readonly Stall[]) => slow.filter((t) => overlaps(t, ss)).length;
  const none = slow.filter((t) => !Object.values(stalls).some((ss) => overlaps(t, ss))).length;
  const counts = Object.entries(stalls).map(([who, ss]) => `${who} ${hit(ss)} (${ss.length} stalls, longest ${Math.round(Math.max(0, ...ss.map(([, ms]) => ms)))} ms)`);
  return `${slow.length} turns, overlapping an event-loop stall of: ${counts.join(', ')}; none of these: ${none}`;
}
