// bench/pipeline: the live voice pipeline over real WebSockets, clients in a child process so the server's figures
// are its own (the server side runs with the media process's Node flags, scripts/infra.ts MEDIA_NODE_FLAGS).
//  (a) server-added latency per turn: caller's last speech frame sent → first agent audio frame received, minus the
//      fixed parts that are not ours (the fakes' latencies, the VAD stop window); also the in-pipeline figure from
//      calls.logs.latency (total − stt − llm − tts). Target p99 ≤ 10 ms. Baseline: a raw WebSocket echo round trip.
//  (b) N simultaneous calls (CALLS, default 200): output pacing jitter (|Δ − 20 ms| at the clients, p99; frames that
//      missed their playout time), the shared frame clock's tick lateness, RSS per call. Target jitter p99 ≤ 20 ms.
//      Baseline: the same clients with 1 call.
// MODE=vendors: the same with the real vendor adapters (Deepgram Flux, or STT=soniox; OpenAI; ElevenLabs) built the
// production way (createEngines + Silero VAD) against their local fakes (bench/_vendors.ts), callers speaking an eSpeak
// sentence and waiting for each reply; (b) adds end of speech → first reply audio at load and server CPU per call.
// MODE=vendors MEDIA_PROCESSES=K spreads the callers over K media processes. Either mode: NEIGHBOUR=1 (a
// busy-looping neighbour process), ALLOC_PROFILE=file, scheduling experiments SERVER_CHRT / SERVER_SLICE_US and the
// product's MEDIA_PACING_CPU=1 (bench/_server.ts).
//
//   npm run bench -- pipeline          CALLS=200 TURNS=30 node --import tsx bench/pipeline.ts
//   MODE=vendors CALLS=20 TURNS=10 SECONDS=20 node --import tsx bench/pipeline.ts
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import WebSocket, { WebSocketServer } from 'ws';
import { f1, pct } from './_stats.ts';
import { forkRole, LATE_MS, SpeakingCaller, speakingStats, speechFrame, wsCaller, type SpeakingStats } from './_callers.ts';
import { benchStt, callerSentence, FIXED_TURN_MS, sentenceFromBase64, sentenceToBase64, startVendorFakes, STT_END_MS, vendorAgent, vendorConfig } from './_vendors.ts';

const ROLE = process.argv[2] ?? 'server';
const log = (m: string) => process.stdout.write(`${m}\n`);

// the jitter tail's attribution (tailCause): a client sample within CAUSE_WINDOW_MS after a tick CAUSE_LATE_MS late
const CAUSE_LATE_MS = 8;
const CAUSE_WINDOW_MS = 25;

const FIXED = { vadStopMs: 300, sttFinalMs: 50, llmFirstTokenMs: 100, ttsFirstByteMs: 80 };

// ── client role: N concurrent callers, in a child process ───────────────────────────────────────────────
interface ClientJob {
  origin: string;
  key: string;
  callIds: string[];
  seconds: number;
}
interface ClientResult {
  jitter: number[];
  late: number;
  frames: number;
  opened: number;
  /** calls the server closed with another code than 1000 (1013: the media node refused it), by code */
  closedBadly: Record<number, number>;
}

async function runClients(job: ClientJob): Promise<ClientResult> {
  const jitter: number[] = [];
  let late = 0;
  let frames = 0;
  let opened = 0;
  const closedBadly: Record<number, number> = {};
  // 60 ms caller frames (the protocol accepts any size) keep the client process light enough to measure
  const silence = Buffer.alloc(1920);
  await Promise.all(
    job.callIds.map((callId) => {
      let first = 0;
      let prev = 0;
      let n = 0;
      // the caller streams (silent) audio in real time like a real client
      return wsCaller({
        origin: job.origin,
        key: job.key,
        callId,
        frameMs: 60,
        seconds: job.seconds,
        frame: () => silence,
        onOpen: () => opened++,
        onClose: (code) => countClose(closedBadly, code),
        onAudio: (now) => {
          if (n === 0) first = now;
          // frames 0..4 are the initial 100 ms lead burst; after that one frame per 20 ms is expected
          if (n >= 6) jitter.push(Math.abs(now - prev - 20));
          // playout deadline of frame n if the client starts playing the first frame on arrival
          if (now > first + n * 20 + 1) late++;
          prev = now;
          n++;
          frames++;
        },
      });
    }),
  );
  return { jitter, late, frames, opened, closedBadly };
}

// The server side runs with the media process's Node flags (a larger young generation), as production does: the
// bench re-executes itself with them (bench/_server.ts withMediaFlags).
if (ROLE === 'server') await (await import('./_server.ts')).withMediaFlags(fileURLToPath(import.meta.url));

