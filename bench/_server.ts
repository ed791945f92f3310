// The service (api + media on one port) on a benchmark's scratch database, without Temporal.
import path from 'node:path';
import { loadConfig } from '../core/config.ts';
import type { Db } from '../core/db/pool.ts';
import { createLogger } from '../core/logger.ts';
import { freePort, type ScratchDatabase } from '../scripts/infra.ts';
import { startCombined } from '../scripts/server.ts';

export async function startBenchServer(scratch: ScratchDatabase, db: Db) {
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: scratch.url,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: path.join(scratch.dir, 'data'),
    SIGNING_SECRET: 'bench-signing-secret-0123456789',
    LOG_LEVEL: 'silent',
  });
  const server = await startCombined({ config, db, logger: createLogger({ level: 'silent' }), temporal: null }, port, '127.0.0.1');
  return { server, config, port, origin: `http://127.0.0.1:${port}`, base: `http://127.0.0.1:${port}/api/v1` };
}

/**
 * SERVER_CHRT="<chrt options>" (an experiment): after the product's own priority step, the bench process's
 * main thread (the media pacing thread; its id is the process id) gets `chrt <options> <pid>`, e.g. "-R -r -p 10" for
 * SCHED_RR priority 10 with threads started afterwards back at normal scheduling. The line it returns says what the
 * kernel applied. Unset: nothing changes.
 */
export async function applyServerChrt(): Promise<string | null> {
  const opts = process.env.SERVER_CHRT;
  if (!opts) return null;
  const { spawnSync } = await import('node:child_process');
  const set = spawnSync('chrt', [...opts.split(/\s+/).filter(Boolean), String(process.pid)], { encoding: 'utf8' });
  if (set.status !== 0) return `SERVER_CHRT "${opts}" refused: ${(set.stderr || set.error?.message || '').trim()}`;
  const now = spawnSync('chrt', ['-p', String(process.pid)], { encoding: 'utf8' });
  return `SERVER_CHRT "${opts}": ${now.stdout.trim().replace(/\n/g, '; ')}`;
}

/**
 * SERVER_SLICE_US=<µs> (an experiment): after the product's own priority step, the bench process's main
 * thread (the media pacing thread) asks the kernel's EEVDF scheduler for a shorter time slice (Linux ≥ 6.12:
 * sched_setattr's sched_runtime on a SCHED_OTHER thread; 100–100,000 µs). A thread with a
 * shorter slice than the one running preempts it when it wakes (the scheduler's PREEMPT_SHORT) instead of waiting
 * for that slice to end; its share of the CPU stays what its nice level gives. There is no Node API for it, so
 * python3's ctypes makes the call (the system python3 the Piper phonemizer already uses). The nice level is passed
 * unchanged. The line it returns says what the kernel applied. Unset: nothing changes.
 */
export async function applyServerSlice(): Promise<string | null> {
  const us = Number(process.env.SERVER_SLICE_US);
  if (!process.env.SERVER_SLICE_US || !(us > 0)) return null;
  // sched_setattr / sched_getattr by number (python has no wrapper): they differ by architecture
  const nr = ({ x64: [314, 315], arm64: [274, 275] } as Record<string, [number, number]>)[process.arch];
  if (!nr) return `SERVER_SLICE_US=${us} refused: no sched_setattr number known for ${process.arch}`;
  const os = await import('node:os');
  const { spawnSync } = await import('node:child_process');
  const py = [
    'import ctypes, struct, sys',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'tid, nice, ns, nr_set, nr_get = (int(a) for a in sys.argv[1:6])',
    "attr = ctypes.create_string_buffer(struct.pack('IIQiIQQQ', 48, 0, 0, nice, 0, ns, 0, 0), 48)",
    'if libc.syscall(nr_set, tid, attr, 0) != 0: sys.exit("sched_setattr: errno %d" % ctypes.get_errno())',
    'out = ctypes.create_string_buffer(56)',
    'libc.syscall(nr_get, tid, out, 56, 0)',
    "f = struct.unpack('IIQiIQQQ', out.raw[:48])",
    'print("policy %d, nice %d, slice %d us" % (f[1], f[3], f[5] // 1000))',
  ].join('\n');
  const r = spawnSync('python3', ['-c', py, String(process.pid), String(os.getPriority(0)), String(Math.round(us * 1000)), String(nr[0]), String(nr[1])], { encoding: 'utf8' });
  if (r.status !== 0) return `SERVER_SLICE_US=${us} refused: ${(r.stderr || r.error?.message || '').trim()}`;
  return `SERVER_SLICE_US=${us}: the pacing thread now ${r.stdout.trim()}`;
}

/**
 * MEDIA_PACING_CPU=<cpu> (the product's setting, core/affinity.ts): the server's pacing thread alone on that CPU and
 * its other threads on the others. The bench's own processes (callers, vendor fakes) are forked from that thread and
 * forkRole puts them on the other CPUs too, as it does the processes already running under this one (the scratch
 * PostgreSQL): the operator's cpuset that keeps a node's other processes off the core.
 * The line it returns says what was applied; unset: nothing changes.
 */
export async function applyBenchPacingCpu(config: { MEDIA_PACING_CPU?: number | undefined }): Promise<string | null> {
  const { applyPacingCpu, placeChildProcess } = await import('../core/affinity.ts');
  const said: string[] = [];
  const r = await applyPacingCpu(config, { info: () => {}, warn: (o: { reason?: string; err?: string }, m) => said.push(`${m} (${o.reason ?? o.err})`) });
  if (!r) return null;
  // the processes already running under this one (the scratch PostgreSQL) were started before the pin: off the core
  // too, with the backends they fork later
  let moved = 0;
  if (r.applied) {
    const { readdirSync, readFileSync } = await import('node:fs');
    const children = (pid: number): number[] => {
      try {
        return readdirSync(`/proc/${pid}/task`).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
      } catch {
        return [];
      }
    };
    const todo = children(process.pid);
    for (let pid = todo.pop(); pid !== undefined; pid = todo.pop()) {
      placeChildProcess(pid);
      moved++;
      todo.push(...children(pid));
    }
  }
  return r.applied
    ? `MEDIA_PACING_CPU=${r.plan.pacing}: the pacing thread alone on CPU ${r.plan.pacing}; the server's other threads, the callers, the vendor fakes and the ${moved} processes already running (PostgreSQL) on CPU ${r.plan.others.join(',')}`
    : said.join('; ');
}

/** After the product's own priority step: its pacing CPU (MEDIA_PACING_CPU), then the two scheduling experiments
 * above, in order; the lines to log. */
export async function applySchedulingExperiments(config: { MEDIA_PACING_CPU?: number | undefined }): Promise<string[]> {
  return [await applyBenchPacingCpu(config), await applyServerChrt(), await applyServerSlice()].filter((l): l is string => l !== null);
}

/**
 * A bench whose own process hosts the media side runs with the media process's Node flags (scripts/infra.ts
 * MEDIA_NODE_FLAGS), as production does: without them it re-executes itself with them and exits with the child's
 * status. A run that sizes the heap itself (on the command line or in NODE_OPTIONS) is left alone: an A/B of the flags.
 */
export async function withMediaFlags(script: string): Promise<void> {
  const { MEDIA_NODE_FLAGS } = await import('../scripts/infra.ts');
  const heapFlag = (a: string) => a.includes('max-semi-space-size') || a.includes('initial-old-space-size');
  if (process.execArgv.some(heapFlag) || heapFlag(process.env.NODE_OPTIONS ?? '')) return;
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [...MEDIA_NODE_FLAGS, ...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit', env: process.env });
  process.exit(r.status ?? 1);
}
