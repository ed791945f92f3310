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

// stall watches live with the media process's other instrumentation (the WebRTC media-plane thread runs one too)
export { stallWatch, type Stall } from '../media/stage-cpu.ts';
import type { Stall } from '../media/stage-cpu.ts';

/** How the stalled threads spent the stalled time: on a CPU (busy), waiting on a run queue for one (preempted), or
 * neither (blocked in the kernel: a lock, a page fault, I/O). */
function onCpu(ss: readonly Stall[]): string {
  const wall = ss.reduce((a, [, ms]) => a + ms, 0);
  if (wall <= 0) return '';
  // the 5 ms interval's own slice is in the thread's times but not in the stall
  let cpu = 0;
  let wait = 0;
  for (const [, ms, c, w] of ss) {
    const on = Math.min(c, ms);
    cpu += on;
    wait += Math.min(w, ms - on);
  }
  const share = (x: number) => Math.round((x / wall) * 100);
  return Number.isNaN(wait)
    ? `, the thread on a CPU ${share(cpu)} % of that time`
    : `, the thread on a CPU ${share(cpu)} % of that time, waiting for one ${share(wait)} %, blocked ${Math.max(0, 100 - share(cpu) - share(wait))} %`;
}

/** Of the turns slower than `slowMs` ([end of speech, reply], epoch ms), how many overlap a stall of each process
 * (`what` names the spans when they are not turns). */
export function slowTurnsByStall(turns: Array<[number, number]>, slowMs: number, stalls: Record<string, readonly Stall[]>, what = 'turns'): string {
  const slow = turns.filter(([end, reply]) => reply - end >= slowMs);
  if (slow.length === 0) return 'none';
  const overlaps = ([end, reply]: [number, number], ss: readonly Stall[]) => ss.some(([at, ms]) => at < reply && at + ms > end);
  const hit = (ss: readonly Stall[]) => slow.filter((t) => overlaps(t, ss)).length;
  const none = slow.filter((t) => !Object.values(stalls).some((ss) => overlaps(t, ss))).length;
  const counts = Object.entries(stalls).map(([who, ss]) => `${who} ${hit(ss)} (${ss.length} stalls, longest ${Math.round(Math.max(0, ...ss.map(([, ms]) => ms)))} ms${onCpu(ss)})`);
  return `${slow.length} ${what}, overlapping an event-loop stall of: ${counts.join(', ')}; none of these: ${none}`;
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
