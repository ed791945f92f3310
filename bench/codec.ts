// bench/codec: what the audio work of one WebRTC call costs, and where it runs (issue 24). In one run, one process:
//   1. Per 20 ms frame, on this thread: Opus encode (complexity 5, 32 kb/s, the server's settings) and decode with
//      @evan/opus's native addon and with its WASM build, the 24→48 kHz and 48→16 kHz resamplers. Ratios WASM/native.
//   2. Whether each Opus build is safe with encoders in several threads at once (same input → same packet).
//   3. CALLS simulated calls for SECONDS: every 20 ms tick each call submits 20 ms of agent audio to encode and one
//      caller packet to decode, once inline (CallCodec on this thread) and once through the codec pool
//      (media/webrtc/codec-pool.ts, worker processes): CPU of THIS thread (the event loop) per call, tick lateness,
//      messages per worker per tick, and CPU of this process plus the workers' (from /proc).
//
//   node --import tsx bench/codec.ts         CALLS=150 SECONDS=10 FRAMES=2000
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Resampler } from '../media/audio/resample.ts';
import { CallCodec } from '../media/webrtc/call-codec.ts';
import { CodecPool } from '../media/webrtc/codec-pool.ts';
import { f1, f2, pct } from './_stats.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const FRAMES = Number(process.env.FRAMES ?? 2000);
const CALLS = Number(process.env.CALLS ?? 150);
const SECONDS = Number(process.env.SECONDS ?? 10);
const require = createRequire(import.meta.url);

interface Enc { encode(b: ArrayBufferView): Uint8Array; bitrate: number; signal: string; inband_fec: boolean; packet_loss: number; complexity: number }
interface Dec { decode(b: ArrayBufferView): Uint8Array }
interface Mod { Encoder: new (o: object) => Enc; Decoder: new (o: object) => Dec }

/** Speech-like 48 kHz audio: a gliding voiced tone with harmonics and some noise. */
function speech48(frames: number): Int16Array[] {
  const out: Int16Array[] = [];
  let phase = 0;
  let x = 1;
  for (let b = 0; b < frames; b++) {
    const f = new Int16Array(960);
    for (let i = 0; i < 960; i++) {
      const hz = 160 + 90 * Math.sin((b * 960 + i) / 20_000);
      phase += (2 * Math.PI * hz) / 48_000;
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      f[i] = Math.round(6000 * Math.sin(phase) + 2000 * Math.sin(3 * phase) + 600 * ((x / 0x7fffffff) * 2 - 1));
    }
    out.push(f);
  }
  return out;
}

function perFrameUs(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(200, n); i++) fn(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t0) * 1000) / n;
}

function codecCosts(): void {
  const frames = speech48(FRAMES);
  const row = (name: string, mod: Mod) => {
    const enc = new mod.Encoder({ channels: 1, sample_rate: 48000, application: 'voip' });
    enc.bitrate = 32_000;
    enc.signal = 'voice';
    enc.inband_fec = true;
    enc.packet_loss = 5;
    enc.complexity = 5;
    const packets: Uint8Array[] = [];
    const encUs = perFrameUs(FRAMES, (i) => {
      packets[i] = Uint8Array.from(enc.encode(frames[i]!));
    });
    const dec = new mod.Decoder({ channels: 1, sample_rate: 48000 });
    const decUs = perFrameUs(FRAMES, (i) => void dec.decode(packets[i]!));
    return { name, encUs, decUs };
  };
  const native = row('native', require('@evan/opus/node/index.js') as Mod);
  const wasm = row('wasm', require('@evan/opus/wasm/index.js') as Mod);
  const up = new Resampler(24_000, 48_000);
  const down = new Resampler(48_000, 16_000);
  const in24 = frames.map((f) => f.filter((_, i) => i % 2 === 0));
  const upUs = perFrameUs(FRAMES, (i) => void up.process(in24[i]!));
  const downUs = perFrameUs(FRAMES, (i) => void down.process(frames[i]!));
  const pctCore = (us: number) => (us / 20_000) * 100;
  for (const r of [native, wasm]) {
    log(`opus ${r.name.padEnd(6)}: encode ${f1(r.encUs)} µs, decode ${f1(r.decUs)} µs per 20 ms frame (${f2(pctCore(r.encUs + r.decUs))} % of a core per call)`);
  }
  log(`opus wasm/native: encode ×${f2(wasm.encUs / native.encUs)}, decode ×${f2(wasm.decUs / native.decUs)}`);
  log(`resample 24→48 kHz ${f1(upUs)} µs, 48→16 kHz ${f1(downUs)} µs per 20 ms frame (${f2(pctCore(upUs + downUs))} % of a core per call)`);
}

