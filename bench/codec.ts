// bench/codec: what the audio work of one WebRTC call costs, and where it runs. In one run, one process:
//   1. Per stage, in CPU time of this thread (process.threadCpuUsage, so other processes on the cores barely change
//      the figure; wall time would), as % of one core per call: the 48 kHz baseline path (voip encoder at libopus's
//      defaults, resamplers 24→48 and 48→16 kHz) against CallCodec's (24 kHz straight into a CELT encoder, decode
//      straight to 16 kHz); Opus 'voip' and 'audio' at every complexity 0–10; native against WASM. With the bitrate
//      and a crude quality proxy (waveform SNR after aligning the codec delay: read it only to spot a setting that breaks).
//   2. Whether each Opus build is safe with encoders in several threads at once (same input → same packet).
//   3. CALLS simulated calls for SECONDS, each 20 ms tick encoding 20 ms of agent audio and decoding one caller packet
//      per call, inline (CallCodec) and through the codec pool (media/webrtc/codec-pool.ts): event-loop CPU per call,
//      tick lateness, messages per worker per tick, CPU of this process plus the workers'.
//   4. The agent's voice through the agent encoder at each complexity, scored by PESQ wideband (P.862.2, PyPI's `pesq`
//      run by a Python that has it; skipped, with the install line, where none does).
//
//   node --import tsx bench/codec.ts         CALLS=150 SECONDS=10 FRAMES=1500 (ONLY=quality: part 4 alone)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { concatInt16 } from '../media/audio/pcm.ts';
import { Resampler } from '../core/audio/resample.ts';
import { AGENT_ENCODER, CallCodec } from '../media/webrtc/call-codec.ts';
import { CodecPool } from '../media/webrtc/codec-pool.ts';
import { OpusDecoder48, OpusEncoder48 } from '../core/audio/opus.ts';
import { f1, f2, pct } from './_stats.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const FRAMES = Number(process.env.FRAMES ?? 1500);
const CALLS = Number(process.env.CALLS ?? 150);
const SECONDS = Number(process.env.SECONDS ?? 10);
const require = createRequire(import.meta.url);

interface Enc { encode(b: ArrayBufferView): Uint8Array; ctl(request: number, value?: number): number }
interface Dec { decode(b: ArrayBufferView): Uint8Array }
interface Mod { Encoder: new (o: object) => Enc; Decoder: new (o: object) => Dec }

/** Speech-like audio at `rate`: a gliding voiced tone with harmonics and some noise, in 20 ms frames. */
function speech(rate: number, frames: number): Int16Array[] {
  const n = rate / 50;
  const out: Int16Array[] = [];
  let phase = 0;
  let x = 1;
  for (let b = 0; b < frames; b++) {
    const f = new Int16Array(n);
    for (let i = 0; i < n; i++) {
      const hz = 160 + 90 * Math.sin((b * n + i) / (rate / 2.4));
      phase += (2 * Math.PI * hz) / rate;
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      f[i] = Math.round(6000 * Math.sin(phase) + 2000 * Math.sin(3 * phase) + 600 * ((x / 0x7fffffff) * 2 - 1));
    }
    out.push(f);
  }
  return out;
}
const speech48 = (frames: number) => speech(48_000, frames);

const threadCpuUs = (): number => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};
/** % of one core per call: this thread's CPU time for `n` frames of 20 ms, after a warm-up. */
function pctPerCall(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(100, n); i++) fn(i);
  const c0 = threadCpuUs();
  for (let i = 0; i < n; i++) fn(i);
  return ((threadCpuUs() - c0) / (n * 20_000)) * 100;
}

// opus_encoder_ctl requests (opus_defines.h); the package's property setters do nothing (core/audio/opus.ts)
const SET_BITRATE = 4002, SET_COMPLEXITY = 4010, SET_FEC = 4012, SET_LOSS = 4014, SET_SIGNAL = 4024, VOICE = 3001;

