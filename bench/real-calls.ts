// bench/real-calls: real calls measured from outside, like a customer would. The service runs as its own process
// (the `npm start` shape, scripts/server-main.ts, on a scratch PostgreSQL, no Temporal) with the agent on real engines
// (default local: Whisper, Piper, the demo LLM; Silero VAD and the RNNoise gate on, as an agent's defaults have them).
// This process speaks the public protocol: POST /call, then N WebSocket callers joining within the same second, each
// streaming its microphone in real time (20 ms frames, faint hiss in its pauses), waiting for the greeting, then
// speaking an eSpeak NG sentence and pausing, TURNS times. Per level N (LEVELS, default 1,50,200; N = 1 is the
// baseline): greeting after join, voice-to-voice (last caller frame → first reply frame), audio gaps and late frames
// within agent utterances, in-pipeline overhead (calls.logs latency), CPU and RSS per call of the server's process tree.
// Engines: BENCH_STT / BENCH_TTS / BENCH_LLM pick provider ids, BENCH_STT_MODEL=pocketsphinx BENCH_TTS_MODEL=espeak-ng
// the lighter local engines, BENCH_LLM_MODEL=qwen2.5-coder-0.5b-instruct the in-process model (`npm run setup:llm`),
// BENCH_PROMPT the agent's system prompt (BENCH_PROMPT=dental: a front-desk prompt, with SENTENCES to match); vendor
// ids need <ID>_BASE_URL / <ID>_API_KEY pointing at fakes (passed through to the server), or
// BENCH_FAKES=path/to/module.ts whose `start()` resolves to `{ env, close() }` (env added to the server's).
// BENCH_CPU_PROF=dir writes a V8 CPU profile of the server process there. CALLER_VOICE=piper: the callers speak with
// the Piper voice (default: eSpeak NG's Klatt voice).
// BURST=50: admission instead of levels — on the node's own capacity (MEDIA_MAX_CALLS unset unless given), BURST
// callers each POST /call and join within one second, twice: on the freshly started node (as soon as it reports
// accepting, its engines loaded) and again once it is warm.
// The accepted ones run their turns (greeting, voice-to-voice); every other one must be refused within 2 s (503 at
// POST /call or 1013 at the join); a caller neither served nor refused in time is counted as hung. Target: no hang,
// refusals within 2 s, greeting p99 ≤ 150 ms and voice-to-voice p99 ≤ 1.5 s for the accepted ones.
//
//   npm run bench -- real-calls            LEVELS=1,50 TURNS=2 node --import tsx bench/real-calls.ts
//   BURST=50 TURNS=2 node --import tsx bench/real-calls.ts
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { z } from 'zod';
import { pct } from './_stats.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toString() : 'n/a');
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LEVELS = (process.env.LEVELS ?? '1,50,200').split(',').map(Number).filter((n) => n > 0);
const TURNS = Number(process.env.TURNS ?? 2);
const PAUSE_MS = Number(process.env.PAUSE_MS ?? 1000);
const SENTENCES = (process.env.SENTENCES ?? 'what time is it|who are you|what day is it').split('|');
const ENGINES = { stt: process.env.BENCH_STT ?? 'local', tts: process.env.BENCH_TTS ?? 'local', llm: process.env.BENCH_LLM ?? 'local' };
const BURST = Number(process.env.BURST ?? 0);
const REFUSE_WITHIN_MS = 2000;
const DENTAL_PROMPT = [
  'You are Sam, the receptionist of Bright Smile Dental, answering the phone. Speak in one or two short sentences.',
  'Opening hours: Monday to Friday 8 am to 6 pm, Saturday 9 am to 1 pm, closed on Sunday.',
  'Address: 42 Elm Street, Springfield. Free parking behind the building. Dentists: Dr. Patel and Dr. Gomez.',
  'A cleaning costs 95 dollars and takes 45 minutes. Insurance: most plans, including Delta Dental and Aetna.',
].join('\n');
const PROMPT =
  process.env.BENCH_PROMPT === 'dental'
    ? DENTAL_PROMPT
    : (process.env.BENCH_PROMPT ?? 'You are a helpful assistant. Answer briefly. Callers ask: what time is it? what day is it? who are you? thank you, goodbye.');