if (ROLE === 'client') {
  // forked after the server raised its pacing thread: the callers are not the media process (core/priority.ts)
  (await import('../core/priority.ts')).resetHelperPriority();
  process.once('message', (job: ClientJob | SpeakingJob) => {
    const run = 'speech' in job ? runSpeakingClients(job) : runClients(job);
    void (run as Promise<unknown>).then((r) => {
      process.send!(r as object, () => process.exit(0));
    });
  });
} else if (ROLE === 'media') {
  await runMediaProcess();
} else if (process.env.MODE === 'vendors') {
  startNeighbour();
  await mainVendors();
} else {
  startNeighbour();
  await main();
}

/**
 * NEIGHBOUR=1: a CPU-bound neighbour process for the whole run — one `node` busy-looping at normal
 * priority, i.e. one core taken by something else, as on a shared host. Killed when the bench exits.
 */
function startNeighbour(): void {
  if (process.env.NEIGHBOUR !== '1') return;
  void import('node:child_process').then(({ spawn }) => {
    const n = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    process.on('exit', () => n.kill('SIGKILL'));
    process.stdout.write(`CPU neighbour: pid ${n.pid}, one busy-looping node process at normal priority for the whole run\n`);
  });
}

async function main(): Promise<void> {
  const { loadConfig } = await import('../core/config.ts');
  const { createDb } = await import('../core/db/pool.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { createApiKey, createOrganization } = await import('../core/orgs.ts');
  const { startScratchDatabase, freePort } = await import('../scripts/infra.ts');
  const { startCombined } = await import('../scripts/server.ts');
  const { fakeEngines } = await import('../test/fakes/engines.ts');
  const { agentConfig, insertPendingCall, getCallRow, TestCaller } = await import('../test/helpers/calls.ts');
  const { until } = await import('../test/helpers/wait.ts');
  const { sharedClock } = await import('../media/pipeline/clock.ts');

  const CALLS = Number(process.env.CALLS ?? 200);
  const TURNS = Number(process.env.TURNS ?? 30);
  const SECONDS = Number(process.env.SECONDS ?? 20);
  const scratch = await startScratchDatabase({ prefix: 'vas-bench-pipeline-' });
  const dir = scratch.dir;
  let exit = 0;
  try {
    const db = await createDb(scratch.url, { maximumPoolSize: 20 });
    const port = await freePort();
    // every call is measured: no refusals at the node's default capacity (25 per core) unless MEDIA_MAX_CALLS says so
    const config = loadConfig({ DATABASE_URL: scratch.url, DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'silent', SIGNING_SECRET: 'bench-signing-secret-0123456789', MEDIA_MAX_CALLS: process.env.MEDIA_MAX_CALLS ?? '10000' });
    const logger = createLogger({ level: 'silent' });
    const scripts = new Map<string, 'latency' | 'load'>();
    const combined = await startCombined(
      {
        config,
        db,
        logger,
        temporal: null,
        media: {
          engines: async ({ config: c }) => {
            const kind = scripts.get(c.name) ?? 'load';
            return fakeEngines(
              kind === 'latency'
                ? {
                    stt: { utterances: Array.from({ length: TURNS }, () => 'tell me something'), finalDelayMs: FIXED.sttFinalMs },
                    llm: Array.from({ length: TURNS + 1 }, () => ({ text: 'Okay. That is all.', firstTokenMs: FIXED.llmFirstTokenMs, tokenMs: 0 })),
                    tts: { firstByteMs: FIXED.ttsFirstByteMs, msPerChar: 15 },
                    vad: { startMs: 60, stopMs: FIXED.vadStopMs },
                  }
                : { tts: { firstByteMs: FIXED.ttsFirstByteMs, msPerChar: 60 } },
            );
          },
        },
      },
      port,
      '127.0.0.1',
    );
    const origin = `http://127.0.0.1:${port}`;
    const org = await createOrganization(db, { name: 'bench', balanceUsd: 1000 });
    const { key } = await createApiKey(db, org.id, 'bench');

    // ── (a) per-turn latency ─────────────────────────────────────────────────────────────────────────
    // baseline: a raw WebSocket echo round trip on this machine
    const echo = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    echo.on('connection', (ws) => ws.on('message', (d) => ws.send(d)));
    await new Promise((r) => echo.once('listening', r));
    const echoPort = (echo.address() as { port: number }).port;
    const ews = new WebSocket(`ws://127.0.0.1:${echoPort}`);
    await new Promise((r) => ews.once('open', r));
    const rtts: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      ews.send(Buffer.alloc(640));
      await new Promise((r) => ews.once('message', r));
      rtts.push(performance.now() - t0);
    }
    ews.close();
    echo.close();

    scripts.set('latency-agent', 'latency');
    const callId = await insertPendingCall(db, {
      orgId: org.id,
      config: agentConfig({ name: 'latency-agent', greeting: { firstMessages: ['Hi.'] }, userIdleTimeoutS: 25, noiseGate: { enabled: false } }),
    });
    const caller = TestCaller.connect(origin, callId, key);
    await caller.waitOpen();
    await caller.waitAgentQuiet(200);
    const clientMs: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      const framesBefore = caller.frameTimes.length;
      await caller.speak(400);
      const endOfSpeech = performance.now();
      const silence = caller.silence(1500);
      await until(() => caller.frameTimes.length > framesBefore, { what: 'reply audio', timeoutMs: 10_000 });
      const firstAudio = caller.frameTimes[framesBefore]!;
      clientMs.push(firstAudio - endOfSpeech);
      await silence;
      await caller.waitAgentQuiet(150);
    }
    caller.close();
    const row = await until(async () => {
      const r = await getCallRow(db, callId);
      return r.status === 'completed' ? r : null;
    }, { what: 'latency call to end', timeoutMs: 10_000 });
    // The VAD stop window is counted in 20 ms frames: the frame that completes it is judged on arrival, 20 ms
    // before its audio ends, so the window closes (stopMs − 20) ms after the end of speech in wall time.
    const fixed = FIXED.vadStopMs - 20 + FIXED.sttFinalMs + FIXED.llmFirstTokenMs + FIXED.ttsFirstByteMs;
    const serverAdded = clientMs.map((x) => x - fixed);
    const internal = (row.logs.latency as Array<{ overhead_ms: number; stt_ms: number }>).map((l) => l.overhead_ms);
    const sttMeasured = (row.logs.latency as Array<{ stt_ms: number }>).map((l) => l.stt_ms);
    log(`(a) per-turn latency, ${TURNS} turns, fixed fake latencies: VAD stop window ${FIXED.vadStopMs} (−20 ms, see code) + STT final ${FIXED.sttFinalMs} + LLM first token ${FIXED.llmFirstTokenMs} + TTS first byte ${FIXED.ttsFirstByteMs} = ${fixed} ms`);
    log(`    end of caller speech → first agent audio at the client: p50 ${f1(pct(clientMs, 50))} ms, p99 ${f1(pct(clientMs, 99))} ms`);
    log(`    server-added (client figure − fixed): p50 ${f1(pct(serverAdded, 50))} ms, p99 ${f1(pct(serverAdded, 99))} ms   (target p99 ≤ 10 ms)`);
    log(`    in-pipeline overhead (logs.latency total − stt − llm − tts): p50 ${f1(pct(internal, 50))} ms, p99 ${f1(pct(internal, 99))} ms`);
    log(`    in-pipeline VAD stop → STT final: p50 ${f1(pct(sttMeasured, 50))} ms (fake final delay ${FIXED.sttFinalMs})`);
    log(`    baseline: raw WebSocket echo round trip p50 ${f1(pct(rtts, 50))} ms, p99 ${f1(pct(rtts, 99))} ms`);

    // ── (b) N simultaneous calls ─────────────────────────────────────────────────────────────────────
    // enough speech for the whole window (+5 s) at the fake TTS's 60 ms per character
    const sentence = 'This is a long agent monologue used to keep audio flowing for the whole benchmark window. ';
    const long = sentence.repeat(Math.ceil(((SECONDS + 5) * 1000) / 60 / sentence.length));
    const mkCalls = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        ids.push(
          await insertPendingCall(db, {
            orgId: org.id,
            config: agentConfig({ name: `load-${i}`, greeting: { firstMessages: [long] }, noiseGate: { enabled: false }, userIdleTimeoutS: 25 }),
          }),
        );
      }
      return ids;
    };
    const runLoad = async (n: number) => {
      const ids = await mkCalls(n);
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      sharedClock.lateness.length = 0;
      sharedClock.recordLateness = true;
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 500);
      const { monitorEventLoopDelay } = await import('node:perf_hooks');
      const h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
      const prog = process.env.BENCH_DEBUG ? setInterval(() => log(`  t+${f1((performance.now() - t0) / 1000)}s active=${combined.media.activeCalls()} loop max=${f1(h.max / 1e6)}ms`), 1000) : null;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const r = await forkRole<ClientResult>(import.meta.url, 'client', { origin, key, callIds: ids, seconds: SECONDS } satisfies ClientJob).result;
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      clearInterval(sampler);
      if (prog) clearInterval(prog);
      h.disable();
      sharedClock.recordLateness = false;
      // steady state only: drop the first 3 s (connects, session set-up) and everything after the clients leave
      const ticks = sharedClock.lateness;
      const lateness = ticks.slice(Math.min(150, ticks.length), Math.max(150, Math.round((SECONDS - 0.5) * 50)));
      await until(async () => combined.media.activeCalls() === 0, { what: 'calls to end', timeoutMs: 30_000 });
      return { n, r, rssPerCallMb: (rssPeak - rssBefore) / n / 1024 / 1024, lateness, cpuPct: ((cpu.user + cpu.system) / 1000 / wall) * 100 };
    };
    const base = await runLoad(1);
    const load = await runLoad(CALLS);
    for (const x of [base, load]) {
      log(
        `(b) ${x.n} simultaneous call(s), ${SECONDS} s: ${x.r.opened} connected${refusals(x.r.closedBadly)}, ${x.r.frames} frames received; ` +
          `inter-arrival jitter p50 ${f1(pct(x.r.jitter, 50))} ms, p99 ${f1(pct(x.r.jitter, 99))} ms; frames past playout time ${x.r.late}; ` +
          `clock tick lateness p99 ${f1(pct(x.lateness, 99))} ms; server CPU ${f1(x.cpuPct)} % of one core; RSS +${f1(x.rssPerCallMb)} MB per call`,
      );
    }
    const ok = pct(serverAdded, 99) <= 10 && pct(load.r.jitter, 99) <= 20;
    log(`ratio vs baseline: (a) server-added p99 / echo RTT p99 = ${f1(pct(serverAdded, 99) / pct(rtts, 99))}; (b) jitter p99 at ${CALLS} calls / 1 call = ${f1(pct(load.r.jitter, 99) / Math.max(0.1, pct(base.r.jitter, 99)))}`);
    log(`machine: ${os.cpus().length} cores, load average during the run ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)`);
    log(ok ? 'targets met' : 'targets NOT met');
    await combined.close();
    await db.end();
  } catch (err) {
    exit = 1;
    log(`bench failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await scratch.stop();
  }
  process.exit(exit);
}

// ── MODE=vendors ────────────────────────────────────────────────────────────────────────────────────────

interface SpeakingJob {
  /** one origin per media process; caller i connects to origins[i % origins.length] */
  origins: string[];
  key: string;
  callIds: string[];
  seconds: number;
  /** the caller's sentence, 16 kHz s16le, base64 */
  speech: string;
}
interface SpeakingResult extends SpeakingStats {
  opened: number;
  closedBadly: Record<number, number>;
  /** the client process's own event-loop delay p99 (ms): its timestamps are no better than this */
  loopP99: number;
}

/** Callers that speak a sentence, wait for the reply to end, and speak again (bench/_callers.ts SpeakingCaller);
 * frames of 60 ms in real time. */
async function runSpeakingClients(job: SpeakingJob): Promise<SpeakingResult> {
  const speech = sentenceFromBase64(job.speech);
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const FRAME = 960; // 60 ms
  const stats = speakingStats();
  let opened = 0;
  const closedBadly: Record<number, number> = {};
  await Promise.all(
    job.callIds.map((callId, idx) => {
      const caller = new SpeakingCaller(stats, { frameSamples: FRAME, speechSamples: speech.length });
      return wsCaller({
        origin: job.origins[idx % job.origins.length]!,
        key: job.key,
        callId,
        frameMs: 60,
        seconds: job.seconds,
        onClose: (code) => countClose(closedBadly, code),
        onOpen: (start) => {
          opened++;
          caller.open(start, idx);
        },
        frame: (now) => {
          const k = caller.frame(now);
          return k < 0 ? Buffer.alloc(FRAME * 2) : Buffer.from(speechFrame(speech, k, FRAME).buffer);
        },
        onAudio: (now) => caller.onAudio(now),
      });
    }),
  );
  loop.disable();
  return { ...stats, opened, closedBadly, loopP99: loop.percentile(99) / 1e6 };
}

/** A call the server closed (any code but 1000), counted by close code. */
function countClose(closedBadly: Record<number, number>, code: number): void {
  if (code !== 1000) closedBadly[code] = (closedBadly[code] ?? 0) + 1;
}

/** ", N closed by the server (codes …)" when calls did not run to the caller's hang-up (1013: refused at capacity) */
function refusals(closedBadly: Record<number, number>): string {
  const n = Object.values(closedBadly).reduce((a, b) => a + b, 0);
  return n ? ` (${n} of them closed by the server: ${Object.entries(closedBadly).map(([c, k]) => `${k}× ${c}`).join(', ')})` : '';
}

/** voice_pacer_underruns_total of this process */
async function underrunCount(): Promise<number> {
  const { pacerUnderrunsTotal } = await import('../media/pipeline/metrics.ts');
  return (await pacerUnderrunsTotal.get()).values[0]?.value ?? 0;
}

/**
 * How many of the client's ≥ 15 ms jitter samples arrived within CAUSE_WINDOW_MS after a server frame-clock tick that
 * ran ≥ CAUSE_LATE_MS late (the late tick's frames, or the on-time frame right after them). Both sides stamp with
 * performance.timeOrigin + now (one machine, one clock).
 */
function tailCause(tailAt: Array<[number, number]>, tickAt: number[], lateness: number[]): { afterLateTick: number } {
  const late = tickAt.filter((_, i) => lateness[i]! >= CAUSE_LATE_MS).sort((a, b) => a - b);
  let afterLateTick = 0;
  for (const [t] of tailAt) {
    // the last late tick at or before t (+1 ms of clock slack)
    let lo = 0;
    let hi = late.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (late[mid]! <= t + 1) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && t + 1 - late[lo - 1]! <= CAUSE_WINDOW_MS + 1) afterLateTick++;
  }
  return { afterLateTick };
}

// ── media role (MEDIA_PROCESSES=K, MODE=vendors): another api + media process on the same database ─────────────
// One media process per core: callers are spread over the K processes by index (caller i → process i % K), as a
// proxy spreading connections would. Each extra process reports its own frame-clock lateness and CPU.
interface MediaJob {
  databaseUrl: string;
  dataDir: string;
  env: Record<string, string>;
}
type MediaMsg = { kind: 'start' } | { kind: 'stop' } | { kind: 'idle' };
interface MediaFigures {
  cpuMs: number;
  lateness: number[];
  /** when each of those ticks ran (FrameClock.latenessAt) */
  latenessAt: number[];
  loopP99: number;
}

async function runMediaProcess(): Promise<void> {
  process.on('disconnect', () => process.exit(0));
  const job = await new Promise<MediaJob>((r) => process.once('message', (m) => r(m as MediaJob)));
  const { loadConfig } = await import('../core/config.ts');
  const { createDb } = await import('../core/db/pool.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { freePort } = await import('../scripts/infra.ts');
  const { startCombined } = await import('../scripts/server.ts');
  const { sharedClock } = await import('../media/pipeline/clock.ts');
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const db = await createDb(job.databaseUrl, { maximumPoolSize: 20 });
  const port = await freePort();
  const config = loadConfig({ ...job.env, DATABASE_URL: job.databaseUrl, DATA_DIR: job.dataDir, PORT: String(port) });
  const { applyMediaPriority, resetHelperPriority } = await import('../core/priority.ts');
  resetHelperPriority(); // forked from a raised thread: start where the run started, then raise as a media process does
  applyMediaPriority(config, { info: () => {}, warn: () => {} });
  const combined = await startCombined({ config, db, logger: createLogger({ level: 'silent' }), temporal: null }, port, '127.0.0.1');
  let cpu0 = process.cpuUsage();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  process.on('message', (m: MediaMsg) => {
    if (m.kind === 'start') {
      sharedClock.lateness.length = 0;
      sharedClock.latenessAt.length = 0;
      sharedClock.recordLateness = true;
      loop.reset();
      loop.enable();
      cpu0 = process.cpuUsage();
      process.send!({ kind: 'started' });
    } else if (m.kind === 'stop') {
      const c = process.cpuUsage(cpu0);
      sharedClock.recordLateness = false;
      loop.disable();
      process.send!({ kind: 'stopped', figures: { cpuMs: (c.user + c.system) / 1000, lateness: [...sharedClock.lateness], latenessAt: [...sharedClock.latenessAt], loopP99: loop.percentile(99) / 1e6 } satisfies MediaFigures });
    } else if (m.kind === 'idle') {
      const wait = () => (combined.media.activeCalls() === 0 ? process.send!({ kind: 'idle' }) : setTimeout(wait, 200));
      wait();
    }
  });
  process.send!({ kind: 'ready', origin: `http://127.0.0.1:${port}` });
}

/** Another media process (role 'media'), with the media process's Node flags as this one. */
async function forkMedia(job: MediaJob): Promise<{ origin: string; ask(m: MediaMsg): Promise<any>; kill(): void }> {
  const { fork } = await import('node:child_process');
  const { MEDIA_NODE_FLAGS } = await import('../scripts/infra.ts');
  const child = fork(fileURLToPath(import.meta.url), ['media'], { execArgv: [...MEDIA_NODE_FLAGS, '--import', 'tsx'], stdio: 'inherit' });
  const next = () =>
    new Promise<any>((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`media process exited (${code})`)));
    });
  const ready = next();
  child.send(job);
  const { origin } = (await ready) as { origin: string };
  return {
    origin,
    ask: (m) => {
      const r = next();
      child.send(m);
      return r;
    },
    kill: () => child.kill(),
  };
}

