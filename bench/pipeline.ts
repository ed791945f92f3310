// bench/pipeline: the live voice pipeline over real WebSockets with scripted fake engines of fixed latency.
//  (a) server-added latency per turn: caller's last speech frame sent → first agent audio frame received, minus the
//      fixed parts that are not ours (VAD stop window, fake STT final delay, fake LLM first token, fake TTS first
//      byte). Also the in-pipeline figure from calls.logs.latency (total − stt − llm − tts). Target p99 ≤ 10 ms.
//  (b) N simultaneous calls (default 200), each streaming caller audio in and agent audio out: output pacing
//      jitter (inter-arrival |Δ − 20 ms| at the clients, p99; and frames that missed their playout time), the
//      shared frame clock's tick lateness, RSS per call. Target jitter p99 ≤ 20 ms. Clients run in a child
//      process so the server's figures are its own.
// Baseline in the same run: (a) a raw WebSocket echo round trip on the same machine (the floor for (a));
// (b) the same clients with 1 call.
//
//   npm run bench -- pipeline          CALLS=200 TURNS=30 node --import tsx bench/pipeline.ts
// (runs the server side with --max-semi-space-size=32, see V8_FLAG)
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import WebSocket, { WebSocketServer } from 'ws';
import { pct } from './_stats.ts';

const ROLE = process.argv[2] ?? 'server';
const log = (m: string) => process.stdout.write(`${m}\n`);

const FIXED = { vadStopMs: 300, sttFinalMs: 50, llmFirstTokenMs: 100, ttsFirstByteMs: 80 };

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

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
}

async function runClients(job: ClientJob): Promise<ClientResult> {
  const jitter: number[] = [];
  let late = 0;
  let frames = 0;
  let opened = 0;
  await Promise.all(
    job.callIds.map(
      (id) =>
        new Promise<void>((resolve) => {
          const ws = new WebSocket(`${job.origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${id}?api_key=${job.key}`);
          let first = 0;
          let prev = 0;
          let n = 0;
          let timer: NodeJS.Timeout | null = null;
          // 60 ms caller frames (the protocol accepts any size) keep the client process light enough to measure
          const silence = Buffer.alloc(1920);
          ws.on('open', () => {
            opened++;
            // the caller streams (silent) audio in real time like a real client
            const start = performance.now();
            let k = 0;
            const send = () => {
              if (ws.readyState !== ws.OPEN) return;
              ws.send(silence);
              k++;
              timer = setTimeout(send, Math.max(0, start + k * 60 - performance.now()));
            };
            send();
            setTimeout(() => ws.close(1000), job.seconds * 1000);
          });
          ws.on('message', (_d, binary) => {
            if (!binary) return;
            const now = performance.now();
            if (n === 0) first = now;
            // frames 0..4 are the initial 100 ms lead burst; after that one frame per 20 ms is expected
            if (n >= 6) jitter.push(Math.abs(now - prev - 20));
            // playout deadline of frame n if the client starts playing the first frame on arrival
            if (now > first + n * 20 + 1) late++;
            prev = now;
            n++;
            frames++;
          });
          ws.on('close', () => {
            if (timer) clearTimeout(timer);
            resolve();
          });
          ws.on('error', () => resolve());
        }),
    ),
  );
  return { jitter, late, frames, opened };
}

// The media process is allocation-heavy (20 ms frames): a larger young generation keeps GC pauses off the pacing
// clock. Operators should run media with the same flag; the bench re-executes itself with it.
const V8_FLAG = '--max-semi-space-size=32';

if (ROLE === 'server' && !process.execArgv.includes(V8_FLAG) && !(process.env.NODE_OPTIONS ?? '').includes('max-semi-space-size')) {
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [V8_FLAG, ...process.execArgv, fileURLToPath(import.meta.url)], { stdio: 'inherit', env: process.env });
  process.exit(r.status ?? 1);
} else if (ROLE === 'client') {
  process.once('message', (job: ClientJob) => {
    void runClients(job).then((r) => {
      process.send!(r, () => process.exit(0));
    });
  });
} else {
  await main();
}

function clientProcess(job: ClientJob): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['client'], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    child.once('message', (r) => resolve(r as ClientResult));
    child.once('error', reject);
    child.send(job);
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
  const { agentConfig, insertPendingCall, getCallRow, TestCaller, until } = await import('../test/helpers/calls.ts');
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
    const config = loadConfig({ DATABASE_URL: scratch.url, DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'silent', SIGNING_SECRET: 'bench-signing-secret-0123456789' });
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
      await until(() => caller.frameTimes.length > framesBefore, 10_000, 'reply audio');
      const firstAudio = caller.frameTimes[framesBefore]!;
      clientMs.push(firstAudio - endOfSpeech);
      await silence;
      await caller.waitAgentQuiet(150);
    }
    caller.close();
    const row = await until(async () => {
      const r = await getCallRow(db, callId);
      return r.status === 'completed' ? r : null;
    }, 10_000, 'latency call to end');
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
      const r = await clientProcess({ origin, key, callIds: ids, seconds: SECONDS });
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      clearInterval(sampler);
      if (prog) clearInterval(prog);
      h.disable();
      sharedClock.recordLateness = false;
      // steady state only: drop the first 3 s (connects, session set-up) and everything after the clients leave
      const ticks = sharedClock.lateness;
      const lateness = ticks.slice(Math.min(150, ticks.length), Math.max(150, Math.round((SECONDS - 0.5) * 50)));
      await until(async () => combined.media.activeCalls() === 0, 30_000, 'calls to end');
      return { n, r, rssPerCallMb: (rssPeak - rssBefore) / n / 1024 / 1024, lateness, cpuPct: ((cpu.user + cpu.system) / 1000 / wall) * 100 };
    };
    const base = await runLoad(1);
    const load = await runLoad(CALLS);
    for (const x of [base, load]) {
      log(
        `(b) ${x.n} simultaneous call(s), ${SECONDS} s: ${x.r.opened} connected, ${x.r.frames} frames received; ` +
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