const QUIET_MS = 700; // the agent has finished speaking after this long without a frame
const WAIT_MS = 15_000; // give up on a greeting / reply after this long
const FRAME = 320; // 20 ms at 16 kHz

// ── the server's process tree: CPU and RSS from /proc ───────────────────────────────────────────────────
const CLK_TCK = 100;
function procStat(pid: number): { ppid: number; cpu: number; childCpu: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // fields after the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14)
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / CLK_TCK, childCpu: (Number(f[13]) + Number(f[14])) / CLK_TCK };
  } catch {
    return null;
  }
}
function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}
function tree(root: number): number[] {
  const kids = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const st = procStat(Number(e));
    if (!st) continue;
    const list = kids.get(st.ppid) ?? [];
    list.push(Number(e));
    kids.set(st.ppid, list);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(kids.get(p) ?? []));
  }
  return out;
}
/** CPU seconds used by the tree so far (live members + reaped children of the root) and its RSS in MB. */
function sampleTree(root: number): { cpu: number; ownCpu: number; rssMb: number; procs: number } {
  const pids = tree(root);
  let cpu = 0;
  let ownCpu = 0;
  let rss = 0;
  for (const p of pids) {
    const st = procStat(p);
    if (!st) continue;
    cpu += st.cpu + (p === root ? st.childCpu : 0);
    if (p === root) ownCpu = st.cpu;
    rss += rssKb(p);
  }
  return { cpu, ownCpu, rssMb: rss / 1024, procs: pids.length };
}

/** One shared microphone clock for every caller (drift-corrected 20 ms frames); returns its stop. */
function micClock(callers: readonly Caller[]): () => void {
  const t0 = performance.now();
  let tick = 0;
  let timer: NodeJS.Timeout | null = null;
  const mic = () => {
    const now = performance.now();
    for (const c of callers) c.mic(now);
    tick++;
    timer = setTimeout(mic, Math.max(0, t0 + tick * 20 - performance.now()));
  };
  mic();
  return () => {
    if (timer) clearTimeout(timer);
  };
}

// ── one caller ──────────────────────────────────────────────────────────────────────────────────────────
interface CallerResult {
  opened: boolean;
  refused: string | null;
  greetMs: number | null;
  v2v: number[];
  missedReplies: number;
  jitter: number[];
  late: number;
  /** inter-arrival gaps over 60 ms inside an agent utterance (the pacer ran dry or was held up) */
  gaps: number;
  /** per agent utterance: how far its latest frame was behind its playout time (ms) */
  segLate: number[];
  frames: number;
  /** `error` events the server sent */
  errors: string[];
}

