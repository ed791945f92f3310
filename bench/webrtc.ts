// bench/webrtc: N simultaneous WebRTC calls against the same N WebSocket calls, in one run, on one server.
// Each call plays a long agent monologue (scripted fake engines) while the caller streams silence in real time:
// WebSocket callers send s16le PCM, WebRTC callers (node-datachannel) send 20 ms Opus RTP. Figures per transport:
//   - server CPU per call (% of one core, process.cpuUsage of the server process, all its threads, over the window)
//   - output pacing jitter at the clients: inter-arrival |Δ − 20 ms| of agent audio frames/packets, p50/p99
//   - frames received per call per second (50 expected)
// Run at a small N (CALLS_SMALL, default 5) and the default N (CALLS, default 40; 150 is issue 24's target). Clients
// run in a child process, so the server's CPU is its own; it includes the codec worker processes' CPU
// (media/webrtc/codec-pool.ts, read from /proc), reported separately too. MEDIA_MAX_CALLS is raised so admission
// never refuses a bench call. The codecs run inline (the default); WEBRTC_CODEC_THREADS=2 runs them in the codec pool. MIXED=N adds a run
// of N WebSocket + N WebRTC calls at once (no carrier streams yet).
//
//   npm run bench -- webrtc        CALLS=40 CALLS_SMALL=5 SECONDS=15 node --import tsx bench/webrtc.ts
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { f1, f2, pct } from './_stats.ts';
import { forkRole, wsCaller } from './_callers.ts';

const ROLE = process.argv[2] ?? 'server';
const log = (m: string) => process.stdout.write(`${m}\n`);

type Kind = 'websocket' | 'webrtc';
interface ClientJob {
  kind: Kind;
  origin: string;
  key: string;
  callIds: string[];
  seconds: number;
}
interface ClientResult {
  jitter: number[];
  frames: number;
  connected: number;
  windowMs: number;
}

/** Inter-arrival jitter of one stream: |Δ − 20 ms| after the first 10 frames (connection set-up settles). */
function jitterOf(times: number[], out: number[]): void {
  for (let i = 11; i < times.length; i++) out.push(Math.abs(times[i]! - times[i - 1]! - 20));
}

async function runWsClients(job: ClientJob): Promise<ClientResult> {
  const jitter: number[] = [];
  let frames = 0;
  let connected = 0;
  const silence = Buffer.alloc(640); // 20 ms at 16 kHz
  const t0 = performance.now();
  await Promise.all(job.callIds.map((callId) => {
    const times: number[] = [];
    return wsCaller({
      origin: job.origin,
      key: job.key,
      callId,
      frameMs: 20,
      seconds: job.seconds,
      frame: () => silence,
      onOpen: () => connected++,
      onAudio: (now) => times.push(now),
      onClose: () => {
        frames += times.length;
        jitterOf(times, jitter);
      },
    });
  }));
  return { jitter, frames, connected, windowMs: performance.now() - t0 };
}

async function runRtcClients(job: ClientJob): Promise<ClientResult> {
  const { WebRtcCaller, until } = await import('../test/webrtc/peer.ts');
  const { OpusEncoder48, FRAME_SAMPLES } = await import('../media/webrtc/opus.ts');
  const nodeDataChannel = (await import('node-datachannel')).default;
  const silence = new OpusEncoder48().encode(new Int16Array(FRAME_SAMPLES));
  const jitter: number[] = [];
  let frames = 0;
  const t0 = performance.now();
  const failures: string[] = [];
  const settled = await Promise.all(job.callIds.map(async (id, index) => {
    const c = new WebRtcCaller(`bench-${id}`);
    c.decode = false;
    c.arrivals = [];
    try {
      const res = await fetch(`${job.origin}/api/v1/webrtc/offer/${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': job.key },
        body: JSON.stringify({ sdp: await c.offer({ trickle: true }), type: 'offer' }),
      });
      if (!res.ok) throw new Error(`offer ${res.status} ${await res.text()}`);
      c.accept(((await res.json()) as { sdp: string }).sdp);
      // like the call page: the caller's candidates follow the answer by PATCH
      await c.trickleAfterAnswer(async (candidates) => {
        const r = await fetch(`${job.origin}/api/v1/webrtc/offer/${id}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json', 'x-api-key': job.key },
          body: JSON.stringify({ candidate: candidates }),
        });
        if (!r.ok) throw new Error(`PATCH ${r.status} ${await r.text()}`);
      });
      await until(() => c.state === 'connected', 20_000, 'peer connected');
      return c;
    } catch (err) {
      // counted and reported, not hidden: "connected" below is below N
      failures.push(`${(err as Error).message} (caller #${index}, peer ${c.state}, ice ${c.pc.iceState()})`);
      c.close();
      return null;
    }
  }));
  const callers = settled.filter((c) => c !== null);
  if (failures.length) process.stderr.write(`webrtc client: ${failures.length} of ${job.callIds.length} calls failed to connect: ${[...new Set(failures)].join('; ')}\n`);
  // one 20 ms clock sends every caller's silence packet
  const start = performance.now();
  let k = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      for (const c of callers) c.sendPacket(silence);
      k++;
      if (performance.now() - start >= job.seconds * 1000) return resolve();
      setTimeout(tick, Math.max(0, start + k * 20 - performance.now()));
    };
    tick();
  });
  for (const c of callers) {
    c.hangup();
    frames += c.arrivals!.length;
    jitterOf(c.arrivals!, jitter);
  }
  await new Promise((r) => setTimeout(r, 300));
  for (const c of callers) c.close();
  await new Promise((r) => setTimeout(r, 300));
  nodeDataChannel.cleanup();
  return { jitter, frames, connected: callers.length, windowMs: performance.now() - t0 };
}

