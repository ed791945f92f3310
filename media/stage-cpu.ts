// Where the media process's CPU goes, per stage of a call: opt-in accounting of the main thread's time inside the
// stages of the audio path (Opus, RTP send/receive, carrier µ-law + JSON, WebSocket framing, the pipeline's caller-
// and agent-audio paths), the main thread's whole CPU time, and every other thread by name from /proc/self/task
// (node-datachannel's `RTC worker` / `RTC poll` / `juice poll` / `SCTP *`: ICE, DTLS, SRTP, UDP; `vad-silero`: the
// Silero VAD worker; `V8Worker`: the garbage collector). Off unless `MEDIA_STAGE_CPU=1` or `enableStageCpu()`.
// A stage is timed with performance.now(): the stages are synchronous, so that is their CPU time while the main
// thread is not preempted (compare their sum with `mainUs`). Not threadCpuUsage() per stage: Linux only updates a
// running thread's runtime at ticks and wake-ups, so a stage that wakes another thread would be charged everything
// since the last update. Time is exclusive: a nested stage is counted once, in the inner one. Figures are in
// /metrics (`voice_media_stage_seconds_total{stage}`) and from `stageCpuSnapshot()`.
import { openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { prom, registry } from '../core/metrics.ts';

let enabled = process.env.MEDIA_STAGE_CPU === '1';
const totals = new Map<string, { us: number; n: number }>();
/** µs of the stages nested in the one being timed (subtracted from it) */
let nestedUs = 0;

/**
 * A benchmark's probe on caller audio as it reaches the main thread (bench/webrtc's ingress figure): called with the
 * receiving transport and the packet's RTP timestamp. Unset in production: one null check per packet.
 */
let rtpArrivalProbe: ((stream: object, rtpTimestamp: number) => void) | null = null;

export function setRtpArrivalProbe(probe: ((stream: object, rtpTimestamp: number) => void) | null): void {
  rtpArrivalProbe = probe;
}

/** A caller RTP packet of `stream` reached the main thread (media/webrtc/transport.ts). */
export function rtpArrived(stream: object, rtpTimestamp: number): void {
  if (rtpArrivalProbe) rtpArrivalProbe(stream, rtpTimestamp);
}

export function enableStageCpu(): void {
  enabled = true;
}

export function stageCpuEnabled(): boolean {
  return enabled;
}

/**
 * Run `fn` (with `arg`, when given), adding the time it took (minus nested stages) to `stage` when accounting is on.
 * The per-frame paths pass a function made once and the frame as `arg`: no closure per frame when accounting is off.
 */
export function timed<T>(stage: string, fn: () => T): T;
export function timed<A, T>(stage: string, fn: (arg: A) => T, arg: A): T;
export function timed<A, T>(stage: string, fn: (arg?: A) => T, arg?: A): T {
  if (!enabled) return fn(arg);
  const outer = nestedUs;
  nestedUs = 0;
  const t0 = performance.now();
  try {
    return fn(arg);
  } finally {
    const us = (performance.now() - t0) * 1000;
    const t = totals.get(stage) ?? { us: 0, n: 0 };
    t.us += Math.max(0, us - nestedUs);
    t.n++;
    totals.set(stage, t);
    nestedUs = outer + us;
  }
}

export interface StageCpuSnapshot {
  /** exclusive main-thread µs and number of timed runs, per stage */
  stages: Record<string, { us: number; n: number }>;
  /** the main thread's whole CPU µs (what the stages leave is the rest of the event loop) */
  mainUs: number;
  /** CPU µs of every other thread of the process, summed by thread name */
  threads: Record<string, number>;
}

const TICK_US = 1e6 / 100; // /proc stat times are in clock ticks (USER_HZ = 100 on Linux)

/** The calling thread's own figures so far: its timed stages and its CPU µs (a worker thread that times stages, the
 * WebRTC media plane, reports these; subtract two with `threadStageCpuDelta`). */
export interface ThreadStageCpu {
  stages: StageCpuSnapshot['stages'];
  cpuUs: number;
}

export function threadStageCpu(): ThreadStageCpu {
  const stages: StageCpuSnapshot['stages'] = {};
  for (const [k, v] of totals) stages[k] = { ...v };
  const cpu = process.threadCpuUsage();
  return { stages, cpuUs: cpu.user + cpu.system };
}

export function threadStageCpuDelta(a: ThreadStageCpu | null, b: ThreadStageCpu): ThreadStageCpu {
  const stages: StageCpuSnapshot['stages'] = {};
  for (const [k, v] of Object.entries(b.stages)) stages[k] = { us: v.us - (a?.stages[k]?.us ?? 0), n: v.n - (a?.stages[k]?.n ?? 0) };
  return { stages, cpuUs: b.cpuUs - (a?.cpuUs ?? 0) };
}

/** Cumulative figures so far; subtract two snapshots (`stageCpuDelta`) for a window. */
export function stageCpuSnapshot(): StageCpuSnapshot {
  const { stages, cpuUs } = threadStageCpu();
  const threads: Record<string, number> = {};
  let tasks: string[] = [];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch { /* not Linux */ }
  for (const tid of tasks) {
    if (Number(tid) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      threads[name] = (threads[name] ?? 0) + (Number(f[11]) + Number(f[12])) * TICK_US;
    } catch { /* the thread ended */ }
  }
  return { stages, mainUs: cpuUs, threads };
}

export function stageCpuDelta(a: StageCpuSnapshot, b: StageCpuSnapshot): StageCpuSnapshot {
  const { stages } = threadStageCpuDelta({ stages: a.stages, cpuUs: a.mainUs }, { stages: b.stages, cpuUs: b.mainUs });
  const threads: Record<string, number> = {};
  // a thread that ended in between is gone from b: its CPU in the window is unknown, the rest is exact
  for (const [k, v] of Object.entries(b.threads)) threads[k] = Math.max(0, v - (a.threads[k] ?? 0));
  return { stages, mainUs: b.mainUs - a.mainUs, threads };
}

const reported = new Map<string, number>();
new prom.Counter({
  name: 'voice_media_stage_seconds_total',
  help: 'Main-thread seconds per stage of the audio path (exclusive; only with MEDIA_STAGE_CPU=1)',
  labelNames: ['stage'] as const,
  registers: [registry],
  collect() {
    for (const [stage, t] of totals) {
      const d = t.us - (reported.get(stage) ?? 0);
      if (d > 0) this.inc({ stage }, d / 1e6);
      reported.set(stage, t.us);
    }
  },
});

/**
 * An event-loop stall: when it began (epoch ms), how long the loop was held (ms), how much of that time the thread
 * was on a CPU (ms) and how much it waited on a run queue for one (ms, the kernel's schedstat; NaN where the kernel
 * does not keep it). On a CPU near `ms`: the loop was busy with work. Waiting near the rest: preempted by other
 * threads or processes. Neither: blocked in the kernel (a lock, a page fault, I/O).
 */
export type Stall = [at: number, ms: number, cpuMs: number, waitMs: number];

/** This thread's time on a CPU and waiting on a run queue (ms) from /proc/thread-self/schedstat, or null. */
function schedReader(): (() => [cpuMs: number, waitMs: number]) | null {
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return null;
  }
  const buf = Buffer.alloc(128);
  return () => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const [run, wait] = buf.toString('latin1', 0, n).split(' ');
    return [Number(run) / 1e6, Number(wait) / 1e6];
  };
}

/**
 * This thread's event-loop stalls of at least `minMs`: a 5 ms timer that fired that much late, stamped on the epoch
 * clock so stalls of different processes line up with each other and with the callers' turns. `take()` hands over
 * the stalls so far and starts a new list. Must be created on the thread it watches.
 */
export function stallWatch(minMs = 40): { take(): Stall[] } {
  const stalls: Stall[] = [];
  const times = schedReader() ?? ((): [number, number] => {
    const u = process.threadCpuUsage();
    return [(u.user + u.system) / 1000, NaN];
  });
  let last = performance.now();
  let [lastCpu, lastWait] = times();
  const t = setInterval(() => {
    const now = performance.now();
    const [cpu, wait] = times();
    if (now - last - 5 >= minMs) stalls.push([performance.timeOrigin + last + 5, now - last - 5, Math.max(0, cpu - lastCpu), Math.max(0, wait - lastWait)]);
    last = now;
    lastCpu = cpu;
    lastWait = wait;
  }, 5);
  t.unref();
  return { take: () => stalls.splice(0) };
}
