// bench/recording: memory per call of the call recorder (media/pipeline/recorder.ts) for 20 s, 10 min and 60 min
// calls, time-compressed (a call's audio is fed as fast as the sink keeps up: 20 ms caller frames at 16 kHz, agent
// frames at 24 kHz a quarter of the time), two ways in the same run:
//   in memory   every block of the timeline kept until the end, then the WAV built in one buffer (the baseline)
//   spool file  3 resident 1-second blocks; older ones written to the call's spool file (the recorder)
// Each (way, length) runs in a fresh child process with CALLS recorders at once. Two figures, divided by CALLS:
//   retained   RSS rise over the child's baseline just before the calls end, after a full GC
//   JS held    heap used + array buffers over the baseline at the same moment (what a call's objects hold; RSS also
//              keeps the allocator's high-water mark of the garbage made so far, which does not scale with calls)
//   peak       the highest RSS rise seen (sampled every fed second and after the WAV is built), garbage included:
//              V8's young generation fills up to a fixed size whatever the call length, a process-wide constant that
//              shows up here divided by CALLS
// CALLS (default 8), LENGTHS seconds (default 20,600,3600).
//
//   npm run bench -- recording        CALLS=4 LENGTHS=20,600,3600 node --import tsx bench/recording.ts
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemorySink, Recorder } from '../media/pipeline/recorder.ts';
import { FileSink } from '../media/session/spool.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const CALLS = Number(process.env.CALLS ?? 8);
const LENGTHS = (process.env.LENGTHS ?? '20,600,3600').split(',').map(Number).filter((n) => n > 0);

async function child(way: 'memory' | 'spool', seconds: number): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-rec-'));
  global.gc?.();
  const base = process.memoryUsage().rss;
  const js = () => { const u = process.memoryUsage(); return u.heapUsed + u.arrayBuffers; };
  const baseJs = js();
  let peak = base;
  const sample = () => { peak = Math.max(peak, process.memoryUsage().rss); };
  const sinks = Array.from({ length: CALLS }, (_, i) => (way === 'memory' ? new MemorySink() : new FileSink(path.join(dir, `${i}.wav`))));
  const recs = sinks.map((s) => new Recorder(0, s));
  const caller = new Int16Array(320);
  const agent = new Int16Array(480);
  const t0 = performance.now();
  for (let ms = 0; ms < seconds * 1000; ms += 20) {
    caller.fill((ms / 20) % 100);
    agent.fill(1000 + ((ms / 20) % 7));
    for (const r of recs) {
      r.addCaller(caller, ms + 20);
      if (Math.floor(ms / 1000) % 4 === 1) r.addAgent(agent, ms);
    }
    if (ms % 1000 === 980) {
      await Promise.all(recs.map((r) => r.flushed()));
      sample();
    }
  }
  await Promise.all(recs.map((r) => r.flushed()));
  global.gc?.();
  const retained = process.memoryUsage().rss - base;
  const retainedJs = js() - baseJs;
  await Promise.all(recs.map((r) => r.finish()));
  sample();
  if (way === 'memory') {
    const wavs = (sinks as MemorySink[]).map((s) => s.wav()); // the in-memory way: each call's WAV built in one buffer
    sample();
    if (wavs.length !== CALLS) throw new Error('unreachable');
  }
  const feedS = (performance.now() - t0) / 1000;
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify({ perCallMb: (peak - base) / CALLS / 1048576, retainedMb: retained / CALLS / 1048576, jsMb: retainedJs / CALLS / 1048576, feedS }));
}

if (process.argv[2] === 'child') {
  await child(process.argv[3] as 'memory' | 'spool', Number(process.argv[4]));
} else {
  log(`RSS rise per call (MB) with ${CALLS} calls at once per child process; time-compressed feed.`);
  log(`Taken on a shared 2-core box under load from other jobs: compare the columns of this run, not absolute times.`);
  log(`${'call length'.padEnd(12)} ${'retained: in memory'.padStart(20)} ${'spool file'.padStart(11)}   ${'JS held: in memory'.padStart(19)} ${'spool file'.padStart(11)}   ${'peak: in memory'.padStart(16)} ${'spool file'.padStart(11)}   feed time (memory / spool)`);
  const self = fileURLToPath(import.meta.url);
  const spool: number[] = [];
  for (const seconds of LENGTHS) {
    const out: Record<string, { perCallMb: number; retainedMb: number; jsMb: number; feedS: number }> = {};
    for (const way of ['memory', 'spool'] as const) {
      const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', self, 'child', way, String(seconds)], { encoding: 'utf8', env: process.env, maxBuffer: 1 << 20 });
      if (r.status !== 0) throw new Error(`child ${way} ${seconds}s failed: ${r.stderr}`);
      out[way] = JSON.parse(r.stdout) as { perCallMb: number; retainedMb: number; jsMb: number; feedS: number };
    }
    const m = out.memory!;
    const f = out.spool!;
    spool.push(f.jsMb);
    const label = seconds >= 60 ? `${seconds / 60} min` : `${seconds} s`;
    log(`${label.padEnd(12)} ${m.retainedMb.toFixed(2).padStart(20)} ${f.retainedMb.toFixed(2).padStart(11)}   ${m.jsMb.toFixed(2).padStart(19)} ${f.jsMb.toFixed(2).padStart(11)}   ${m.perCallMb.toFixed(2).padStart(16)} ${f.perCallMb.toFixed(2).padStart(11)}   ${m.feedS.toFixed(1)} s / ${f.feedS.toFixed(1)} s`);
  }
  const spread = (Math.max(...spool) - Math.min(...spool)) / Math.max(...spool);
  log(`spool file: JS held per call from ${Math.min(...spool).toFixed(3)} to ${Math.max(...spool).toFixed(3)} MB across call lengths (spread ${(spread * 100).toFixed(0)} % of the largest; target flat within 10 %)`);
}