if (ROLE === 'client') {
  process.once('message', (job: ClientJob) => {
    void (job.kind === 'webrtc' ? runRtcClients(job) : runWsClients(job)).then(
      (r) => process.send!(r, () => process.exit(0)),
      (err: unknown) => {
        process.stderr.write(`client failed: ${(err as Error).stack ?? String(err)}\n`);
        process.exit(1);
      },
    );
  });
} else {
  await main();
}

/** CPU time (ms) of this process's codec worker processes (children running codec-thread.ts), from /proc. */
function codecCpuMs(): number {
  let ms = 0;
  let pids: string[] = [];
  try {
    pids = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch { /* not Linux */ }
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('codec-thread')) continue;
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ms += (Number(f[11]) + Number(f[12])) * 10;
    } catch { /* gone */ }
  }
  return ms;
}

async function main(): Promise<void> {
  const { createDb } = await import('../core/db/pool.ts');
  const { createApiKey, createOrganization, setOrganizationLimits } = await import('../core/orgs.ts');
  const { startScratchDatabase, freePort } = await import('../scripts/infra.ts');
  const { startCombined } = await import('../scripts/server.ts');
  const { loadConfig } = await import('../core/config.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { fakeEngines } = await import('../test/fakes/engines.ts');
  const { agentConfig, insertPendingCall, until } = await import('../test/helpers/calls.ts');

  const CALLS = Number(process.env.CALLS ?? 40);
  const SMALL = Number(process.env.CALLS_SMALL ?? 5);
  const SECONDS = Number(process.env.SECONDS ?? 15);
  const scratch = await startScratchDatabase({ prefix: 'vas-bench-webrtc-' });
  let exit = 0;
  try {
    const db = await createDb(scratch.url, { maximumPoolSize: 20 });
    const port = await freePort();
    const config = loadConfig({
      DATABASE_URL: scratch.url, DATA_DIR: scratch.dir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent',
      SIGNING_SECRET: 'bench-signing-secret-0123456789', MEDIA_MAX_CALLS: '100000',
      ...(process.env.WEBRTC_CODEC_THREADS ? { WEBRTC_CODEC_THREADS: process.env.WEBRTC_CODEC_THREADS } : {}),
    });
    const combined = await startCombined({
      config, db, logger: createLogger({ level: 'silent' }), temporal: null,
      media: { engines: async () => fakeEngines({ tts: { firstByteMs: 80, msPerChar: 60 } }) },
    }, port, '127.0.0.1');
    const origin = `http://127.0.0.1:${port}`;
    const org = await createOrganization(db, { name: 'bench', balanceUsd: 1000 });
    await setOrganizationLimits(db, org.id, { concurrency: 1000 });
    const { key } = await createApiKey(db, org.id, 'bench');

    // RTP packets the server sent (its /metrics): tells server-side pacing from client-side loss
    const rtpSent = async () => {
      const text = await (await fetch(`${origin}/metrics`)).text();
      const m = /^voice_webrtc_rtp_packets_total\{direction="sent"\} (\d+)/m.exec(text);
      return m ? Number(m[1]) : 0;
    };
    const sentence = 'This is a long agent monologue used to keep audio flowing for the whole benchmark window. ';
    const long = sentence.repeat(Math.ceil(((SECONDS + 10) * 1000) / 60 / sentence.length));
    const run = async (kind: Kind, n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        ids.push(await insertPendingCall(db, {
          orgId: org.id,
          transport: kind === 'webrtc' ? 'webrtc' : 'websocket',
          config: agentConfig({ name: `${kind}-${i}`, greeting: { firstMessages: [long] }, noiseGate: { enabled: false }, userIdleTimeoutS: 25 }),
        }));
      }
      const sent0 = await rtpSent();
      const kids0 = codecCpuMs();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const r = await forkRole<ClientResult>(import.meta.url, 'client', { kind, origin, key, callIds: ids, seconds: SECONDS } satisfies ClientJob).result;
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const codecMs = codecCpuMs() - kids0;
      const serverSent = (await rtpSent()) - sent0;
      await until(async () => combined.media.activeCalls() === 0, 30_000, 'calls to end');
      const cpuPct = ((cpu.user + cpu.system) / 1000 / wall) * 100 + (codecMs / wall) * 100;
      const codecPct = (codecMs / wall) * 100;
      const live = Math.max(1, r.connected); // per connected call (a failed connect is reported, not averaged in)
      return { kind, n, r, cpuPct, codecPct, cpuPerCall: cpuPct / live, framesPerCallPerS: r.frames / live / SECONDS, serverSent };
    };
    const results = [];
    for (const n of [SMALL, CALLS]) {
      results.push(await run('websocket', n));
      results.push(await run('webrtc', n));
    }
    for (const x of results) {
      log(
        `${x.kind.padEnd(9)} ${String(x.n).padStart(3)} calls, ${SECONDS} s: ${x.r.connected} connected; server CPU ${f1(x.cpuPct)} % of one core ` +
          `= ${f2(x.cpuPerCall)} % per connected call (codec workers ${f1(x.codecPct)} % of it); agent frames ${f1(x.framesPerCallPerS)}/s per connected call (50 expected); ` +
          `inter-arrival jitter p50 ${f1(pct(x.r.jitter, 50))} ms, p99 ${f1(pct(x.r.jitter, 99))} ms` +
          (x.kind === 'webrtc' ? `; server sent ${x.serverSent} RTP packets (${f1(x.serverSent / Math.max(1, x.r.connected) / SECONDS)}/s per connected call), client received ${x.r.frames}` : ''),
      );
    }
    // MIXED=N (issue 24 goal 3, partly): N WebSocket and N WebRTC calls at the same time on the one server (carrier
    // streams are not in this bench yet); jitter per transport, CPU for all together
    const MIXED = Number(process.env.MIXED ?? 0);
    if (MIXED > 0) {
      const ids = { websocket: [] as string[], webrtc: [] as string[] };
      for (const kind of ['websocket', 'webrtc'] as const) {
        for (let i = 0; i < MIXED; i++) {
          ids[kind].push(await insertPendingCall(db, {
            orgId: org.id, transport: kind,
            config: agentConfig({ name: `mixed-${kind}-${i}`, greeting: { firstMessages: [long] }, noiseGate: { enabled: false }, userIdleTimeoutS: 25 }),
          }));
        }
      }
      const kids0 = codecCpuMs();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const [ws, rtc] = await Promise.all((['websocket', 'webrtc'] as const).map((kind) =>
        forkRole<ClientResult>(import.meta.url, 'client', { kind, origin, key, callIds: ids[kind], seconds: SECONDS } satisfies ClientJob).result));
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const codecMs = codecCpuMs() - kids0;
      await until(async () => combined.media.activeCalls() === 0, 30_000, 'calls to end');
      const cpuPct = ((cpu.user + cpu.system) / 1000 / wall) * 100 + (codecMs / wall) * 100;
      const live = ws!.connected + rtc!.connected;
      log(`mixed ${MIXED} WebSocket + ${MIXED} WebRTC calls, ${SECONDS} s: ${ws!.connected} + ${rtc!.connected} connected; server CPU ${f1(cpuPct)} % of one core ` +
        `(${f2(cpuPct / Math.max(1, live))} % per call, codec workers ${f1((codecMs / wall) * 100)} %); jitter p99 WebSocket ${f1(pct(ws!.jitter, 99))} ms, ` +
        `WebRTC ${f1(pct(rtc!.jitter, 99))} ms; frames per call per s ${f1(ws!.frames / Math.max(1, ws!.connected) / SECONDS)} / ${f1(rtc!.frames / Math.max(1, rtc!.connected) / SECONDS)}`);
    }
    for (let i = 0; i < results.length; i += 2) {
      const ws = results[i]!;
      const rtc = results[i + 1]!;
      log(`ratio at ${ws.n} calls: WebRTC / WebSocket CPU per call = ${f2(rtc.cpuPerCall / ws.cpuPerCall)}; jitter p99 ${f1(pct(rtc.r.jitter, 99))} vs ${f1(pct(ws.r.jitter, 99))} ms`);
    }
    log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)`);
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
