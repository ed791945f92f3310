// bench/vad: the Silero VAD alone for N simultaneous streams fed in real time (20 ms frames on one clock), each
// a caller who talks about 40 % of the time (an eSpeak NG sentence, then ~2 s of line hiss at about −66 dBFS).
// Three ways, same audio, same run:
//   frame-by-frame   one inference per 32 ms window per stream, as it comes,
//   batched          windows of all streams ready within the same few ms run as one inference,
//   batched + gate   and plainly silent windows skip inference (media/vad's default).
// Figures: CPU of this process per 32 ms window and what that makes per real-time stream (% of one core; robust
// to a busy machine, where a mode that cannot keep up would otherwise look cheap), inferences per second, how many
// speech starts were detected (all three must agree closely) and the backlog left when feeding stopped.
// STREAMS (default 50,200), SECONDS (default 8).
//
//   npm run bench -- vad             STREAMS=50,200 SECONDS=8 node --import tsx bench/vad.ts
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createVad, vadStats, warmVad, type VadOptions } from '../media/vad/index.ts';
import { createLocalTts } from '../media/services/tts/local.ts';
import { resample } from '../core/audio/resample.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const STREAMS = (process.env.STREAMS ?? '50,200').split(',').map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.SECONDS ?? 8);

const tts = createLocalTts({ languages: ['en'], voice: 'en-us+klatt', wordsPerMinute: 150 });
const parts: Int16Array[] = [];
for await (const p of tts.synthesize('Hello, I would like to book an appointment for tomorrow.', new AbortController().signal)) parts.push(p);
const s24 = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
parts.reduce((o, p) => (s24.set(p, o), o + p.length), 0);
const speech = resample(s24, 24000, 16000);
// one cycle: the sentence, then 2 s of faint hiss (deterministic LCG noise, amplitude ±16 ≈ −66 dBFS RMS)
const cycle = new Int16Array(speech.length + 32000);
cycle.set(speech);
let seed = 12345;
for (let i = speech.length; i < cycle.length; i++) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  cycle[i] = (seed % 33) - 16;
}

async function measure(n: number, opts: VadOptions): Promise<{ cpuPct: number; usPerWindow: number; perSec: number; starts: number; lagP99: number; drainS: number }> {
  const vads = await Promise.all(Array.from({ length: n }, () => createVad(opts)));
  const offsets = vads.map((_, i) => Math.floor((i / n) * cycle.length / 320) * 320);
  let starts = 0;
  const lags: number[] = [];
  const before = { ...vadStats };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const frames = Math.round((SECONDS * 1000) / 20);
  for (let k = 0; k < frames; k++) {
    const due = t0 + k * 20;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    lags.push(Math.max(0, performance.now() - due));
    vads.forEach((v, i) => {
      const o = (offsets[i]! + k * 320) % cycle.length;
      void v.process(cycle.subarray(o, o + 320)).then((r) => {
        if (r.speechStart) starts++;
      });
    });
  }
  const fed = performance.now();
  await Promise.all(vads.map((v) => v.process(new Int16Array(0))));
  const drainS = (performance.now() - fed) / 1000; // backlog left when the feeding ended (0 when it kept up)
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  for (const v of vads) v.close();
  lags.sort((a, b) => a - b);
  const windows = vadStats.windows - before.windows;
  const usPerWindow = (cpu.user + cpu.system) / windows;
  return {
    // the cost per stream if every window of a real-time stream is processed: µs per window × 31.25 windows/s
    cpuPct: ((usPerWindow * 31.25) / 1e6) * 100,
    usPerWindow,
    drainS,
    perSec: (vadStats.inferred - before.inferred) / wall,
    starts,
    lagP99: lags[Math.min(lags.length - 1, Math.ceil(lags.length * 0.99) - 1)]!,
  };
}

await warmVad();
log(`cores ${os.cpus().length} · ${SECONDS} s per run · load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
log('| streams | mode | CPU µs per 32 ms window | CPU % of a core per stream | inferences / s | speech starts | backlog at the end s | feed-clock lag p99 ms |');
log('|---|---|---|---|---|---|---|---|');
for (const n of STREAMS) {
  const results: Record<string, number> = {};
  for (const [name, opts] of [
    ['frame-by-frame', { batch: false, silenceRms: 0 }],
    ['batched', { batch: true, silenceRms: 0 }],
    ['batched + gate', { batch: true }],
  ] as const) {
    const r = await measure(n, opts);
    results[name] = r.cpuPct;
    log(`| ${n} | ${name} | ${r.usPerWindow.toFixed(1)} | ${r.cpuPct.toFixed(3)} | ${Math.round(r.perSec)} | ${r.starts} | ${r.drainS.toFixed(1)} | ${r.lagP99.toFixed(1)} |`);
  }
  log(`ratio at ${n} streams: frame-by-frame / (batched + gate) = ${(results['frame-by-frame']! / results['batched + gate']!).toFixed(1)}× less CPU per stream`);
}
process.exit(0);