class Caller {
  readonly r: CallerResult = { opened: false, refused: null, greetMs: null, v2v: [], missedReplies: 0, jitter: [], late: 0, gaps: 0, segLate: [], frames: 0, errors: [] };
  private ws!: WebSocket;
  openAt = 0;
  closedAt = 0;
  private err = '';
  private lastFrameAt = 0;
  private segStart = 0;
  private segN = 0;
  private segMaxLate = 0;
  private speech: Int16Array | null = null;
  private speechOff = 0;
  private speechEndAt = 0;
  private hissOff = Math.floor(Math.random() * 50) * FRAME;
  private waitingReply = false;
  done!: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly sentences: Int16Array[],
  ) {}

  start(): void {
    this.done = (async () => {
      this.ws = new WebSocket(this.url);
      const closed = new Promise<void>((res) => this.ws.on('close', (code, reason) => {
        if (!this.r.opened || code === 1013) this.r.refused ??= `${code} ${reason.toString()}${this.err ? ` (${this.err})` : ''}`;
        this.closedAt = performance.now();
        res();
      }));
      this.ws.on('error', (e) => (this.err = e.message));
      this.ws.on('unexpected-response', (_q, res) => {
        this.r.refused = `HTTP ${res.statusCode}`;
      });
      this.ws.on('message', (data, binary) => {
        if (binary) return this.onFrame();
        try {
          const ev = JSON.parse(String(data)) as { type?: string; message?: string };
          if (ev.type === 'error') this.r.errors.push(String(ev.message));
        } catch {
          /* not JSON */
        }
      });
      const opened = await Promise.race([new Promise<boolean>((res) => this.ws.once('open', () => res(true))), closed.then(() => false), sleep(30_000).then(() => false)]);
      if (!opened) {
        this.ws.terminate();
        this.r.refused ??= 'not accepted within 30 s';
        return;
      }
      this.r.opened = true;
      this.openAt = performance.now();
      const greeted = await this.until(() => this.r.greetMs !== null, WAIT_MS);
      if (greeted) await this.quiet();
      for (let t = 0; t < TURNS && this.ws.readyState === WebSocket.OPEN; t++) {
        this.speech = this.sentences[t % this.sentences.length]!;
        this.speechOff = 0;
        await this.until(() => this.speech === null, 30_000);
        this.waitingReply = true;
        const replied = await this.until(() => !this.waitingReply, WAIT_MS);
        if (!replied) {
          this.waitingReply = false;
          this.r.missedReplies++;
        } else await this.quiet();
        await sleep(PAUSE_MS);
      }
      this.ws.close(1000);
      await Promise.race([closed, sleep(5000)]);
    })();
  }

  /** called by the shared 20 ms microphone clock */
  mic(now: number): void {
    if (!this.r.opened || this.ws.readyState !== WebSocket.OPEN) return;
    let frame: Int16Array;
    if (this.speech) {
      frame = this.speech.subarray(this.speechOff, this.speechOff + FRAME);
      this.speechOff += FRAME;
      if (this.speechOff >= this.speech.length) {
        this.speech = null;
        this.speechEndAt = now;
      }
    } else {
      frame = HISS.subarray(this.hissOff, this.hissOff + FRAME);
      this.hissOff = (this.hissOff + FRAME) % HISS.length;
    }
    this.ws.send(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  }

  private onFrame(): void {
    const now = performance.now();
    this.r.frames++;
    if (this.r.greetMs === null && this.openAt) this.r.greetMs = now - this.openAt;
    if (this.waitingReply && this.speechEndAt) {
      this.r.v2v.push(now - this.speechEndAt);
      this.waitingReply = false;
    }
    if (!this.lastFrameAt || now - this.lastFrameAt > 500) {
      if (this.lastFrameAt) this.r.segLate.push(this.segMaxLate);
      this.segStart = now;
      this.segN = 0;
      this.segMaxLate = 0;
    } else {
      if (now - this.lastFrameAt > 60) this.r.gaps++;
      this.segMaxLate = Math.max(this.segMaxLate, now - (this.segStart + this.segN * 20));
      // frames 0..5 are the pacer's initial lead burst
      if (this.segN >= 6) this.r.jitter.push(Math.abs(now - this.lastFrameAt - 20));
      if (now > this.segStart + this.segN * 20 + 40) this.r.late++;
    }
    this.segN++;
    this.lastFrameAt = now;
  }

  private async until(cond: () => boolean, ms: number): Promise<boolean> {
    const end = performance.now() + ms;
    while (!cond()) {
      if (performance.now() > end || this.ws.readyState !== WebSocket.OPEN) return cond();
      await sleep(20);
    }
    return true;
  }

  private async quiet(): Promise<void> {
    while (this.ws.readyState === WebSocket.OPEN && performance.now() - this.lastFrameAt < QUIET_MS) await sleep(50);
  }
}
// the caller's pauses: faint line hiss (≈ −71 dBFS RMS), not digital zeros, as a real microphone or line sends
const HISS = new Int16Array(FRAME * 50);
for (let i = 0, seed = 7; i < HISS.length; i++) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  HISS[i] = (seed % 33) - 16;
}

// ── main ────────────────────────────────────────────────────────────────────────────────────────────────
const { loadConfig } = await import('../core/config.ts');
const { createDb, sql } = await import('../core/db/pool.ts');
const { createApiKey, createOrganization, setOrganizationLimits } = await import('../core/orgs.ts');
const { startScratchDatabase, freePort, waitForPort, MEDIA_NODE_FLAGS } = await import('../scripts/infra.ts');
const { createLocalTts } = await import('../media/services/tts/local.ts');
const { resample } = await import('../core/audio/resample.ts');
void loadConfig;