/** Several threads encoding the same frame at once: how many packets differ from the single-thread packet. */
async function threadSafety(build: 'native' | 'wasm'): Promise<number | string> {
  const path = require.resolve(`@evan/opus/${build === 'native' ? 'node' : 'wasm'}/index.js`);
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const m = require(${JSON.stringify(path)});
    const f = new Int16Array(960).map((_, i) => Math.round(6000 * Math.sin(i / (7 + workerData))));
    const mk = () => new m.Encoder({ channels: 1, sample_rate: 48000, application: 'voip' });
    const ref = Buffer.from(mk().encode(f)).toString('hex');
    let bad = 0;
    for (let i = 0; i < 2000; i++) if (Buffer.from(mk().encode(f)).toString('hex') !== ref) bad++;
    parentPort.postMessage(bad);`;
  // in a child process: the native addon may crash the process at exit when several threads loaded it
  const { execFileSync } = await import('node:child_process');
  try {
    const out = execFileSync(process.execPath, ['--input-type=commonjs', '-e', `
      const { Worker } = require('node:worker_threads');
      const code = ${JSON.stringify(code)};
      Promise.all([0, 1, 2].map((k) => new Promise((res) => new Worker(code, { eval: true, workerData: k }).on('message', res)))).then((r) => {
        console.log(r.reduce((a, b) => a + b, 0));
        process.exit(0);
      });`], { encoding: 'utf8', timeout: 120_000 });
    return Number(out.trim());
  } catch (err) {
    return `process died (${(err as { signal?: string }).signal ?? (err as Error).message.split('\n')[0]})`;
  }
}

/** CPU time (ms) of processes, from /proc/<pid>/stat (utime + stime, clock ticks of 10 ms). */
function childCpuMs(pids: number[]): number {
  let ms = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ms += (Number(f[11]) + Number(f[12])) * 10;
    } catch { /* gone */ }
  }
  return ms;
}

async function loadRun(mode: 'inline' | 'pool', threads: number): Promise<string> {
  const agent = speech48(50).map((f) => f.filter((_, i) => i % 2 === 0)); // 20 ms at 24 kHz
  const enc = new CallCodec();
  const caller = speech48(50).map((f) => enc.encode(f.filter((_, i) => i % 2 === 0))).flat();
  const pool = mode === 'pool' ? new CodecPool(threads) : null;
  let packetsOut = 0;
  let pcmOut = 0;
  const calls = Array.from({ length: CALLS }, () => {
    const h = { packets: (p: Uint8Array[]) => void (packetsOut += p.length), pcm: (p: Int16Array) => void (pcmOut += p.length) };
    if (pool) return pool.open(h);
    const c = new CallCodec();
    return { encode: (pcm: Int16Array): void => h.packets(c.encode(pcm)), sink: { packet: (p: Uint8Array): void => h.pcm(c.decode([p]).pcm) } };
  });
  if (pool) await new Promise<void>((r) => { const w = () => (pool.backends().every((b) => b) && pool.backends().length === threads ? r() : setTimeout(w, 5)); w(); });
  const lateness: number[] = [];
  const pids = pool ? pool.pids() : [];
  const kids0 = childCpuMs(pids);
  const cpu0 = process.cpuUsage();
  const thread0 = (process as unknown as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.() ?? null;
  const t0 = performance.now();
  const ticks = (SECONDS * 1000) / 20;
  await new Promise<void>((resolve) => {
    let k = 0;
    const tick = () => {
      lateness.push(performance.now() - (t0 + k * 20));
      for (const c of calls) {
        c.encode(agent[k % agent.length]!);
        c.sink.packet(caller[k % caller.length]!);
      }
      if (++k >= ticks) return resolve();
      setTimeout(tick, Math.max(0, t0 + k * 20 - performance.now()));
    };
    tick();
  });
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const kidsMs = childCpuMs(pids) - kids0;
  const tcpu = thread0 ? (process as unknown as { threadCpuUsage: (p: NodeJS.CpuUsage) => NodeJS.CpuUsage }).threadCpuUsage(thread0) : null;
  const msgs = pool ? pool.messages().reduce((a, b) => a + b, 0) : 0;
  const backends = pool ? pool.backends().join('/') : '';
  if (pool) await pool.close();
  const pctOf = (us: number) => (us / 1000 / wall) * 100;
  const proc = pctOf(cpu.user + cpu.system + kidsMs * 1000);
  const main = tcpu ? pctOf(tcpu.user + tcpu.system) : NaN;
  return `${mode === 'inline' ? 'inline  ' : `pool ×${threads} `}${CALLS} calls: event-loop thread ${f1(main)} % of a core (${f2(main / CALLS)} % per call), ` +
    `process + codec workers ${f1(proc)} % (${f2(proc / CALLS)} % per call); tick lateness p50 ${f1(pct(lateness, 50))} / p99 ${f1(pct(lateness, 99))} ms; ` +
    `packets ${f1(packetsOut / CALLS / (wall / 1000))}/s per call, caller audio ${f1(pcmOut / CALLS / (wall / 1000) / 160)} % of real time` +
    (pool ? `; ${f2(msgs / threads / ticks)} messages per thread per tick (opus: ${backends})` : '');
}

log(`machine: ${os.cpus().length} cores, load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)`);
codecCosts();
const safety = async (b: 'native' | 'wasm') => {
  const r = await threadSafety(b);
  return typeof r === 'number' ? `${r} of 6000 packets differ` : r;
};
log(`threads encoding at once (3 threads × 2000 frames): native: ${await safety('native')}; wasm: ${await safety('wasm')}`);
for (const line of [await loadRun('inline', 0), await loadRun('pool', os.availableParallelism())]) log(line);
log(`load average at end ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')}`);
process.exit(0);