/** Waveform SNR (dB) of `out` against `ref`, best over delays up to 10 ms (the codec's look-ahead). */
function snrDb(ref: Int16Array, out: Int16Array, rate: number): number {
  let best = -Infinity;
  for (let d = 0; d < rate / 100; d++) {
    let s = 0;
    let e = 0;
    for (let i = rate / 10; i + d < out.length && i < ref.length; i++) {
      const r = ref[i]!;
      const diff = r - out[i + d]!;
      s += r * r;
      e += diff * diff;
    }
    best = Math.max(best, 10 * Math.log10(s / e));
  }
  return best;
}
const joinPcm = (parts: Int16Array[]): Int16Array => {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let k = 0;
  for (const p of parts) {
    out.set(p, k);
    k += p.length;
  }
  return out;
};

function codecCosts(): void {
  const s48 = speech(48_000, FRAMES);
  const s24 = speech(24_000, FRAMES);
  const native = require('@evan/opus/node/index.js') as Mod;
  const wasm = require('@evan/opus/wasm/index.js') as Mod;
  /** encode every frame with a fresh encoder set up by `setup`, then decode at `decodeRate`; cost, kb/s, SNR */
  const encodeRow = (mod: Mod, rate: 24_000 | 48_000, application: string, setup: (e: Enc) => void, decodeRate: number = rate) => {
    const src = rate === 24_000 ? s24 : s48;
    const enc = new mod.Encoder({ channels: 1, sample_rate: rate, application });
    setup(enc);
    const packets: Uint8Array[] = [];
    const encPct = pctPerCall(FRAMES, (i) => void (packets[i] = new Uint8Array(enc.encode(src[i]!))));
    const dec = new mod.Decoder({ channels: 1, sample_rate: decodeRate });
    const out: Int16Array[] = [];
    const decPct = pctPerCall(FRAMES, (i) => {
      const b = dec.decode(packets[i]!);
      out[i] = new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    });
    const kbps = (packets.reduce((n, p) => n + p.length, 0) * 8) / (FRAMES * 20);
    return { encPct, decPct, kbps, snr: decodeRate === rate ? snrDb(joinPcm(src), joinPcm(out), rate) : NaN };
  };
  const voip = (c: number) => (e: Enc) => {
    e.ctl(SET_BITRATE, 32_000);
    e.ctl(SET_SIGNAL, VOICE);
    e.ctl(SET_FEC, 1);
    e.ctl(SET_LOSS, 5);
    e.ctl(SET_COMPLEXITY, c);
  };
  const audio = (c: number) => (e: Enc) => {
    e.ctl(SET_BITRATE, 32_000);
    e.ctl(SET_COMPLEXITY, c);
  };
  // the baseline: 'voip' encoder with the (ignored) setters, i.e. libopus defaults
  const before = encodeRow(native, 48_000, 'voip', () => {});
  const up = new Resampler(24_000, 48_000);
  const down = new Resampler(48_000, 16_000);
  const upPct = pctPerCall(FRAMES, (i) => void up.process(s24[i]!));
  const downPct = pctPerCall(FRAMES, (i) => void down.process(s48[i]!));
  const dec16 = encodeRow(native, 48_000, 'voip', voip(5), 16_000); // a browser-like caller stream, decoded at 16 kHz
  const dec48 = encodeRow(native, 48_000, 'voip', voip(5));
  const now = encodeRow(native, 24_000, 'audio', audio(AGENT_ENCODER.complexity ?? 5));
  const row = (name: string, r: { encPct: number; kbps: number; snr: number }) =>
    log(`  ${name.padEnd(44)} encode ${f2(r.encPct)} % of a core per call, ${f1(r.kbps)} kb/s, SNR ${f1(r.snr)} dB`);
  log('per stage, CPU time of this thread (% of one core per call; native Opus):');
  row('before: voip 48 kHz, libopus defaults (c9)', before);
  log(`  before: resample 24→48 kHz ${f2(upPct)} %, 48→16 kHz ${f2(downPct)} %; decode at 48 kHz ${f2(dec48.decPct)} %`);
  row(`now: audio (CELT) 24 kHz in, 32 kb/s, c${AGENT_ENCODER.complexity}`, now);
  log(`  now: no resampler; decode straight to 16 kHz ${f2(dec16.decPct)} %`);
  const beforeTotal = before.encPct + upPct + dec48.decPct + downPct;
  const nowTotal = now.encPct + dec16.decPct;
  log(`  per call, codec + resampling: before ${f2(beforeTotal)} %, now ${f2(nowTotal)} % (×${f2(beforeTotal / nowTotal)} less)`);
  log('Opus encoder by complexity (native, 32 kb/s; voip = SILK/hybrid, voice, FEC at 5 % loss, 48 kHz in; audio = CELT, 24 kHz in):');
  for (let c = 0; c <= 10; c++) {
    const v = encodeRow(native, 48_000, 'voip', voip(c));
    const a = encodeRow(native, 24_000, 'audio', audio(c));
    log(`  c${String(c).padEnd(2)} voip ${f2(v.encPct)} % (${f1(v.kbps)} kb/s, SNR ${f1(v.snr)} dB)   audio ${f2(a.encPct)} % (${f1(a.kbps)} kb/s, SNR ${f1(a.snr)} dB)`);
  }
  const wNow = encodeRow(wasm, 24_000, 'audio', audio(AGENT_ENCODER.complexity ?? 5));
  const wDec = encodeRow(wasm, 48_000, 'voip', voip(5), 16_000);
  log(`opus wasm/native (the settings now used): encode ×${f2(wNow.encPct / now.encPct)}, decode to 16 kHz ×${f2(wDec.decPct / dec16.decPct)}`);
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
  const agent = speech(24_000, 50); // 20 ms blocks at 24 kHz
  const browser = new OpusEncoder48(); // the caller's packets as a browser sends them (voip, 48 kHz, FEC)
  const caller = speech48(50).map((f) => browser.encode(f));
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

/** A Python that can import `pesq` (PyPI: ITU-T P.862 and P.862.2): PESQ_PYTHON, else python3 if it has it. */
function pesqPython(): string | null {
  for (const py of [process.env.PESQ_PYTHON, 'python3'].filter(Boolean) as string[]) {
    if (spawnSync(py, ['-c', 'import pesq, numpy'], { stdio: 'ignore' }).status === 0) return py;
  }
  return null;
}

/** The agent's voice (the local Piper voice, 24 kHz, as the pipeline hands it to the transport) through the agent
 * encoder at each complexity, decoded at 16 kHz, scored by PESQ wideband (P.862.2, MOS-LQO 1.04–4.64) against the same
 * speech resampled to 16 kHz: what a listener loses at each setting, which the SNR proxy above cannot say. */
async function qualityByComplexity(): Promise<void> {
  const py = pesqPython();
  if (!py) {
    log('agent voice quality by complexity: skipped (needs a Python with `pesq` and `numpy` from PyPI: python3 -m pip install pesq numpy, or PESQ_PYTHON=<python>)');
    return;
  }
  const { createLocalTts } = await import('../media/services/tts/local.ts');
  const { resample } = await import('../core/audio/resample.ts');
  const tts = createLocalTts({ languages: ['en'], ...(process.env.QUALITY_VOICE === 'espeak' ? { model: 'espeak-ng', binary: 'espeak-ng' } : {}) });
  const text = 'Thanks for calling. Our opening hours are nine to five on weekdays, and ten to two on Saturdays. ' +
    'Would you like me to book an appointment for you, or is there anything else I can help with today?';
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  const s24 = concatInt16(parts);
  const dir = mkdtempSync(join(os.tmpdir(), 'pesq-'));
  const raw = (a: Int16Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  writeFileSync(join(dir, 'ref'), raw(resample(s24, 24_000, 16_000)));
  const n = AGENT_ENCODER.inputRate! / 50;
  const names: string[] = [];
  const bitrates: number[] = [];
  const encPct: number[] = [];
  const mode: string[] = [];
  for (let c = 0; c <= 10; c++) {
    // encode CPU: the whole sentence three times over, each on a fresh encoder, the quickest (per-frame readings are
    // too coarse); the packets of the first pass are decoded and scored
    let packets: Uint8Array[] = [];
    let best = Infinity;
    for (let rep = 0; rep < 3; rep++) {
      const enc = new OpusEncoder48(AGENT_ENCODER.bitrate, { ...AGENT_ENCODER, complexity: c });
      const these: Uint8Array[] = [];
      const t0 = threadCpuUs();
      for (let off = 0; off + n <= s24.length; off += n) these.push(enc.encode(s24.subarray(off, off + n)));
      best = Math.min(best, threadCpuUs() - t0);
      if (rep === 0) packets = these;
    }
    const dec = new OpusDecoder48(16_000);
    const out = packets.map((p) => dec.decode(p));
    const bytes = packets.reduce((a, p) => a + p.length, 0);
    // RFC 6716 TOC: configurations 0–11 SILK, 12–15 hybrid, 16–31 CELT
    const modes = new Set(packets.map((p) => (p[0]! >> 3 < 12 ? 'SILK' : p[0]! >> 3 < 16 ? 'hybrid' : 'CELT')));
    encPct.push((best / 1000 / (packets.length * 20)) * 100);
    mode.push([...modes].join('+'));
    writeFileSync(join(dir, `c${c}`), raw(concatInt16(out)));
    names.push(`c${c}`);
    bitrates.push((bytes * 8) / (out.length * 0.02) / 1000);
  }
  const script = `import sys, numpy as np
from pesq import pesq
d = sys.argv[1]
ref = np.fromfile(d + '/ref', dtype=np.int16).astype(np.float64)
for name in sys.argv[2:]:
    deg = np.fromfile(d + '/' + name, dtype=np.int16).astype(np.float64)
    print(name, pesq(16000, ref, deg, 'wb'))`;
  const r = spawnSync(py, ['-c', script, dir, ...names], { encoding: 'utf8' });
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) {
    log(`agent voice quality by complexity: pesq failed: ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
    return;
  }
  const score = new Map(r.stdout.trim().split('\n').map((l) => l.split(' ') as [string, string]));
  log(`agent voice quality by complexity (${tts.model}, ${f1(s24.length / 24_000)} s at 24 kHz → ${AGENT_ENCODER.application} ${AGENT_ENCODER.bitrate / 1000} kb/s → decoded at 16 kHz; PESQ-WB MOS-LQO, 4.64 = transparent):`);
  for (let i = 0; i < names.length; i++) {
    log(`  ${names[i]!.padEnd(3)} PESQ-WB ${Number(score.get(names[i]!)).toFixed(2)}, ${mode[i]}, ${f1(bitrates[i]!)} kb/s, encode ${f2(encPct[i]!)} % of a core while speaking`);
  }
}

log(`machine: ${os.cpus().length} cores, load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)`);
if (process.env.ONLY === 'quality') {
  await qualityByComplexity();
  process.exit(0);
}
codecCosts();
await qualityByComplexity();
const safety = async (b: 'native' | 'wasm') => {
  const r = await threadSafety(b);
  return typeof r === 'number' ? `${r} of 6000 packets differ` : r;
};
log(`threads encoding at once (3 threads × 2000 frames): native: ${await safety('native')}; wasm: ${await safety('wasm')}`);
for (const line of [await loadRun('inline', 0), await loadRun('pool', os.availableParallelism())]) log(line);
log(`load average at end ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')}`);
process.exit(0);