async function mainVendors(): Promise<void> {
  const { loadConfig } = await import('../core/config.ts');
  const { createDb } = await import('../core/db/pool.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { createApiKey, createOrganization } = await import('../core/orgs.ts');
  const { startScratchDatabase, freePort } = await import('../scripts/infra.ts');
  const { startCombined } = await import('../scripts/server.ts');
  const { agentConfig, insertPendingCall, getCallRow, TestCaller } = await import('../test/helpers/calls.ts');
  const { until } = await import('../test/helpers/wait.ts');
  const { sharedClock } = await import('../media/pipeline/clock.ts');

  const CALLS = Number(process.env.CALLS ?? 200);
  const TURNS = Number(process.env.TURNS ?? 20);
  const SECONDS = Number(process.env.SECONDS ?? 20);
  const STT = benchStt();
  const fakes = startVendorFakes();
  const urls = await fakes.urls;
  const scratch = await startScratchDatabase({ prefix: 'vas-bench-pipeline-' });
  let exit = 0;
  try {
    const db = await createDb(scratch.url, { maximumPoolSize: 20 });
    const port = await freePort();
    const env = {
      LOG_LEVEL: 'silent',
      SIGNING_SECRET: 'bench-signing-secret-0123456789',
      // every call is measured: no refusals at the node's default capacity (25 per core) unless MEDIA_MAX_CALLS says so
      MEDIA_MAX_CALLS: process.env.MEDIA_MAX_CALLS ?? '10000',
      // the product's default (raised 10 levels where permitted) unless MEDIA_PRIORITY_BOOST says otherwise
      ...(process.env.MEDIA_PRIORITY_BOOST !== undefined ? { MEDIA_PRIORITY_BOOST: process.env.MEDIA_PRIORITY_BOOST } : {}),
      ...(process.env.MEDIA_PACING_CPU ? { MEDIA_PACING_CPU: process.env.MEDIA_PACING_CPU } : {}),
      ...vendorConfig(urls),
    };
    const config = loadConfig({ ...env, DATABASE_URL: scratch.url, DATA_DIR: scratch.dir, PORT: String(port) });
    // as the media process's entry does (media/main.ts): its pacing thread raised (core/priority.ts; by default 10
    // levels) runs above the callers, the fakes and the neighbour
    const { applyMediaPriority } = await import('../core/priority.ts');
    const prio = applyMediaPriority(config, { info: () => {}, warn: () => {} });
    log(`media pacing thread: ${prio.applied ? `nice ${prio.nice} (MEDIA_PRIORITY_BOOST ${config.MEDIA_PRIORITY_BOOST ?? 'unset: the default'}: the other processes of the run stay at their nice)` : `not raised (${prio.reason})`}`);
    for (const line of await (await import('./_server.ts')).applySchedulingExperiments(config)) log(line);
    // no engine override: createEngines from each call's config + Silero VAD, as in production
    const combined = await startCombined({ config, db, logger: createLogger({ level: 'silent' }), temporal: null }, port, '127.0.0.1');
    const origin = `http://127.0.0.1:${port}`;
    // MEDIA_PROCESSES=K: K − 1 more media processes on the same database (one per core); callers spread over all K
    const extraMedia = await Promise.all(
      Array.from({ length: Math.max(0, Number(process.env.MEDIA_PROCESSES ?? 1) - 1) }, () => forkMedia({ databaseUrl: scratch.url, dataDir: scratch.dir, env })),
    );
    const org = await createOrganization(db, { name: 'bench', balanceUsd: 1000 });
    const { key } = await createApiKey(db, org.id, 'bench');
    const agent = (name: string) => vendorAgent(agentConfig, name, STT);
    const sentence = await callerSentence();

    // ── (a) per-turn latency, one caller ─────────────────────────────────────────────────────────────
    const callId = await insertPendingCall(db, { orgId: org.id, config: agent('latency') });
    const caller = TestCaller.connect(origin, callId, key);
    await caller.waitOpen();
    // A caller's line carries silence between sentences, not nothing: it streams until the agent has been quiet for
    // 300 ms. (A pause in the caller's audio makes the STT adapter send 250 ms of keepalive silence, which shifts the
    // fake's 20 ms grid by half a frame against the caller's frames and its end of turn by a frame either way.)
    const quietLine = async () => {
      const t0 = performance.now();
      while (!(caller.frameTimes.length && performance.now() - caller.frameTimes[caller.frameTimes.length - 1]! > 300)) {
        if (performance.now() - t0 > 20_000) throw new Error('the agent did not stop speaking');
        await caller.silence(100);
      }
    };
    await quietLine();
    const clientMs: number[] = [];
    for (let i = 0; i < TURNS; i++) {
      const framesBefore = caller.frameTimes.length;
      const start = performance.now();
      for (let off = 0, k = 0; off < sentence.length; off += 320, k++) {
        const f = new Int16Array(320);
        f.set(sentence.subarray(off, off + 320));
        caller.ws.send(Buffer.from(f.buffer));
        const d = start + (k + 1) * 20 - performance.now();
        if (d > 0) await new Promise((r) => setTimeout(r, d));
      }
      const endOfSpeech = performance.now();
      const quiet = caller.silence(2000);
      await until(() => caller.frameTimes.length > framesBefore, { what: 'reply audio', timeoutMs: 15_000 });
      clientMs.push(caller.frameTimes[framesBefore]! - endOfSpeech);
      await quiet;
      await quietLine();
    }
    caller.close();
    const row = await until(async () => {
      const r = await getCallRow(db, callId);
      return r.status === 'completed' ? r : null;
    }, { what: 'latency call to end', timeoutMs: 15_000 });
    const fixed = FIXED_TURN_MS;
    const serverAdded = clientMs.map((x) => x - fixed);
    // with the vendor's own end of turn the turn starts at that event (stt_ms is null) and the LLM request was
    // usually sent earlier on the eager end of turn, so the in-pipeline figure is end of turn → first agent frame
    const internal = ((row.logs?.latency ?? []) as Array<{ total_ms: number | null }>).map((l) => l.total_ms).filter((x): x is number => x !== null);
    log(`vendor adapters against local fakes: STT ${STT} (real adapter, fake end of turn after ${STT_END_MS} ms of silence), LLM openai, TTS elevenlabs; Silero VAD on`);
    log(`(a) per-turn latency, ${TURNS} turns: end of caller speech → first agent audio at the client p50 ${f1(pct(clientMs, 50))} ms, p99 ${f1(pct(clientMs, 99))} ms`);
    log(`    server-added (client figure − ${fixed} ms fixed STT end-of-turn window): p50 ${f1(pct(serverAdded, 50))} ms, p99 ${f1(pct(serverAdded, 99))} ms; per turn: ${serverAdded.map((x) => x.toFixed(0)).join(' ')}`);
    log(`    in-pipeline: vendor end of turn → first agent frame sent (logs.latency total_ms, includes the loopback LLM/TTS fakes): p50 ${f1(pct(internal, 50))} ms, p99 ${f1(pct(internal, 99))} ms`);

    // ── (b) N simultaneous speaking callers ──────────────────────────────────────────────────────────
    const runLoad = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push(await insertPendingCall(db, { orgId: org.id, config: agent(`load-${i}`) }));
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 500);
      const { monitorEventLoopDelay } = await import('node:perf_hooks');
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      sharedClock.lateness.length = 0;
      sharedClock.latenessAt.length = 0;
      sharedClock.recordLateness = true;
      const underruns0 = await underrunCount();
      const gcs: Array<{ start: number; end: number; kind: number }> = [];
      const { PerformanceObserver } = await import('node:perf_hooks');
      const gcObs = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) gcs.push({ start: performance.timeOrigin + e.startTime, end: performance.timeOrigin + e.startTime + e.duration, kind: ((e as unknown as { detail: { kind: number } }).detail).kind });
      });
      gcObs.observe({ entryTypes: ['gc'] });
      if (n > 1) await Promise.all(extraMedia.map((m) => m.ask({ kind: 'start' })));
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const job: SpeakingJob = { origins: [origin, ...extraMedia.map((m) => m.origin)], key, callIds: ids, seconds: SECONDS, speech: sentenceToBase64(sentence) };
      const r = await forkRole<SpeakingResult>(import.meta.url, 'client', job).result;
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      clearInterval(sampler);
      loop.disable();
      sharedClock.recordLateness = false;
      const others = n > 1 ? await Promise.all(extraMedia.map(async (m) => ((await m.ask({ kind: 'stop' })) as { figures: MediaFigures }).figures)) : [];
      const lateness = [...sharedClock.lateness, ...others.flatMap((o) => o.lateness)];
      const underruns = (await underrunCount()) - underruns0;
      // every media process's ticks: a caller's late frame may come from any of them
      const cause = tailCause(r.tailAt, [...sharedClock.latenessAt, ...others.flatMap((o) => o.latenessAt)], lateness);
      gcObs.disconnect();
      // ticks ≥ 15 ms late whose wait overlapped a garbage collection (minor: scavenge; major: mark-compact)
      const gcLate = { minor: 0, major: 0, other: 0, gcMs: gcs.reduce((a, g) => a + g.end - g.start, 0), gcMax: Math.max(0, ...gcs.map((g) => g.end - g.start)), n: gcs.length };
      if (process.env.DUMP_LATE) {
        const { writeFileSync } = await import('node:fs');
        writeFileSync(process.env.DUMP_LATE, JSON.stringify({ at: sharedClock.latenessAt, lateness: sharedClock.lateness, gcs, tail: r.tailAt, sync: [performance.timeOrigin + performance.now(), Number(process.hrtime.bigint() / 1000n)] }));
      }
      sharedClock.lateness.forEach((l, i) => {
        if (l < 15) return;
        const fired = sharedClock.latenessAt[i]!;
        const g = gcs.find((x) => x.end > fired - l && x.start < fired);
        if (!g) gcLate.other++;
        else if (g.kind === 1) gcLate.minor++;
        else gcLate.major++;
      });
      const tickP99 = pct(lateness, 99);
      const ticksLate = { n: lateness.length, over15: lateness.filter((l) => l >= 15).length };
      await until(async () => combined.media.activeCalls() === 0, { what: 'calls to end', timeoutMs: 60_000 });
      await Promise.all(extraMedia.map((m) => m.ask({ kind: 'idle' })));
      if (others.length) {
        const each = [(cpu.user + cpu.system) / 1000, ...others.map((o) => o.cpuMs)].map((ms) => f1((ms / wall) * 100));
        log(`    ${extraMedia.length + 1} media processes: CPU ${each.join(' / ')} % of one core; event-loop delay p99 ${[loop.percentile(99) / 1e6, ...others.map((o) => o.loopP99)].map(f1).join(' / ')} ms`);
      }
      const cpuPct = (((cpu.user + cpu.system) / 1000 + others.reduce((a, o) => a + o.cpuMs, 0)) / wall) * 100;
      return { n, r, cpuPct, cpuPerCall: cpuPct / n, rssPerCallMb: (rssPeak - rssBefore) / n / 1024 / 1024, tickP99, ticksLate, loopP99: loop.percentile(99) / 1e6, underruns, cause, gcLate };
    };
    const base = await runLoad(1);
    const stopSampling = await startAllocationSampling();
    const load = await runLoad(CALLS);
    await stopSampling();
    for (const x of [base, load]) {
      log(
        `(b) ${x.n} speaking caller(s), ${SECONDS} s: ${x.r.opened} connected${refusals(x.r.closedBadly)}, ${x.r.spoken} sentences spoken, ${x.r.turns} replies, ${x.r.frames} agent frames; ` +
          `reply pacing jitter p50 ${f1(pct(x.r.jitter, 50))} ms, p99 ${f1(pct(x.r.jitter, 99))} ms (p95 ${f1(pct(x.r.jitter, 95))}, p99.9 ${f1(pct(x.r.jitter, 99.9))}; of ${x.r.jitter.length} samples ${x.r.jitter.filter((j) => j >= 15).length} ≥ 15 ms: ${x.r.tail.burst} a frame < 5 ms after the previous, ${x.r.tail.gap} > 35 ms after); frames later than playout by > ${LATE_MS} ms: ${x.r.late} of ${x.r.frames}; end of speech → first reply audio p50 ${f1(pct(x.r.replyMs, 50))} ms, p99 ${f1(pct(x.r.replyMs, 99))} ms; ` +
          `server CPU ${f1(x.cpuPct)} % of one core (${f1(x.cpuPerCall)} % per call); RSS +${f1(x.rssPerCallMb)} MB per call; ` +
          `server frame-clock tick lateness p99 ${f1(x.tickP99)} ms (${x.ticksLate.over15} of ${x.ticksLate.n} ticks ≥ 15 ms late), event-loop delay p99 ${f1(x.loopP99)} ms; client process event-loop delay p99 ${f1(x.r.loopP99)} ms`,
      );
      log(
        `    the ≥ 15 ms samples by cause: ${x.cause.afterLateTick} within ${CAUSE_WINDOW_MS} ms after a server tick ≥ ${CAUSE_LATE_MS} ms late, ${x.r.tailAt.length - x.cause.afterLateTick} not; ` +
          `pacer underruns (an utterance's audio ran out mid-speech, voice_pacer_underruns_total): ${x.underruns} in ${x.r.turns} replies; ` +
          `ticks ≥ 15 ms late during a GC: ${x.gcLate.minor} scavenge, ${x.gcLate.major} other GC, ${x.gcLate.other} none (${x.gcLate.n} GCs, ${f1(x.gcLate.gcMs)} ms in all, longest ${f1(x.gcLate.gcMax)} ms)`,
      );
    }
    log(`ratio vs 1 call: jitter p99 ×${f1(pct(load.r.jitter, 99) / Math.max(0.1, pct(base.r.jitter, 99)))}, reply p50 ×${f1(pct(load.r.replyMs, 50) / Math.max(0.1, pct(base.r.replyMs, 50)))}`);
    log(`machine: ${os.cpus().length} cores, load average during the run ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)`);
    for (const m of extraMedia) m.kill();
    await combined.close();
    await db.end();
  } catch (err) {
    exit = 1;
    log(`bench failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    fakes.kill();
    await scratch.stop();
  }
  process.exit(exit);
}

/**
 * ALLOC_PROFILE=<file>: V8's sampling heap profiler over the N-call run, counting objects the garbage collector
 * already freed too (includeObjectsCollectedByMajorGC/MinorGC), i.e. where the main thread's allocation comes from
 * (what drives scavenges). Writes a .heapprofile (Chrome DevTools) and prints the top allocating functions.
 */
async function startAllocationSampling(): Promise<() => Promise<void>> {
  const file = process.env.ALLOC_PROFILE;
  if (!file) return async () => {};
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const s = new Session();
  s.connect();
  await s.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return async () => {
    const { profile } = (await s.post('HeapProfiler.stopSampling')) as { profile: { head: AllocNode } };
    writeFileSync(file, JSON.stringify(profile));
    const self = new Map<string, number>();
    let total = 0;
    const walk = (n: AllocNode) => {
      const size = n.selfSize;
      total += size;
      const cf = n.callFrame;
      const key = `${cf.functionName || '(anon)'} ${cf.url.replace(/^.*\/(node_modules|work\/main)\//, '')}:${cf.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + size);
      for (const c of n.children) walk(c);
    };
    walk(profile.head);
    log(`allocation sampling over the ${'N'}-call run: ${f1(total / 1024 / 1024)} MB sampled; top allocating functions (self):`);
    for (const [k, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40)) log(`  ${f1((v / total) * 100)} %  ${k}`);
    s.disconnect();
  };
}
interface AllocNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocNode[];
}
