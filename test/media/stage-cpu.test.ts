// media/stage-cpu.ts: the opt-in per-stage accounting behind bench/webrtc's "where the CPU goes".
import test from 'ava';
import { performance } from 'node:perf_hooks';
import { enableStageCpu, stageCpuDelta, stageCpuEnabled, stageCpuSnapshot, stallWatch, timed } from '../../media/stage-cpu.ts';
import { registry } from '../../core/metrics.ts';

function spin(iterations: number): number {
  let x = 0;
  for (let i = 0; i < iterations; i++) x += Math.sqrt(i);
  return x;
}

test.serial('off by default: timed() only runs the function', (t) => {
  t.false(stageCpuEnabled());
  t.is(timed('test: off', () => 42), 42);
  t.false('test: off' in stageCpuSnapshot().stages);
});

test.serial('on: runs and time per stage, nested stages counted once (in the inner one), errors still counted', (t) => {
  enableStageCpu();
  const a = stageCpuSnapshot();
  const t0 = performance.now();
  for (let k = 0; k < 5; k++) {
    timed('test: outer', () => {
      spin(20_000);
      timed('test: inner', () => spin(20_000));
    });
  }
  const wallUs = (performance.now() - t0) * 1000;
  t.throws(() => timed('test: throws', () => {
    throw new Error('boom');
  }), { message: 'boom' });
  const d = stageCpuDelta(a, stageCpuSnapshot());
  t.is(d.stages['test: outer']!.n, 5);
  t.is(d.stages['test: inner']!.n, 5);
  t.is(d.stages['test: throws']!.n, 1);
  t.true(d.stages['test: inner']!.us > 0);
  t.true(d.stages['test: outer']!.us >= 0);
  // exclusive: the inner time is not counted again in the outer one
  t.true(d.stages['test: outer']!.us + d.stages['test: inner']!.us <= wallUs + 1, `${JSON.stringify(d.stages)} wall ${wallUs}`);
  t.true(d.mainUs >= 0);
});

test.serial('threads of the process by name from /proc, and the stages in /metrics', async (t) => {
  const s = stageCpuSnapshot();
  if (process.platform === 'linux') t.true(Object.keys(s.threads).length > 0, 'other threads listed (libuv, V8)');
  t.false(Object.keys(s.threads).includes(String(process.pid)));
  const metrics = await registry.metrics();
  t.regex(metrics, /voice_media_stage_seconds_total\{stage="test: inner"\} [0-9.e-]+/);
});

test.serial('stallWatch: a loop held by synchronous work is one stall, stamped on the epoch clock with its CPU time; an idle loop none', async (t) => {
  const watch = stallWatch(40);
  await new Promise((r) => setTimeout(r, 30));
  t.deepEqual(watch.take(), [], 'an idle loop has no stall');
  const before = performance.timeOrigin + performance.now();
  const until = performance.now() + 120;
  while (performance.now() < until) spin(1000); // the watch's 5 ms timer cannot fire meanwhile
  await new Promise((r) => setTimeout(r, 20));
  const stalls = watch.take();
  t.is(stalls.length, 1);
  const [at, ms, cpuMs, waitMs] = stalls[0]!;
  t.true(at >= before - 10 && at <= before + 10, 'the stall starts when the work began (epoch ms)');
  t.true(ms >= 100, `held for the work's time (${ms} ms)`);
  t.true(cpuMs > 0 && cpuMs <= ms + 10, 'the thread was on a CPU for (at most) that time');
  // the kernel's run-queue wait where it keeps one (Linux schedstat), NaN elsewhere
  t.true(Number.isNaN(waitMs) || (waitMs >= 0 && waitMs <= ms + 10), `waited for a CPU for part of it at most (${waitMs} ms)`);
  t.deepEqual(watch.take(), [], 'take() hands the stalls over once');
});
