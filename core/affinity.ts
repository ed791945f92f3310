// A core for the thread that paces live audio (MEDIA_PACING_CPU). On shared cores the media process's main thread
// (it sends every call's next frame on the shared 20 ms clock) spends much of each long stall waiting for a core,
// whatever its priority. With MEDIA_PACING_CPU=n that thread stays on CPU n and every other thread of the process
// (node-datachannel, V8, libuv, the VAD, noise-gate and decoder threads) and every helper process it starts run on
// the other allowed CPUs. Keeping the node's other processes off the pacing core is the operator's part (a cpuset:
// `docker run --cpuset-cpus`, compose's `cpuset`, systemd's `AllowedCPUs`); pinning only the media process is not
// enough. Effects: docs/benchmarks.md; setup: docs/operations.md.
// Linux keeps affinity per thread and new threads inherit their creator's, so threads started later begin on the
// pacing CPU: a sweep every second moves every thread but the main one off it. Node has no affinity API; util-linux's
// `taskset` sets it, run only when the set of threads changed. Where it is missing or refused, the process runs unpinned.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CpuPlan {
  pacing: number;
  /** the CPUs every other thread and helper process runs on */
  others: number[];
}

/** Where the threads go, or why not: `cpu` must be one of `allowed` (the process's CPUs), with at least one left. */
export function pacingCpuPlan(cpu: number, allowed: number[]): CpuPlan | { refused: string } {
  if (!allowed.includes(cpu)) return { refused: `CPU ${cpu} is not one this process may run on (${allowed.join(',') || 'none'})` };
  const others = allowed.filter((c) => c !== cpu);
  if (!others.length) return { refused: `CPU ${cpu} is the only one this process may run on: nothing would be left for the other threads` };
  return { pacing: cpu, others };
}

/** The CPUs this process may run on (its main thread's affinity, /proc/self/status `Cpus_allowed_list`); with a pid
 * or a thread id, that process's or thread's. */
export async function allowedCpus(pid: number | 'self' = 'self'): Promise<number[]> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(status)?.[1] ?? '';
  return parseCpuList(list);
}

/** "0-2,5" → [0, 1, 2, 5] (the kernel's and taskset's list format). */
export function parseCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [a, b] = part.split('-').map(Number);
    if (!Number.isInteger(a)) continue;
    for (let c = a!; c <= (Number.isInteger(b) ? b! : a!); c++) out.push(c);
  }
  return out;
}

/** Set a thread's (or, with `all`, every thread of a process's) CPUs through taskset. */
async function taskset(cpus: number[], id: number, all = false): Promise<void> {
  await run('taskset', [...(all ? ['-a'] : []), '-p', '-c', cpus.join(','), String(id)], { timeout: 5000 });
}

export type PacingCpuOutcome = { applied: true; plan: CpuPlan } | { applied: false; reason: string };

/**
 * The running placement: the main thread on the pacing CPU, the rest on the others, kept so by a sweep. `place()`
 * puts a helper process the media process just spawned (it inherited the pacing CPU) on the others.
 */
export class PacingCpu {
  private timer: NodeJS.Timeout | null = null;
  private known = '';
  private sweeping = false;
  /** placements made since start (the first included): threads of this process appeared or went that many times */
  placements = 0;

  constructor(
    readonly plan: CpuPlan,
    private readonly onError: (err: Error) => void = () => {},
  ) {}

  /** Place every thread now; then sweep every `everyMs` for threads started since. */
  async start(everyMs = 1000): Promise<void> {
    await this.sweep(true);
    this.timer = setInterval(() => void this.sweep(false), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Threads of this process changed since the last look (or `force`): every thread to the others, the main one back. */
  async sweep(force = false): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const tids = (await readdir('/proc/self/task')).sort().join(' ');
      if (!force && tids === this.known) return;
      // all threads to the others first, then the main thread (its thread id is the process id) back to its core: a
      // thread started in between inherits the others, never the pacing core
      await taskset(this.plan.others, process.pid, true);
      await taskset([this.plan.pacing], process.pid);
      this.known = tids;
      this.placements++;
    } catch (err) {
      this.onError(err as Error);
    } finally {
      this.sweeping = false;
    }
  }

  /** A child process just spawned from the pacing thread: all its threads to the other CPUs. */
  place(pid: number | undefined): void {
    if (pid === undefined) return;
    taskset(this.plan.others, pid, true).catch(() => {
      /* it exited already */
    });
  }
}

let current: PacingCpu | null = null;

/** The placement in force in this process, if any (helper processes ask it to place their children). */
export function pacingCpu(): PacingCpu | null {
  return current;
}

/** A child process this media process just spawned: off the pacing core (no-op without MEDIA_PACING_CPU). */
export function placeChildProcess(pid: number | undefined): void {
  current?.place(pid);
}

/** The media process's start: MEDIA_PACING_CPU applied, and said. Unset: nothing. */
export async function applyPacingCpu(
  config: { MEDIA_PACING_CPU?: number | undefined },
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void },
): Promise<PacingCpuOutcome | null> {
  if (config.MEDIA_PACING_CPU === undefined) return null;
  if (os.platform() !== 'linux') {
    const reason = 'CPU affinity is set only on Linux';
    logger.warn({ reason }, 'MEDIA_PACING_CPU not applied: the pacing thread shares the cores');
    return { applied: false, reason };
  }
  const plan = pacingCpuPlan(config.MEDIA_PACING_CPU, await allowedCpus());
  if ('refused' in plan) {
    logger.warn({ reason: plan.refused }, 'MEDIA_PACING_CPU not applied: the pacing thread shares the cores');
    return { applied: false, reason: plan.refused };
  }
  let warned = false;
  const placement = new PacingCpu(plan, (err) => {
    if (warned) return;
    warned = true;
    logger.warn({ err: err.message }, 'MEDIA_PACING_CPU: placing the media threads failed (taskset from util-linux is needed)');
  });
  await placement.start();
  if (warned) {
    placement.stop();
    return { applied: false, reason: 'taskset failed' };
  }
  current?.stop();
  current = placement;
  logger.info({ pacingCpu: plan.pacing, otherCpus: plan.others }, 'audio pacing thread on a CPU of its own (MEDIA_PACING_CPU); keep other processes off it');
  return { applied: true, plan };
}
