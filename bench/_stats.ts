import { constants, PerformanceObserver } from 'node:perf_hooks';

// Percentiles for every benchmark: nearest-rank (the smallest sample with at least p % of samples at or below it).
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** A figure with one (f1) or two (f2) decimals; 'n/a' where there was nothing to measure (NaN, ∞). */
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
export const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/**
 * An event-loop stall: when it began (epoch ms), how long the loop was held (ms), and how much of that time the
 * main thread was on a CPU (ms, process.threadCpuUsage): near `ms` when the loop was busy with work, far below it when
 * the thread waited for a core (preempted by other threads or processes) or in a blocking call.
 */
export type Stall = [at: number, ms: number, cpuMs: number];

/**
 * This process's event-loop stalls of at least `minMs`: a 5 ms timer that fired that much late, stamped on the epoch
 * clock so stalls of different processes line up with each other and with the callers' turns. `take()` hands over
 * the stalls so far and starts a new list.
 */
export function stallWatch(minMs = 40): { take(): Stall[] } {
  const stalls: Stall[] = [];
  const threadMs = () => {
    const u = process.threadCpuUsage();
    return (u.user + u.system) / 1000;
  };
  let last = performance.now();
  let lastCpu = threadMs();
  const t = setInterval(() => {
    const now = performance.now();
    const cpu = threadMs();
    if (now - last - 5 >= minMs) stalls.push([performance.timeOrigin + last + 5, now - last - 5, Math.max(0, cpu - lastCpu)]);
    last = now;
    lastCpu = cpu;
  }, 5);
  t.unref();
  return { take: () => stalls.splice(0) };
}

/** How much of the stalled time the main thread spent on a CPU: busy (near 100 %) or waiting for a core (far below). */
function onCpu(ss: readonly Stall[]): string {
  const wall = ss.reduce((a, [, ms]) => a + ms, 0);
  // the 5 ms interval's own slice is in the thread's CPU time but not in the stall
  const cpu = ss.reduce((a, [, ms, c]) => a + Math.min(c, ms), 0);
  return wall > 0 ? `, main thread on a CPU ${Math.round((cpu / wall) * 100)} % of that time` : '';
}

/** Of the turns slower than `slowMs` ([end of speech, reply], epoch ms), how many overlap a stall of each process. */
export function slowTurnsByStall(turns: Array<[number, number]>, slowMs: number, stalls: Record<string, readonly Stall[]>): string {
  const slow = turns.filter(([end, reply]) => reply - end >= slowMs);
  if (slow.length === 0) return 'none';
  const overlaps = ([end, reply]: [number, number], ss: readonly Stall[]) => ss.some(([at, ms]) => at < reply && at + ms > end);
  const hit = (ss: readonly Stall[]) => slow.filter((t) => overlaps(t, ss)).length;
  const none = slow.filter((t) => !Object.values(stalls).some((ss) => overlaps(t, ss))).length;
  const counts = Object.entries(stalls).map(([who, ss]) => `${who} ${hit(ss)} (${ss.length} stalls, longest ${Math.round(Math.max(0, ...ss.map(([, ms]) => ms)))} ms${onCpu(ss)})`);
  return `${slow.length} turns, overlapping an event-loop stall of: ${counts.join(', ')}; none of these: ${none}`;
}

/** This process's garbage collections from now on, summed by kind: `stop()` ends the watch and gives the line. */
export function gcWatch(): { stop(): string } {
  const names: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
  };
  const by = new Map<string, { n: number; ms: number; max: number }>();
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = names[(e as unknown as { detail: { kind: number } }).detail.kind] ?? 'other';
      const s = by.get(kind) ?? { n: 0, ms: 0, max: 0 };
      s.n++;
      s.ms += e.duration;
      s.max = Math.max(s.max, e.duration);
      by.set(kind, s);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      obs.disconnect();
      return [...by].map(([k, s]) => `${s.n} ${k} (${f1(s.ms)} ms, longest ${f1(s.max)})`).join(', ') || 'none';
    },
  };
}