const scratch = await startScratchDatabase({ prefix: 'vas-bench-real-' });
let server: ChildProcess | null = null;
let fakes: { env: Record<string, string>; close(): Promise<void> } | null = null;
let exit = 0;
try {
  if (process.env.BENCH_FAKES) {
    const mod = (await import(pathToFileURL(path.resolve(process.env.BENCH_FAKES)).href)) as { start(): Promise<typeof fakes> };
    fakes = await mod.start();
  }
  const db = await createDb(scratch.url, { maximumPoolSize: 4 });
  const org = await createOrganization(db, { name: 'bench', balanceUsd: 100_000 });
  await setOrganizationLimits(db, org.id, { concurrency: 1000, ratePerMinute: 100_000 });
  const key = (await createApiKey(db, org.id, 'bench')).key;
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
  server = spawn(process.execPath, [...MEDIA_NODE_FLAGS, ...prof, '--import', 'tsx', 'scripts/server-main.ts'], {
    cwd: REPO,
    env: {
      ...process.env,
      ...(fakes?.env ?? {}),
      DATABASE_URL: scratch.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: origin,
      DATA_DIR: path.join(scratch.dir, 'data'),
      TEMPORAL_ADDRESS: '',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
      SIGNING_SECRET: 'bench-signing-secret-0123456789',
      DEFAULT_CONCURRENCY: '1000',
      DEFAULT_RATE_PER_MINUTE: '100000',
      DATABASE_POOL_SIZE: '20',
      // measure past the node's default capacity unless told otherwise (MEDIA_MAX_CALLS=50 shows the refusals); a
      // burst measures the node's own admission
      ...(process.env.MEDIA_MAX_CALLS || !BURST ? { MEDIA_MAX_CALLS: process.env.MEDIA_MAX_CALLS ?? '10000' } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const serverPid = server.pid!;
  await waitForPort(port, 60_000);
  const portOpenAt = performance.now();
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${origin}/api/v1${p}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : null });
    const json = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    return { status: res.status, json };
  };
  const agent = await api('POST', '/agents', {
    name: 'Bench agent',
    systemPrompt: PROMPT,
    llm: { provider: ENGINES.llm, model: process.env.BENCH_LLM_MODEL ?? (ENGINES.llm === 'local' ? 'local-demo' : null) },
    // BENCH_STT_MODEL / BENCH_TTS_MODEL pick a model (e.g. pocketsphinx / espeak-ng for the older local engines)
    stt: { provider: ENGINES.stt, ...(process.env.BENCH_STT_MODEL ? { model: process.env.BENCH_STT_MODEL } : {}) },
    tts: { provider: ENGINES.tts, ...(process.env.BENCH_TTS_MODEL ? { model: process.env.BENCH_TTS_MODEL } : {}) },
    greeting: { firstMessages: ['Hello! Thanks for calling. How can I help you today?'] },
  });
  if (agent.status !== 201 && agent.status !== 200) throw new Error(`POST /agents → ${agent.status} ${JSON.stringify(agent.json)}`);
  const agentId = String(agent.json!.uuid);

  // the callers' sentences, 16 kHz: eSpeak NG (Klatt voice, slower), or with CALLER_VOICE=piper the Piper voice
  // without its sampling noise; either gives the same audio every run
  const callerTts = process.env.CALLER_VOICE === 'piper'
    ? (await import('../media/services/tts/piper.ts')).createPiperTts({ noiseless: true })
    : createLocalTts({ languages: ['en'], voice: 'en-us+klatt', wordsPerMinute: 150, binary: 'espeak-ng' });
  const sentences: Int16Array[] = [];
  for (const s of SENTENCES) {
    const parts: Int16Array[] = [];
    for await (const p of callerTts.synthesize(s, new AbortController().signal)) parts.push(p);
    const pcm24 = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
    parts.reduce((o, p) => (pcm24.set(p, o), o + p.length), 0);
    sentences.push(resample(pcm24, 24000, 16000));
  }

  if (BURST > 0) {
    log(`cores ${os.cpus().length} · engines stt=${ENGINES.stt} tts=${ENGINES.tts} llm=${ENGINES.llm} · burst of ${BURST} callers within 1 s · MEDIA_MAX_CALLS ${process.env.MEDIA_MAX_CALLS ?? "the node's default"} · load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    log('| node | callers | accepted | refused (503 / 1013) | refusal after ms p50 / p99 / max | refused late (> 2 s) | hung | greeting p50 / p99 ms | voice-to-voice p50 / p99 ms | missed replies |');
    log('|---|---|---|---|---|---|---|---|---|---|');
    // a starting node takes calls once its engines have loaded (it reports accepting): the fresh burst starts then
    for (;;) {
      const up = await db.maybeOneFirst(sql.type(z.object({ a: z.boolean() }))`SELECT bool_or(accepting) AS a FROM media_nodes`);
      if (up) break;
      if (performance.now() - portOpenAt > 120_000) throw new Error('the node never reported accepting');
      await sleep(100);
    }
    log(`node accepting ${Math.round(performance.now() - portOpenAt)} ms after its port opened (engines loaded)`);
    for (const phase of ['fresh', 'warm'] as const) {
      if (phase === 'warm') await sleep(3000);
      const refusedAfter: number[] = [];
      let at503 = 0;
      let at1013 = 0;
      let hung = 0;
      const callers: Caller[] = [];
      const stopMic = micClock(callers);
      await Promise.all(Array.from({ length: BURST }, async (_, i) => {
        await sleep((i * 1000) / BURST);
        const began = performance.now();
        const r = await api('POST', '/call', { agentId, transport: 'websocket' });
        if (r.status === 503) {
          at503++;
          refusedAfter.push(performance.now() - began);
          return;
        }
        if (r.status !== 200) throw new Error(`POST /call → ${r.status} ${JSON.stringify(r.json)}`);
        const c = new Caller(`${origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${String(r.json!.callId)}?api_key=${encodeURIComponent(key)}`, sentences);
        callers.push(c);
        c.start();
        // served (its socket opened) or refused (1013), within the bound; anything else hangs
        const decided = await Promise.race([
          (async () => { while (!c.r.opened && !c.r.refused) await sleep(10); return true; })(),
          sleep(REFUSE_WITHIN_MS + 3000).then(() => false),
        ]);
        if (!decided) hung++;
        else if (c.r.refused) {
          at1013++;
          refusedAfter.push(performance.now() - began);
        }
        await c.done;
      }));
      stopMic();
      const rs = callers.map((c) => c.r).filter((r) => r.opened && !r.refused);
      const greet = rs.flatMap((r) => (r.greetMs !== null ? [r.greetMs] : []));
      const v2v = rs.flatMap((r) => r.v2v);
      const missed = rs.reduce((a, r) => a + r.missedReplies, 0) + rs.filter((r) => r.greetMs === null).length;
      const late = refusedAfter.filter((ms) => ms > REFUSE_WITHIN_MS).length;
      log(`| ${phase} | ${BURST} | ${rs.length} | ${at503} / ${at1013} | ${f0(pct(refusedAfter, 50))} / ${f0(pct(refusedAfter, 99))} / ${f0(Math.max(...refusedAfter, NaN))} | ${late} | ${hung} | ${f0(pct(greet, 50))} / ${f0(pct(greet, 99))} | ${f0(pct(v2v, 50))} / ${f0(pct(v2v, 99))} | ${missed} |`);
      // every accepted call ends before the next phase (their rows free the node's room)
      await sleep(1500);
    }
    log(`load average now ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    process.exitCode = 0;
  } else {
  log(`cores ${os.cpus().length} · engines stt=${ENGINES.stt} tts=${ENGINES.tts} llm=${ENGINES.llm} · ${TURNS} turns per call, ${PAUSE_MS} ms pause · server pid ${serverPid} · load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  log('| calls | accepted | greeting p50 / p99 ms | voice-to-voice p50 / p99 ms | missed replies | jitter p99 ms | frames late >40 ms | utterance max lateness p50 / p99 ms · gaps >60 ms | overhead p50 / p99 ms | CPU % core per call (Node share) | RSS MB per call | procs | tree RSS MB idle → peak |');
  log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  let firstGreeting: number | null = null;
  const perLevel: Array<{ n: number; cpuPerCall: number; ok: boolean }> = [];
  const notes: string[] = [];
  for (const n of LEVELS) {
    await sleep(1500);
    const idle0 = sampleTree(serverPid);
    await sleep(1000);
    const idle1 = sampleTree(serverPid);
    const idleCpuRate = idle1.cpu - idle0.cpu; // core-seconds per second
    const ids: string[] = [];
    for (let i = 0; i < n; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, n - i) }, () => api('POST', '/call', { agentId, transport: 'websocket' })),
      );
      for (const b of batch) {
        if (b.status !== 201 && b.status !== 200) throw new Error(`POST /call → ${b.status} ${JSON.stringify(b.json)}`);
        ids.push(String(b.json!.callId ?? b.json!.id));
      }
    }
    const urls = await Promise.all(ids.map(async (id) => `${origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${id}?api_key=${encodeURIComponent(key)}`));
    const callers = urls.map((u) => new Caller(u, sentences));
    const stopMic = micClock(callers);
    // N callers join within the same second
    let peakRss = idle1.rssMb;
    let peakProcs = idle1.procs;
    const cpu0 = sampleTree(serverPid);
    const w0 = performance.now();
    const sampler = setInterval(() => {
      const s = sampleTree(serverPid);
      peakRss = Math.max(peakRss, s.rssMb);
      peakProcs = Math.max(peakProcs, s.procs);
    }, 500);
    const clientLag = monitorEventLoopDelay({ resolution: 10 });
    clientLag.enable();
    callers.forEach((c, i) => setTimeout(() => c.start(), (i * 1000) / n));
    await sleep(1100);
    await Promise.all(callers.map((c) => c.done));
    const cpu1 = sampleTree(serverPid);
    const wall = (performance.now() - w0) / 1000;
    clearInterval(sampler);
    clientLag.disable();
    stopMic();
    const rs = callers.map((c) => c.r);
    const greet = rs.flatMap((r) => (r.greetMs !== null ? [r.greetMs] : []));
    if (firstGreeting === null && greet.length) firstGreeting = greet[0]!;
    const v2v = rs.flatMap((r) => r.v2v);
    const jitter = rs.flatMap((r) => r.jitter);
    const late = rs.reduce((a, r) => a + r.late, 0);
    const gaps = rs.reduce((a, r) => a + r.gaps, 0);
    const segLate = rs.flatMap((r) => r.segLate);
    const frames = rs.reduce((a, r) => a + r.frames, 0);
    const accepted = rs.filter((r) => r.opened).length;
    const refused = rs.filter((r) => r.refused).map((r) => r.refused!);
    const missed = rs.reduce((a, r) => a + r.missedReplies, 0) + rs.filter((r) => r.opened && r.greetMs === null).length;
    // in-pipeline overhead from the rows (the server writes them at the end of each call; wait up to 60 s)
    const deadline = Date.now() + 60_000;
    let overhead: number[] = [];
    const stages: Record<'stt_ms' | 'llm_ms' | 'tts_ms' | 'total_ms', number[]> = { stt_ms: [], llm_ms: [], tts_ms: [], total_ms: [] };
    for (;;) {
      const rows = await db.any(sql.type(z.object({ status: z.string(), logs: z.unknown() }))`SELECT status, logs FROM calls WHERE id = ANY(${sql.array(ids, 'uuid')})`);
      const ended = rows.filter((r) => r.status !== 'active' && r.status !== 'pending');
      if (ended.length === rows.length || Date.now() > deadline) {
        const turns = ended.flatMap((r) => (r.logs as { latency?: Array<Record<string, number | null>> })?.latency ?? []);
        overhead = turns.flatMap((l) => (typeof l.overhead_ms === 'number' ? [l.overhead_ms] : []));
        for (const k of ['stt_ms', 'llm_ms', 'tts_ms', 'total_ms'] as const) stages[k] = turns.flatMap((l) => (typeof l[k] === 'number' ? [l[k]] : []));
        break;
      }
      await sleep(250);
    }
    // average number of calls open over the window (a refused call adds nothing)
    const openSeconds = callers.reduce((a, c) => a + (c.openAt ? ((c.closedAt || performance.now()) - c.openAt) / 1000 : 0), 0);
    const avgOpen = openSeconds / wall;
    const cpuPerCall = ((cpu1.cpu - cpu0.cpu - idleCpuRate * wall) / wall / Math.max(avgOpen, 1e-9)) * 100;
    // the share of it in the Node process itself (the rest: recogniser and synthesizer processes)
    const nodeShare = (cpu1.ownCpu - cpu0.ownCpu) / Math.max(cpu1.cpu - cpu0.cpu, 1e-9);
    const rssPerCall = (peakRss - idle1.rssMb) / Math.max(accepted, 1);
    perLevel.push({ n, cpuPerCall, ok: accepted === n });
    // is the client itself keeping up? (its lag delays what it sends and when it stamps what it receives)
    const errs = new Map<string, number>();
    for (const e of rs.flatMap((r) => r.errors)) errs.set(e, (errs.get(e) ?? 0) + 1);
    notes.push(
      `N=${n}: in the pipeline per turn (p50 / p99 ms): stt stop→final ${f0(pct(stages.stt_ms, 50))} / ${f0(pct(stages.stt_ms, 99))}, ` +
        `llm ${f0(pct(stages.llm_ms, 50))} / ${f0(pct(stages.llm_ms, 99))}, tts first byte ${f0(pct(stages.tts_ms, 50))} / ${f0(pct(stages.tts_ms, 99))}, ` +
        `end of speech (VAD stop) → first agent audio ${f0(pct(stages.total_ms, 50))} / ${f0(pct(stages.total_ms, 99))} (${stages.total_ms.length} turns); ` +
        `client event-loop delay p99 ${f1(clientLag.percentile(99) / 1e6)} ms (max ${f1(clientLag.max / 1e6)})` +
        (errs.size ? `; server error events: ${[...errs].map(([m, k]) => `${k}× "${m}"`).join(', ')}` : ''),
    );
    log(
      `| ${n} | ${accepted}${refused.length ? ` (${refused.length} refused: ${[...new Set(refused)].slice(0, 2).join('; ')})` : ''} | ${f0(pct(greet, 50))} / ${f0(pct(greet, 99))} | ${f0(pct(v2v, 50))} / ${f0(pct(v2v, 99))} | ${missed} | ${f1(pct(jitter, 99))} | ${late} of ${frames} | ${f0(pct(segLate, 50))} / ${f0(pct(segLate, 99))} · ${gaps} | ${f1(pct(overhead, 50))} / ${f1(pct(overhead, 99))} | ${f2(cpuPerCall)} (${f0(nodeShare * 100)} %) | ${f1(rssPerCall)} | ${peakProcs} | ${f0(idle1.rssMb)} → ${f0(peakRss)} |`,
    );
  }
  log(notes.join('\n'));
  log(`first greeting after start: ${f0(firstGreeting ?? NaN)} ms · load average now ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const base = perLevel[0];
  for (const l of perLevel.slice(1)) {
    if (base) log(`ratio CPU per call at ${l.n} vs ${base.n}: ${f2(l.cpuPerCall / base.cpuPerCall)}×`);
  }
  const best = perLevel.filter((l) => l.n > 1).at(-1);
  if (best && best.cpuPerCall > 0) log(`calls per core (from CPU per call at ${best.n}): ${f1(100 / best.cpuPerCall)}  (Pipecat light bench: ≈ 25–29 per core at 3.5–4 % per call)`);
  }
} catch (err) {
  exit = 1;
  log(`bench failed: ${(err as Error).stack ?? String(err)}`);
} finally {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await Promise.race([new Promise((r) => server!.once('exit', r)), sleep(15_000)]);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  await fakes?.close().catch(() => {});
  await scratch.stop().catch(() => {});
  if (process.env.CALLER_VOICE === 'piper') await (await import('../media/services/neural.ts')).closeNeuralEngines().catch(() => {});
}
process.exit(exit);
