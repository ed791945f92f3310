// Scheduling priority of the thread that paces live audio. A media process's main thread sends every call's next
// frame on the shared 20 ms clock (media/pipeline/clock.ts); when a CPU-bound neighbour shares the cores, the kernel
// shares them fairly and preempts the main thread mid-tick, so ticks run late and frames bunch up; a few nice levels
// above the neighbour keeps the jitter down (docs/benchmarks.md). So the media process raises its main thread by
// MEDIA_PRIORITY_BOOST nice levels (DEFAULT_BOOST when unset; at most to −20; Linux keeps nice per thread, so only the
// calling thread changes). That needs CAP_SYS_NICE (root in most containers); without it the process runs at normal
// priority and says so once (info when unset, a warning when set). Threads and processes started afterwards would
// inherit the raised priority: each inference thread and forked helper resets itself at its start
// (resetHelperPriority) and spawned helpers (HelperProcess) are reset right after the spawn (resetChildPriority).
import os from 'node:os';

const BASE_ENV = 'VAS_BASE_NICE';

export type PriorityOutcome = { applied: true; nice: number } | { applied: false; nice: number; reason: string };

/** Raise the calling (main) thread `boost` nice levels (lower nice = higher priority), at most to −20. */
export function raiseAudioThreadPriority(boost: number): PriorityOutcome {
  let base: number;
  try {
    base = os.getPriority(0);
  } catch (err) {
    return { applied: false, nice: 0, reason: (err as Error).message };
  }
  const nice = Math.max(-20, base - boost);
  if (nice >= base) return { applied: false, nice: base, reason: boost <= 0 ? 'MEDIA_PRIORITY_BOOST=0' : 'already at the highest priority (-20)' };
  try {
    os.setPriority(0, nice);
  } catch (err) {
    return { applied: false, nice: base, reason: `${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: needs CAP_SYS_NICE (or root)` };
  }
  // threads and child processes read this to go back to where the process started (a Worker's env is a copy of this)
  process.env[BASE_ENV] = String(base);
  return { applied: true, nice };
}

/** In a helper thread or process: back to the process's original priority if it inherited a raised one. */
export function resetHelperPriority(): void {
  const base = Number(process.env[BASE_ENV]);
  if (!Number.isInteger(base)) return;
  try {
    if (os.getPriority(0) < base) os.setPriority(0, base); // lowering one's own priority is always allowed
  } catch {
    /* keep what we have */
  }
}

/** A child process this (possibly raised) process just spawned: back to the process's original priority. */
export function resetChildPriority(pid: number | undefined): void {
  const base = Number(process.env[BASE_ENV]);
  if (pid === undefined || !Number.isInteger(base)) return;
  try {
    if (os.getPriority(pid) < base) os.setPriority(pid, base); // lowering a child's priority is always allowed
  } catch {
    /* it exited already, or keep what it has */
  }
}

/** Nice levels the pacing thread is raised by when MEDIA_PRIORITY_BOOST is unset (chosen from the neighbour bench). */
export const DEFAULT_BOOST = 10;

/** The media process's start: raise its pacing thread as configured and say what happened. */
export function applyMediaPriority(config: { MEDIA_PRIORITY_BOOST?: number | undefined }, logger: { info(o: object, m: string): void; warn(o: object, m: string): void }): PriorityOutcome {
  const boost = config.MEDIA_PRIORITY_BOOST ?? DEFAULT_BOOST;
  const r = raiseAudioThreadPriority(boost);
  if (r.applied) logger.info({ nice: r.nice }, 'audio pacing thread priority raised (MEDIA_PRIORITY_BOOST)');
  else if (boost > 0) {
    // asked for: a warning; the default where it is not permitted: a note
    const say = config.MEDIA_PRIORITY_BOOST === undefined ? logger.info.bind(logger) : logger.warn.bind(logger);
    say({ reason: r.reason, nice: r.nice }, 'audio pacing thread priority not raised: it runs at normal priority');
  }
  return r;
}
