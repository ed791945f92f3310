// bench/webrtc: N simultaneous calls per transport — WebRTC (node-datachannel callers, 20 ms Opus RTP), WebSocket
// (s16le PCM) and carrier media streams (test/fakes/twilio-media.ts: Twilio Media Streams, 8 kHz µ-law) — each alone,
// then mixed, on one server. By default each call plays a long agent monologue (scripted fake engines, Silero VAD)
// while its caller streams silence in real time. Callers run in child processes, so the server's CPU is its own (the
// codec worker processes' included). Per transport: server CPU per call with a per-stage, per-thread breakdown
// (media/stage-cpu.ts), output pacing jitter p50/p99, frames later than playout by > 40 ms, frames per call per second.
// SPEAK=1: the vendor adapters against their local fakes (bench/_vendors.ts, as bench/pipeline MODE=vendors) and
// callers that speak and pause (bench/_callers.ts SpeakingCaller); adds per-turn latency (server-added = end of speech
// → first reply audio minus the fakes' fixed end-of-turn window), split along the way and matched against the
// event-loop stalls of every process of the run.
// Env: CALLS (40), CALLS_SMALL (5; 0 skips a size), SECONDS (15), KINDS (websocket,webrtc,carrier); MIXED=N runs N
// WebSocket + N WebRTC calls at once, CARRIER=M adds M carrier streams; VAD=fake; STT=soniox (SPEAK=1);
// WEBRTC_CODEC_THREADS=2 (codec pool instead of inline), WEBRTC_MEDIA_THREAD=1; CLIENT_PROCS=k client processes per
// transport; IGNORE_PLAYBACK=1 (fullband caller Opus, for an A/B); STAGES=0 (no profile or stage timers);
// PROFILE_OUT=file.cpuprofile; ALLOC_OUT=file.heapprofile; scheduling experiments SERVER_CHRT="-R -r -p 10" and
// SERVER_SLICE_US=100, and the product's MEDIA_PACING_CPU=1 (bench/_server.ts). Targets: MIXED=50 CARRIER=50 on one
// server, and 150 speaking WebRTC calls.
//
//   npm run bench -- webrtc        CALLS=40 CALLS_SMALL=5 SECONDS=15 node --import tsx bench/webrtc.ts
//   mixed target:                  CALLS_SMALL=0 CALLS=50 MIXED=50 CARRIER=50 npm run bench -- webrtc
//   speaking target:               SPEAK=1 CALLS_SMALL=0 CALLS=150 KINDS=webrtc SECONDS=30 npm run bench -- webrtc
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { f1, f2, gcWatch, pct, slowTurnsByStall, stallWatch, type Stall } from './_stats.ts';
import { forkRole, LATE_MS, SpeakingCaller, speakingStats, speechFrame, wsCaller, type SpeakingStats } from './_callers.ts';
import { benchStt, callerSentence, FIXED_TURN_MS, type FakesLoad, sentenceFromBase64, sentenceToBase64, startVendorFakes, STT_END_MS, vendorAgent, vendorConfig } from './_vendors.ts';
import type { StageCpuSnapshot, ThreadStageCpu } from '../media/stage-cpu.ts';
import type { TurnLatency } from '../media/pipeline/metrics.ts';

const ROLE = process.argv[2] ?? 'server';
const log = (m: string) => process.stdout.write(`${m}\n`);
/** SPEAK=1: vendor engines against their fakes, callers speaking and pausing (see the header) */
const SPEAK = process.env.SPEAK === '1';

type Kind = 'websocket' | 'webrtc' | 'carrier';
const KIND_NAMES: Record<Kind, string> = { websocket: 'WebSocket', webrtc: 'WebRTC', carrier: 'carrier' };
interface ClientJob {
  kind: Kind;
  origin: string;
  key: string;
  callIds: string[];
  /** carrier: each call's signed stream token (the <Parameter> our TwiML would carry) */
  tokens?: string[];
  seconds: number;
  /** SPEAK=1: the callers' sentence (16 kHz s16le, base64); without it they stream silence */
  speech?: string;
}
interface ClientResult {
  jitter: number[];
  /** frames later than their playout time by more than LATE_MS */
  late: number;
  frames: number;
  connected: number;
  windowMs: number;
  /** the client process's own event-loop delay (ms; WebRTC: over its window, the others: from its start): arrivals
   * are stamped on that loop */
  loopMs?: { p99: number; max: number };
  /** the client processes' event-loop stalls over the window */
  stalls?: Stall[];
  /** the client processes' CPU (% of one core, summed over the processes) */
  cpuPct?: number;
  /** WebRTC: how late each capture tick of the callers ran against its 20 ms grid (ms): the callers' own sending */
  ticksLate?: number[];
  /** speaking callers: their turns (their jitter, late and frames are the replies', above) */
  talk?: Pick<SpeakingStats, 'replyMs' | 'turnAt' | 'lateAt' | 'spoken' | 'turns' | 'unanswered'>;
}
/** V8's sampling profiler thread (the bench's breakdown; its CPU is left out of the server's) */
const PROFILER_THREAD = 'v8:ProfEvntProc';

/** One stream's arrival times → inter-arrival jitter |Δ − 20 ms| after the first 10 frames (connection set-up
 * settles) into `r.jitter`; frames past their playout time (the client plays frame n at first + n·20 ms) into
 * `r.late`; the frame count into `r.frames`. */
function addStream(times: readonly number[], r: Pick<ClientResult, 'jitter' | 'late' | 'frames'>): void {
  for (let i = 11; i < times.length; i++) r.jitter.push(Math.abs(times[i]! - times[i - 1]! - 20));
  for (let n = 0; n < times.length; n++) if (times[n]! > times[0]! + n * 20 + LATE_MS) r.late++;
  r.frames += times.length;
}

/** One job's callers over `k` client processes (CLIENT_PROCS), so that one client's event loop does not time them
 * all: a caller process late on its own loop reads every arrival late. */
function splitJob<J extends Omit<ClientJob, 'seconds'>>(job: J, k: number): J[] {
  const n = Math.max(1, Math.min(k, job.callIds.length));
  return Array.from({ length: n }, (_, i) => {
    const pick = <T>(xs: readonly T[]) => xs.filter((_, j) => j % n === i);
    return { ...job, callIds: pick(job.callIds), ...(job.tokens ? { tokens: pick(job.tokens) } : {}) };
  });
}

/** The parts of one job, as one result. */
function mergeResults(parts: ClientResult[]): ClientResult {
  const [first, ...rest] = parts;
  const r: ClientResult = { ...first!, jitter: [...first!.jitter], ...(first!.talk ? { talk: { ...first!.talk, replyMs: [...first!.talk.replyMs], turnAt: [...first!.talk.turnAt], lateAt: [...first!.talk.lateAt] } } : {}) };
  for (const p of rest) {
    r.jitter.push(...p.jitter);
    r.late += p.late;
    r.frames += p.frames;
    r.connected += p.connected;
    r.windowMs = Math.max(r.windowMs, p.windowMs);
    if (r.cpuPct !== undefined && p.cpuPct !== undefined) r.cpuPct += p.cpuPct;
    if (r.loopMs && p.loopMs) r.loopMs = { p99: Math.max(r.loopMs.p99, p.loopMs.p99), max: Math.max(r.loopMs.max, p.loopMs.max) };
    r.stalls = [...(r.stalls ?? []), ...(p.stalls ?? [])];
    if (p.ticksLate) r.ticksLate = [...(r.ticksLate ?? []), ...p.ticksLate];
    if (r.talk && p.talk) {
      r.talk.replyMs.push(...p.talk.replyMs);
      r.talk.turnAt.push(...p.talk.turnAt);
      r.talk.lateAt.push(...p.talk.lateAt);
      r.talk.spoken += p.talk.spoken;
      r.talk.turns += p.talk.turns;
      r.talk.unanswered += p.talk.unanswered;
    }
  }
  return r;
}

/** Speaking callers' turns: answered or not, end of speech → first reply audio, and the server's part of it. */
function turnsLine(t: NonNullable<ClientResult['talk']>): string {
  const added = t.replyMs.map((x) => x - FIXED_TURN_MS);
  return `turns: ${t.spoken} sentences spoken: ${t.turns} answered, ${t.unanswered} with no reply within 8 s, ${t.spoken - t.turns - t.unanswered} still waiting at hang-up; ` +
    `end of speech → first reply audio p50 ${f1(pct(t.replyMs, 50))} ms, p99 ${f1(pct(t.replyMs, 99))} ms; ` +
    `server-added per turn (that − ${FIXED_TURN_MS} ms fixed STT end-of-turn window) p50 ${f1(pct(added, 50))} ms, p99 ${f1(pct(added, 99))} ms${rampSplit(t.turnAt)}`;
}

/**
 * Caller audio on its way in (media/stage-cpu.ts setRtpArrivalProbe): each call's RTP packets as they reach the
 * server's main thread, against the call's own earliest packet on the RTP clock (arrival − timestamp / 48; each
 * call's first second is left out of the reference, as the connection settles). The callers send on a 20 ms grid,
 * so this is the delay a packet met on the way (the callers' sending, loopback, node-datachannel's receive threads,
 * the wait for the main thread) beyond the quickest one. Split by whether the event loop had been idle since the
 * previous packet: a packet that found the loop idle met the way up to the main thread only; the others also
 * waited for the main thread to finish what it was doing.
 */
function ingressWatch(setProbe: (p: ((stream: object, ts: number) => void) | null) => void) {
  const streams = new Map<object, { ts0: number; n: number; best: number }>();
  const samples: Array<[{ best: number }, number, boolean]> = [];
  let lastIdle = performance.eventLoopUtilization().idle;
  setProbe((stream, ts) => {
    const now = performance.now();
    let s = streams.get(stream);
    if (!s) streams.set(stream, (s = { ts0: ts, n: 0, best: Infinity }));
    const idle = performance.eventLoopUtilization().idle;
    const afterIdle = idle > lastIdle;
    lastIdle = idle;
    if (++s.n <= 50) return;
    const v = now - ((ts - s.ts0) >>> 0) / 48;
    if (v < s.best) s.best = v;
    samples.push([s, v, afterIdle]);
  });
  return {
    stop(ticksLate: readonly number[]): string {
      setProbe(null);
      const all: number[] = [];
      const idle: number[] = [];
      const busy: number[] = [];
      for (const [s, v, afterIdle] of samples) {
        const d = v - s.best;
        all.push(d);
        (afterIdle ? idle : busy).push(d);
      }
      return `caller packets on their way in (at the server's main thread, against each call's quickest): ${all.length} packets, p50 ${f1(pct(all, 50))} ms, ` +
        `p99 ${f1(pct(all, 99))} ms, p99.9 ${f1(pct(all, 99.9))} ms, ${all.filter((x) => x > LATE_MS).length} later than ${LATE_MS} ms; ` +
        `those that found the event loop idle (the way up to it only) p50 ${f1(pct(idle, 50))} ms, p99 ${f1(pct(idle, 99))} ms, the others p50 ${f1(pct(busy, 50))} ms, p99 ${f1(pct(busy, 99))} ms; ` +
        `the callers' capture ticks late p50 ${f1(pct(ticksLate, 50))} ms, p99 ${f1(pct(ticksLate, 99))} ms, max ${f1(ticksLate.reduce((a, b) => Math.max(a, b), 0))} ms`;
    },
  };
}

type StallSources = { serverStalls: Stall[]; planeStalls: Stall[] | null; fakesLoad?: { stt: FakesLoad; reply: FakesLoad } | undefined };

/** Every thread or process of the run whose event-loop stalls are watched. */
function stallSources(r: ClientResult, m: StallSources): Record<string, readonly Stall[]> {
  return {
    server: m.serverStalls,
    ...(m.planeStalls ? { 'media plane': m.planeStalls } : {}),
    callers: r.stalls ?? [],
    ...(m.fakesLoad ? { 'STT fake': m.fakesLoad.stt.stalls, 'LLM + TTS fake': m.fakesLoad.reply.stalls } : {}),
  };
}

/** The turns whose server-added time reached 40 ms, against the event-loop stalls of every process of the run
 * (server, these callers' processes, the vendor fakes'): a late turn that overlaps a stall was held by it. */
function slowTurnsLine(r: ClientResult, m: StallSources): string {
  const turns = (r.talk?.turnAt ?? []).map(([, end, reply]): [number, number] => [end, reply]);
  return `turns with server-added ≥ 40 ms against the event-loop stalls (≥ 40 ms): ${slowTurnsByStall(turns, FIXED_TURN_MS + 40, stallSources(r, m))}`;
}

/** The runs of late frames (frames more than LATE_MS past their playout time, one after another in an utterance),
 * against the same stalls: each run from its first frame's send time (its playout less the pacer's 100 ms lead) to
 * that frame's arrival; where in the utterance runs start (frame 0–5: the pacer's lead itself came late). */
function lateRunsLine(r: ClientResult, m: StallSources): string {
  const runs = r.talk?.lateAt ?? [];
  if (runs.length === 0) return 'late frames: none';
  const behind = runs.map(([playout, arrival]) => arrival - playout).sort((a, b) => a - b);
  const inLead = runs.filter(([, , k]) => k < 6).length;
  return `late frames: ${runs.length} runs, their first frame ${f1(pct(behind, 50))} ms (p50) / ${f1(behind.at(-1)!)} ms (max) past playout, ${inLead} starting in the pacer's lead (frames 0–5); ` +
    `against the event-loop stalls (≥ 40 ms): ${slowTurnsByStall(runs.map(([playout, arrival]): [number, number] => [playout - 100, arrival]), 0, stallSources(r, m), 'runs')}`;
}

/** Server-added per turn in the first third of the turns' span (every call's first turns, while the others still
 * connect and greet) against the rest (steady state). */
function rampSplit(turnAt: Array<[string, number, number]>): string {
  if (turnAt.length < 30) return '';
  const ends = turnAt.map(([, end]) => end);
  const from = Math.min(...ends);
  const cut = from + (Math.max(...ends) - from) / 3;
  const added = (early: boolean) => turnAt.filter(([, end]) => end < cut === early).map(([, end, reply]) => reply - end - FIXED_TURN_MS);
  const a = added(true);
  const b = added(false);
  return ` (first third of the window: ${a.length} turns, p99 ${f1(pct(a, 99))} ms; the rest: ${b.length} turns, p99 ${f1(pct(b, 99))} ms)`;
}

/** Speaking callers' result: their replies' pacing and their turns. */
function talkResult(st: SpeakingStats, connected: number, windowMs: number): ClientResult {
  const { jitter, late, frames, spoken, turns, unanswered, replyMs, turnAt, lateAt } = st;
  return { jitter, late, frames, connected, windowMs, talk: { spoken, turns, unanswered, replyMs, turnAt, lateAt } };
}

/** 20 ms frames at 16 kHz */
const FRAME16 = 320;
/** a client process's event-loop delay (ROLE=client) */
const clientLoop = monitorEventLoopDelay({ resolution: 1 });
/** a process's event-loop stalls ≥ 40 ms (each role's own: client, or the server in the bench's main process) */
const stalls = stallWatch();
/** the client process's CPU from here (WebRTC: from its window's start, like clientLoop; the others: its start) */
const clientCpu = { at: performance.now(), usage: process.cpuUsage() };

async function runWsClients(job: ClientJob): Promise<ClientResult> {
  const r = { jitter: [] as number[], late: 0, frames: 0 };
  const speech = job.speech ? sentenceFromBase64(job.speech) : null;
  const st = speakingStats();
  let connected = 0;
  const silence = Buffer.alloc(FRAME16 * 2);
  const t0 = performance.now();
  await Promise.all(job.callIds.map((callId, index) => {
    const times: number[] = [];
    const talker = speech ? new SpeakingCaller(st, { frameSamples: FRAME16, speechSamples: speech.length, id: callId }) : null;
    return wsCaller({
      origin: job.origin,
      key: job.key,
      callId,
      frameMs: 20,
      seconds: job.seconds,
      frame: (now) => {
        const k = talker ? talker.frame(now) : -1;
        return k < 0 ? silence : Buffer.from(speechFrame(speech!, k, FRAME16).buffer);
      },
      onOpen: (start) => {
        connected++;
        talker?.open(start, index);
      },
      onAudio: (now) => (talker ? talker.onAudio(now) : times.push(now)),
      onClose: () => talker || addStream(times, r),
    });
  }));
  return speech ? talkResult(st, connected, performance.now() - t0) : { ...r, connected, windowMs: performance.now() - t0 };
}

async function runCarrierClients(job: ClientJob): Promise<ClientResult> {
  const { FakeCarrierStream } = await import('../test/fakes/twilio-media.ts');
  const r = { jitter: [] as number[], late: 0, frames: 0 };
  const speech = job.speech ? sentenceFromBase64(job.speech) : null;
  const st = speakingStats();
  let connected = 0;
  const failures: string[] = [];
  const t0 = performance.now();
  const url = `${job.origin.replace(/^http/, 'ws')}/api/v1/telephony/twilio/stream`;
  await Promise.all(job.callIds.map(async (id, i) => {
    // what Twilio does on <Connect><Stream url=…><Parameter name="token" …/>: connected, start, then µ-law media
    const m = FakeCarrierStream.connect(`${url}/${id}`, {
      callSid: `CA${id.replace(/-/g, '').slice(0, 32).padEnd(32, '0')}`,
      customParameters: { token: job.tokens![i]! },
    });
    m.arrivals = [];
    try {
      await m.opened;
    } catch (err) {
      failures.push((err as Error).message);
      return;
    }
    connected++;
    // speaking: the fake streams what `say` queued (silence otherwise) on its own 20 ms clock; every 20 ms the
    // caller takes in the agent's frames (with their arrival times) and sees whether to speak
    const talker = speech ? new SpeakingCaller(st, { frameSamples: FRAME16, speechSamples: speech.length, id }) : null;
    const hear = () => {
      for (const t of m.arrivals!) talker!.onAudio(t);
      m.arrivals!.length = 0;
    };
    talker?.open(performance.now(), i);
    const turns = talker
      ? setInterval(() => {
          hear();
          // resolves as the payload with the sentence's last samples goes out: its audio ends 20 ms later
          if (talker.startsSpeaking(performance.now())) void m.say(speech!, 16_000).then(() => talker.spoke(performance.now() + 20));
        }, 20)
      : null;
    const ended = await Promise.race([m.closed.then((c) => c), new Promise<null>((res) => setTimeout(() => res(null), job.seconds * 1000))]);
    if (ended) failures.push(`closed by the server early: ${ended.code} ${ended.reason}`);
    if (turns) clearInterval(turns);
    m.hangup();
    if (!talker) addStream(m.arrivals, r);
    await Promise.race([m.closed, new Promise((res) => setTimeout(res, 2000))]);
    // speaking: frames that were on their way at the hang-up count too (their sum is compared with what was sent)
    if (talker) hear();
  }));
  if (failures.length) process.stderr.write(`carrier client: ${failures.length} of ${job.callIds.length} streams failed: ${[...new Set(failures)].join('; ')}\n`);
  return speech ? talkResult(st, connected, performance.now() - t0) : { ...r, connected, windowMs: performance.now() - t0 };
}

async function runRtcClients(job: ClientJob): Promise<ClientResult> {
  const { WebRtcCaller } = await import('../test/webrtc/peer.ts');
  const { until } = await import('../test/helpers/wait.ts');
  const { OpusEncoder48, FRAME_SAMPLES } = await import('../core/audio/opus.ts');
  const nodeDataChannel = (await import('node-datachannel')).default;
  const speech = job.speech ? sentenceFromBase64(job.speech) : null;
  const st = speakingStats();
  const r = { jitter: [] as number[], late: 0, frames: 0 };
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
      await until(() => c.state === 'connected', { what: 'peer connected', timeoutMs: 20_000 });
      return Object.assign(c, { callId: id });
    } catch (err) {
      // counted and reported, not hidden: "connected" below is below N
      failures.push(`${(err as Error).message} (caller #${index}, peer ${c.state}, ice ${c.pc.iceState()})`);
      c.close();
      return null;
    }
  }));
  const callers = settled.filter((c) => c !== null);
  if (failures.length) process.stderr.write(`webrtc client: ${failures.length} of ${job.callIds.length} calls failed to connect: ${[...new Set(failures)].join('; ')}\n`);
  // the sentence as a browser sends it: 48 kHz, one Opus packet per 20 ms (packet k = the sentence's frame k), encoded
  // as the callers' own encoders are set up from the answer (the server's maxplaybackrate caps the band, as libwebrtc
  // does): every caller sends the same packets, encoded once
  const enc = () => (process.env.IGNORE_PLAYBACK || !callers[0] ? new OpusEncoder48() : callers[0].newEncoder());
  const silence = enc().encode(new Int16Array(FRAME_SAMPLES));
  const packets: Uint8Array[] = [];
  if (speech) {
    const { resample } = await import('../core/audio/resample.ts');
    const s48 = resample(speech, 16_000, 48_000);
    const e = enc();
    for (let k = 0; k * FRAME_SAMPLES < s48.length; k++) packets.push(e.encode(speechFrame(s48, k, FRAME_SAMPLES)));
  }
  // every caller sends a packet each 20 ms (silence, or its sentence's next one), each on its own capture clock as
  // independent browsers do: the callers are spread over PHASES clocks 20/PHASES ms apart (one clock for all of them
  // would land every caller's packet on the server in the same instant, a burst no real population makes). A
  // speaking caller first takes in the agent packets that arrived since its last packet (with their arrival times).
  const start = performance.now();
  clientLoop.reset(); // the window, not the connection set-up
  stalls.take();
  Object.assign(clientCpu, { at: performance.now(), usage: process.cpuUsage() });
  const talkers = speech ? callers.map((c) => new SpeakingCaller(st, { frameSamples: FRAME16, speechSamples: speech.length, id: c.callId })) : null;
  talkers?.forEach((t, i) => t.open(start, i));
  const hear = (c: (typeof callers)[number], t: SpeakingCaller) => {
    for (const at of c.arrivals!) t.onAudio(at);
    c.arrivals!.length = 0;
  };
  const PHASES = Math.min(10, Math.max(1, callers.length));
  const ticksLate: number[] = [];
  await Promise.all(Array.from({ length: PHASES }, (_, g) => new Promise<void>((resolve) => {
    const mine = callers.map((c, i) => [c, i] as const).filter(([, i]) => i % PHASES === g);
    const phase = start + (g * 20) / PHASES;
    let k = 0;
    const tick = () => {
      ticksLate.push(performance.now() - (phase + k * 20));
      for (const [c, i] of mine) {
        if (!talkers) {
          c.sendPacket(silence);
          continue;
        }
        hear(c, talkers[i]!);
        const f = talkers[i]!.frame(performance.now());
        c.sendPacket(f < 0 ? silence : packets[f]!);
      }
      k++;
      if (performance.now() - start >= job.seconds * 1000) return resolve();
      setTimeout(tick, Math.max(0, phase + k * 20 - performance.now()));
    };
    setTimeout(tick, Math.max(0, phase - performance.now()));
  })));
  callers.forEach((c) => {
    c.hangup();
    if (!talkers) addStream(c.arrivals!, r);
  });
  await new Promise((r) => setTimeout(r, 300));
  // speaking: packets that were on their way at the hang-up count too (compared with the RTP packets the server sent)
  talkers?.forEach((t, i) => hear(callers[i]!, t));
  for (const c of callers) c.close();
  await new Promise((r) => setTimeout(r, 300));
  nodeDataChannel.cleanup();
  return { ...(speech ? talkResult(st, callers.length, performance.now() - t0) : { ...r, connected: callers.length, windowMs: performance.now() - t0 }), ticksLate };
}

// the server side (this process) with the media process's Node flags, as production runs it
if (ROLE === 'server') await (await import('./_server.ts')).withMediaFlags(fileURLToPath(import.meta.url));

if (ROLE === 'client') {
  clientLoop.enable();
  process.once('message', (job: ClientJob) => {
    void (job.kind === 'webrtc' ? runRtcClients(job) : job.kind === 'carrier' ? runCarrierClients(job) : runWsClients(job)).then(
      (r) => {
        const used = process.cpuUsage(clientCpu.usage);
        const cpuPct = ((used.user + used.system) / 1000 / (performance.now() - clientCpu.at)) * 100;
        process.send!({ ...r, loopMs: { p99: clientLoop.percentile(99) / 1e6, max: clientLoop.max / 1e6 }, stalls: stalls.take(), cpuPct }, () => process.exit(0));
      },
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

/** Thread names of node-datachannel (libdatachannel, libjuice, usrsctp): ICE, DTLS, SRTP decryption, SCTP, UDP. */
function isDatachannelThread(name: string): boolean {
  return ['RTC worker', 'RTC poll', 'juice poll', 'SCTP iterator', 'SCTP timer'].includes(name);
}

/** The main thread's sampled CPU by stage: V8's sampling profiler (node:inspector) takes a stack every 1 ms of the
 * thread's run time (a thread that is not running gets no sample: signals sent meanwhile coalesce), so the shares are
 * shares of CPU even on a loaded machine, unlike stage wall times. Each sample goes to the innermost frame that
 * names a stage (walking from the leaf to the root). */
function stageOfFrame(fn: string, url: string): string | null {
  if (fn === '(garbage collector)') return 'garbage collection (on the main thread)';
  if (url.includes('/core/audio/opus.ts') || url.includes('/media/webrtc/call-codec.ts') || url.includes('@evan/opus')) {
    if (/encode/i.test(fn)) return 'webrtc: opus encode';
    if (/decode|conceal|packet|silence/i.test(fn)) return 'webrtc: opus decode';
  }
  // node-datachannel's native send (packetizer chain, SRTP, UDP) is charged to the JS frame that calls it
  if (url.includes('/media/webrtc/transport.ts') && fn === 'sendPackets') return 'webrtc: rtp send (packetize, SRTP, UDP)';
  if (url.includes('/media/webrtc/transport.ts') && fn === 'onRtp') return 'webrtc: rtp receive (parse, jitter buffer)';
  if (url.includes('/media/webrtc/jitter.ts')) return 'webrtc: rtp receive (parse, jitter buffer)';
  if (url.includes('/media/transports/carriers/stream.ts') || url.includes('/media/audio/mulaw')) return 'carrier: framing (JSON, base64, µ-law)';
  if (url.includes('/media/transports/ws.ts')) return 'websocket: framing';
  if (url.includes('/media/vad/')) return 'VAD (main-thread part: windows, batching)';
  if (SPEAK && url.includes('/media/services/')) return 'vendor adapters (STT, LLM, TTS clients: media/services)';
  if (url.includes('/media/pipeline/') || url.includes('/media/session/')) return 'pipeline (pacer, mixer, recorder, stages)';
  return null;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  samples?: number[];
}

/**
 * ALLOC_OUT=file.heapprofile: the server's sampled allocations over the window, the dead objects included (every
 * 32 KB allocated, where it was allocated), for DevTools or a script: what feeds the garbage collector.
 */
async function startAllocationProfile(): Promise<() => Promise<void>> {
  const out = process.env.ALLOC_OUT;
  if (!out) return async () => {};
  const inspector = await import('node:inspector/promises');
  const session = new inspector.Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 32_768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return async () => {
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: unknown };
    session.disconnect();
    writeFileSync(out, JSON.stringify(profile));
  };
}

async function startProfile(): Promise<() => Promise<Map<string, number>>> {
  const inspector = await import('node:inspector/promises');
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 1000 });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    session.disconnect();
    // PROFILE_OUT=file.cpuprofile keeps the raw profile (Chrome DevTools' format) for a closer look
    if (process.env.PROFILE_OUT) writeFileSync(process.env.PROFILE_OUT, JSON.stringify(profile));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const stageOf = new Map<number, string>();
    const resolve = (id: number): string => {
      const known = stageOf.get(id);
      if (known) return known;
      const n = byId.get(id)!;
      const fn = n.callFrame.functionName;
      const own = fn === '(idle)' ? '(idle)' : stageOfFrame(fn, n.callFrame.url);
      const p = parent.get(id);
      const st = own ?? (p !== undefined ? resolve(p) : 'everything else (event loop, timers, HTTP, node internals)');
      stageOf.set(id, st);
      return st;
    };
    const counts = new Map<string, number>();
    for (const id of profile.samples ?? []) {
      const st = resolve(id);
      counts.set(st, (counts.get(st) ?? 0) + 1);
    }
    return counts;
  };
}

/** Where the server's CPU went in one run, per call (% of one core): `perKind` are the connected calls of each
 * transport in the run; a stage labelled with a transport is divided by that transport's calls, the rest by all. */
function breakdown(d: StageCpuSnapshot, wallMs: number, perKind: Partial<Record<Kind, number>>, profile: Map<string, number>): string[] {
  const all = Object.values(perKind).reduce((a, b) => a + b, 0) || 1;
  const kindOf = (stage: string): Kind | null => {
    if (/^webrtc:|\(webrtc\)/.test(stage)) return 'webrtc';
    if (/^websocket:|\(websocket\)/.test(stage)) return 'websocket';
    if (/^twilio:|\(twilio\)/.test(stage)) return 'carrier';
    return null;
  };
  const share = (us: number, calls: number) => `${((us / 1000 / wallMs) * 100 / Math.max(1, calls)).toFixed(3)} %`;
  const lines: string[] = [];
  // the main thread's CPU split by the profile's samples (its total is exact: getrusage over the window)
  const busy = [...profile].filter(([k]) => k !== '(idle)');
  const samples = busy.reduce((a, [, n]) => a + n, 0);
  lines.push(`  main thread CPU ${share(d.mainUs, all)} per call, by stage (CPU profile, ${samples} samples):`);
  for (const [stage, n] of busy.sort((x, y) => y[1] - x[1])) {
    const k = kindOf(stage) ?? (stage.startsWith('carrier:') ? 'carrier' : null);
    const calls = k ? (perKind[k] ?? 0) : all;
    lines.push(`    ${stage}: ${share((d.mainUs * n) / Math.max(1, samples), calls)} per ${k ? KIND_NAMES[k] : 'any'} call (${((n / Math.max(1, samples)) * 100).toFixed(1)} % of samples)`);
  }
  lines.push(`  main-thread time inside timed stages (media/stage-cpu.ts; wall time: preemption inflates it on a loaded machine):`);
  let staged = 0;
  for (const [stage, v] of Object.entries(d.stages).sort((x, y) => y[1].us - x[1].us)) {
    if (v.n === 0) continue;
    staged += v.us;
    const k = kindOf(stage);
    const calls = k ? (perKind[k] ?? 0) : all;
    lines.push(`    ${stage}: ${share(v.us, calls)} per ${k ? KIND_NAMES[k] : 'any'} call (${(v.us / v.n).toFixed(1)} µs per run, ${v.n} runs)`);
  }
  if (staged > d.mainUs) lines.push(`    (stages sum to ${share(staged, all)} per call, more than the main thread's CPU: it was preempted inside them)`);
  lines.push(`  other threads (CPU from /proc/self/task):`);
  const threads = Object.entries(d.threads).filter(([, us]) => us > 0);
  const dc = threads.filter(([n]) => isDatachannelThread(n)).reduce((a, [, us]) => a + us, 0);
  if (dc > 0) lines.push(`    node-datachannel threads (ICE, DTLS, SRTP, SCTP, UDP): ${share(dc, perKind.webrtc ?? all)} per WebRTC call (${threads.filter(([n]) => isDatachannelThread(n)).map(([n, us]) => `${n} ${share(us, perKind.webrtc ?? all)}`).join(', ')})`);
  for (const [name, us] of threads.filter(([n]) => !isDatachannelThread(n) && n !== PROFILER_THREAD).sort((x, y) => y[1] - x[1])) {
    lines.push(`    thread ${name}${name === 'vad-silero' ? ' (Silero VAD inference)' : name === 'V8Worker' ? ' (V8: GC, compiler)' : ''}: ${share(us, all)} per call`);
  }
  return lines;
}

/** Where the media-plane thread's CPU went, per WebRTC call (its timed stages; the rest is its event loop and the
 * messages to and from the main thread). */
function planeLines(p: ThreadStageCpu | null, wallMs: number, perKind: Partial<Record<Kind, number>>): string[] {
  if (!p) return [];
  const calls = Math.max(1, perKind.webrtc ?? 0);
  const share = (us: number) => `${((us / 1000 / wallMs) * 100 / calls).toFixed(3)} %`;
  const lines = [`  WebRTC media-plane thread CPU ${share(p.cpuUs)} per WebRTC call (getrusage of the thread), inside timed stages:`];
  let staged = 0;
  for (const [stage, v] of Object.entries(p.stages).sort((x, y) => y[1].us - x[1].us)) {
    if (v.n === 0) continue;
    staged += v.us;
    lines.push(`    ${stage}: ${share(v.us)} per WebRTC call (${(v.us / v.n).toFixed(1)} µs per run, ${v.n} runs)`);
  }
  lines.push(`    the rest (its event loop, node-datachannel's callbacks, the messages to and from the main thread): ${share(Math.max(0, p.cpuUs - staged))} per WebRTC call`);
  return lines;
}

async function main(): Promise<void> {
  // per-stage CPU accounting in the media process (media/stage-cpu.ts); set before the media modules load, so the
  // VAD worker thread inherits it and names itself
  if (process.env.STAGES !== '0') process.env.MEDIA_STAGE_CPU = '1';
  const { enableStageCpu, stageCpuSnapshot, stageCpuDelta, threadStageCpuDelta, setRtpArrivalProbe } = await import('../media/stage-cpu.ts');
  if (process.env.STAGES !== '0') enableStageCpu();
  const { createDb, sql } = await import('../core/db/pool.ts');
  const { z } = await import('zod');
  const { createApiKey, createOrganization, setOrganizationLimits } = await import('../core/orgs.ts');
  const { startScratchDatabase, freePort } = await import('../scripts/infra.ts');
  const { startCombined } = await import('../scripts/server.ts');
  const { loadConfig } = await import('../core/config.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { fakeEngines } = await import('../test/fakes/engines.ts');
  const { createVad } = await import('../media/vad/index.ts');
  const { streamToken } = await import('../core/telephony/signing.ts');
  const { agentConfig, insertPendingCall } = await import('../test/helpers/calls.ts');
  const { until } = await import('../test/helpers/wait.ts');

  const CALLS = Number(process.env.CALLS ?? 40);
  const SMALL = Number(process.env.CALLS_SMALL ?? 5);
  const SECONDS = Number(process.env.SECONDS ?? 15);
  // callers of one transport per client process (CLIENT_PROCS=k spreads them over k processes)
  const CLIENT_PROCS = Math.max(1, Number(process.env.CLIENT_PROCS ?? 1));
  const KINDS = (process.env.KINDS ?? 'websocket,webrtc,carrier').split(',').map((k) => k.trim()) as Kind[];
  const bad = KINDS.filter((k) => !(k in KIND_NAMES));
  if (bad.length) throw new Error(`KINDS: unknown ${bad.join(', ')} (websocket, webrtc, carrier)`);
  const silero = process.env.VAD !== 'fake';
  // STAGES=0: no CPU profile and no stage timers (their small overhead out of the CPU figures)
  const STAGES = process.env.STAGES !== '0';
  const STT = benchStt();
  // SPEAK=1: the vendor fakes in their own process, and the callers' sentence
  const fakes = SPEAK ? startVendorFakes() : null;
  const scratch = await startScratchDatabase({ prefix: 'vas-bench-webrtc-' });
  let exit = 0;
  try {
    const urls = fakes ? await fakes.urls : null;
    const speech = SPEAK ? sentenceToBase64(await callerSentence()) : null;
    const db = await createDb(scratch.url, { maximumPoolSize: 20 });
    const port = await freePort();
    const config = loadConfig({
      DATABASE_URL: scratch.url, DATA_DIR: scratch.dir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent',
      SIGNING_SECRET: 'bench-signing-secret-0123456789', MEDIA_MAX_CALLS: '100000',
      ...(process.env.WEBRTC_CODEC_THREADS ? { WEBRTC_CODEC_THREADS: process.env.WEBRTC_CODEC_THREADS } : {}),
      ...(process.env.WEBRTC_MEDIA_THREAD ? { WEBRTC_MEDIA_THREAD: process.env.WEBRTC_MEDIA_THREAD } : {}),
      ...(process.env.MEDIA_PRIORITY_BOOST !== undefined ? { MEDIA_PRIORITY_BOOST: process.env.MEDIA_PRIORITY_BOOST } : {}),
      ...(process.env.MEDIA_PACING_CPU ? { MEDIA_PACING_CPU: process.env.MEDIA_PACING_CPU } : {}),
      ...(urls ? vendorConfig(urls) : {}),
    });
    // as the media process's entry does (media/main.ts): its pacing thread raised where permitted (core/priority.ts;
    // MEDIA_PRIORITY_BOOST, by default 10 levels); the callers and the fakes are processes of their own
    const { applyMediaPriority } = await import('../core/priority.ts');
    const prio = applyMediaPriority(config, { info: () => {}, warn: () => {} });
    log(`media pacing thread: ${prio.applied ? `nice ${prio.nice}` : `not raised (${prio.reason})`}`);
    for (const line of await (await import('./_server.ts')).applySchedulingExperiments(config)) log(line);
    const combined = await startCombined({
      config, db, logger: createLogger({ level: 'silent' }), temporal: null,
      // SPEAK=1: no engine override: createEngines from each call's config + Silero VAD, as in production
      media: SPEAK ? {} : {
        engines: async () => {
          const e = fakeEngines({ tts: { firstByteMs: 80, msPerChar: 60 } });
          return silero ? { ...e, vad: await createVad() } : e;
        },
      },
    }, port, '127.0.0.1');
    const origin = `http://127.0.0.1:${port}`;
    const org = await createOrganization(db, { name: 'bench', balanceUsd: 1000 });
    await setOrganizationLimits(db, org.id, { concurrency: 1000 });
    const { key } = await createApiKey(db, org.id, 'bench');

    // RTP packets the server sent (its /metrics): tells server-side pacing from client-side loss
    // and the caller frames its jitter buffers concealed or dropped as late (a concealed frame is audio the caller
    // never sent: the STT hears it)
    const rtpCounters = async () => {
      const text = await (await fetch(`${origin}/metrics`)).text();
      const read = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
      return {
        sent: read(/^voice_webrtc_rtp_packets_total\{direction="sent"\} (\d+)/m),
        concealed: read(/^voice_webrtc_frames_lost_total\{kind="concealed"\} (\d+)/m),
        late: read(/^voice_webrtc_frames_lost_total\{kind="late"\} (\d+)/m),
        // the agent's audio ran out mid-utterance at the pacer (the TTS audio came slower than real time): a frame late
        // at the client that no server stall explains
        underruns: read(/^voice_pacer_underruns_total (\d+)/m),
      };
    };
    const sentence = 'This is a long agent monologue used to keep audio flowing for the whole benchmark window. ';
    const long = sentence.repeat(Math.ceil(((SECONDS + 10) * 1000) / 60 / sentence.length));
    let made = 0;
    /** n pending calls of one transport; a carrier call is an outbound Twilio call whose dial was answered */
    const pendingCalls = async (kind: Kind, n: number): Promise<Omit<ClientJob, 'seconds'>> => {
      const callIds: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = `${kind}-${++made}`;
        const id = await insertPendingCall(db, {
          orgId: org.id,
          transport: kind === 'carrier' ? 'outbound' : kind,
          config: SPEAK
            ? vendorAgent(agentConfig, name, STT, { voicemailDetection: false })
            : agentConfig({ name, greeting: { firstMessages: [long] }, noiseGate: { enabled: false }, userIdleTimeoutS: 25, voicemailDetection: false }),
        });
        if (kind === 'carrier') await db.query(sql.type(z.object({}))`UPDATE calls SET telephony_provider = 'twilio' WHERE id = ${id}`);
        callIds.push(id);
      }
      return { kind, origin, key, callIds, ...(kind === 'carrier' ? { tokens: callIds.map((id) => streamToken(config, id)) } : {}), ...(speech ? { speech } : {}) };
    };
    /** The server's own view of these calls' turns (calls.logs.latency, written at each call's end): the vendor's end
     * of turn (STT final) → first agent frame handed to the transport, p50/p99; and, matched with the client's turns
     * (`client`: [call id, end of speech, first reply audio]), the way there and back around it. */
    const serverTurns = async (callIds: readonly string[], client: ReadonlyArray<[string, number, number]>): Promise<string> => {
      const rows = await db.any(sql.type(z.object({ id: z.string(), logs: z.any() }))`SELECT id, logs FROM calls WHERE id = ANY(${sql.array(callIds as string[], 'uuid')})`);
      // the turn's steps, each from one event to the next: the server's own (final → LLM request, TTS first byte →
      // first frame, and LLM first token → TTS text) and the fakes' round trips (LLM request → first token, TTS text →
      // first byte: loopback to another process, so a loaded machine shows there too)
      const steps: Array<[string, string, string]> = [
        ['final → LLM request', 'sttFinal_ms', 'llmRequest_ms'], ['LLM round trip', 'llmRequest_ms', 'llmFirstToken_ms'],
        ['first token → TTS text', 'llmFirstToken_ms', 'ttsText_ms'], ['TTS round trip', 'ttsText_ms', 'ttsFirstByte_ms'],
        ['TTS first byte → first frame', 'ttsFirstByte_ms', 'firstFrame_ms'],
      ];
      const finalToFrame: number[] = [];
      const by = steps.map(() => [] as number[]);
      // the whole turn on one clock: the client's end of speech and first reply audio (wall times) around the server's
      // STT final and first frame sent (the turn's started_at + offsets): the way in (end of speech → STT final, less
      // the fake's fixed end-of-turn window: caller packets to the server, decoding, the STT adapter, the fake's
      // process and its answer) and the way out (first frame sent → first audio at the client)
      const turnsOf = new Map<string, Array<[number, number]>>();
      for (const [id, end, first] of client) {
        if (!turnsOf.has(id)) turnsOf.set(id, []);
        turnsOf.get(id)!.push([end, first]);
      }
      const wayIn: number[] = [];
      const wayOut: number[] = [];
      for (const r of rows) {
        for (const l of ((r.logs as { latency?: TurnLatency[] } | null)?.latency ?? [])) {
          const d = l.detail ?? {};
          if (d.sttFinal_ms !== undefined && d.firstFrame_ms !== undefined) finalToFrame.push(d.firstFrame_ms - d.sttFinal_ms);
          steps.forEach(([, a, b], i) => { if (d[a] !== undefined && d[b] !== undefined) by[i]!.push(d[b]! - d[a]!); });
          if (!l.started_at || d.sttFinal_ms === undefined || d.firstFrame_ms === undefined) continue;
          const final = Date.parse(l.started_at) + d.sttFinal_ms;
          // the client's turn this final answers: its latest end of speech before the final
          let turn: [number, number] | null = null;
          for (const t of turnsOf.get(r.id) ?? []) if (t[0] < final && (!turn || t[0] > turn[0])) turn = t;
          if (!turn || final - turn[0] > 8000) continue;
          wayIn.push(final - turn[0] - FIXED_TURN_MS);
          wayOut.push(turn[1] - (Date.parse(l.started_at) + d.firstFrame_ms));
        }
      }
      return `server's view (logs.latency, ${finalToFrame.length} turns): STT final → first agent frame sent p50 ${f1(pct(finalToFrame, 50))} ms, p99 ${f1(pct(finalToFrame, 99))} ms ` +
        `(${steps.map(([name], i) => `${name} ${f1(pct(by[i]!, 50))} / ${f1(pct(by[i]!, 99))}`).join(', ')} ms p50 / p99); ` +
        `on one clock (${wayIn.length} turns matched, ±1 ms): the way in (end of speech → STT final − ${FIXED_TURN_MS} ms) p50 ${f1(pct(wayIn, 50))} ms, p99 ${f1(pct(wayIn, 99))} ms, ` +
        `the way out (first frame sent → first audio at the client) p50 ${f1(pct(wayOut, 50))} ms, p99 ${f1(pct(wayOut, 99))} ms`;
    };
    /** the jobs at once, each in its own client process; server CPU over the window and per-stage breakdown */
    const measure = async (jobs: Array<Omit<ClientJob, 'seconds'>>, seconds = SECONDS) => {
      const rtp0 = await rtpCounters();
      const kids0 = codecCpuMs();
      const stopProfile = STAGES ? await startProfile() : async () => new Map<string, number>();
      const st0 = stageCpuSnapshot();
      const cpu0 = process.cpuUsage();
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      await fakes?.load(); // from here
      stalls.take();
      const gcs = gcWatch();
      const stopAlloc = await startAllocationProfile();
      const ingress = ingressWatch(setRtpArrivalProbe);
      const plane = combined.media.webrtc.plane;
      const plane0 = await plane?.stages();
      await plane?.stalls(); // starts the plane thread's stall watch, or clears it
      const t0 = performance.now();
      const rs = await Promise.all(jobs.map(async (job) => mergeResults(await Promise.all(splitJob(job, CLIENT_PROCS).map((part) =>
        forkRole<ClientResult>(import.meta.url, 'client', { ...part, seconds } satisfies ClientJob).result)))));
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const plane1 = await plane?.stages();
      const planeUse = plane1 ? threadStageCpuDelta(plane0 ?? null, plane1) : null;
      loop.disable();
      const serverStalls = stalls.take();
      const planeStalls = plane1 ? await plane!.stalls() : null;
      const webrtc = rs.find((_, i) => jobs[i]!.kind === 'webrtc');
      const ingressLine = plane ? (ingress.stop([]), 'caller packets on their way in: not measured with the WebRTC media-plane thread (the packets reach that thread, not the main one)') : ingress.stop(webrtc?.ticksLate ?? []);
      const serverGc = gcs.stop();
      await stopAlloc();
      const fakesLoad = await fakes?.load();
      const stages = stageCpuDelta(st0, stageCpuSnapshot());
      const profile = await stopProfile();
      const codecMs = codecCpuMs() - kids0;
      const rtp1 = await rtpCounters();
      const serverSent = rtp1.sent - rtp0.sent;
      const callerLoss = { concealed: rtp1.concealed - rtp0.concealed, late: rtp1.late - rtp0.late, underruns: rtp1.underruns - rtp0.underruns };
      await until(async () => combined.media.activeCalls() === 0, { what: 'calls to end', timeoutMs: 30_000 });
      // the sampling profiler's own thread is the bench's, not the server's
      const profilerMs = (stages.threads[PROFILER_THREAD] ?? 0) / 1000;
      const cpuPct = ((cpu.user + cpu.system) / 1000 - profilerMs) / wall * 100 + (codecMs / wall) * 100;
      const perKind: Partial<Record<Kind, number>> = {};
      jobs.forEach((j, i) => (perKind[j.kind] = rs[i]!.connected));
      // the main thread alone, from the stage snapshot's own reading of it (the profiler's sampling lands on it too:
      // STAGES=0 for the clean figure)
      const mainPct = (stages.mainUs / 1000 / wall) * 100;
      return { rs, wall, cpuPct, mainPct, planeUse, codecPct: (codecMs / wall) * 100, serverSent, stages, perKind, profile, callerLoss, loopMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }, fakesLoad, serverStalls, planeStalls, serverGc, ingressLine };
    };
    // every process of the run on these cores: the server, the callers, the vendor fakes (the bench's own main process is
    // the server's), and the fakes' own event-loop delay (each a service on its own machines in reality: a late STT
    // final is in "the way in", a late TTS first byte in the server's part)
    const machineLine = (m: { cpuPct: number; mainPct: number; planeUse: ThreadStageCpu | null; wall: number; rs: ClientResult[]; fakesLoad?: { stt: FakesLoad; reply: FakesLoad } | undefined; serverGc: string }) => {
      const clients = m.rs.reduce((a, r) => a + (r.cpuPct ?? 0), 0);
      const pctOf = (l: FakesLoad) => (l.cpuMs / m.wall) * 100;
      const l = m.fakesLoad;
      const fakes = l ? pctOf(l.stt) + pctOf(l.reply) : 0;
      const planePct = m.planeUse ? `, its WebRTC media-plane thread ${f1((m.planeUse.cpuUs / 1000 / m.wall) * 100)} %` : '';
      return `the run on ${os.cpus().length} cores: server ${f1(m.cpuPct)} % (its main thread ${f1(m.mainPct)} %${planePct}) + callers ${f1(clients)} % + vendor fakes ${f1(fakes)} % = ${f1(m.cpuPct + clients + fakes)} % of ${os.cpus().length * 100} %` +
        (l ? `; vendor fakes' processes: STT ${f1(pctOf(l.stt))} % (event-loop delay p99 ${f1(l.stt.p99)} ms, max ${f1(l.stt.max)} ms), LLM + TTS ${f1(pctOf(l.reply))} % (p99 ${f1(l.reply.p99)} ms, max ${f1(l.reply.max)} ms)` : '') +
        `; server GC over the window: ${m.serverGc}`;
    };
    const transportLine = (kind: Kind, n: number, r: ClientResult, serverSent: number, loss: { concealed: number; late: number; underruns: number }) =>
      `${KIND_NAMES[kind].padEnd(9)} ${String(n).padStart(3)} calls: ${r.connected} connected; ` +
      (r.talk ? `${r.frames} agent frames (greetings and replies); reply pacing jitter p50` : `agent frames ${f1(r.frames / Math.max(1, r.connected) / SECONDS)}/s per connected call (50 expected); inter-arrival jitter p50`) +
      ` ${f1(pct(r.jitter, 50))} ms, p99 ${f1(pct(r.jitter, 99))} ms; ${r.late} of ${r.frames} frames later than playout by > ${LATE_MS} ms` +
      (r.talk ? ` (agent-audio pacer underruns in the run, every transport: ${loss.underruns})` : '') +
      (r.loopMs ? `; client event-loop delay p99 ${f1(r.loopMs.p99)} ms, max ${f1(r.loopMs.max)} ms` : '') +
      (r.cpuPct !== undefined ? `; client processes CPU ${f1(r.cpuPct)} % of a core` : '') +
      (kind === 'webrtc' ? `; server sent ${serverSent} RTP packets (${f1(serverSent / Math.max(1, r.connected) / SECONDS)}/s per connected call), client received ${r.frames}; caller frames concealed ${loss.concealed}, dropped late ${loss.late}` : '');

    // warm-up, not reported: one call per transport (JIT, Silero's model, node-datachannel's threads), so the first
    // measured run does not carry the process's start-up
    const warm = [];
    for (const kind of new Set<Kind>([...KINDS, ...(Number(process.env.MIXED ?? 0) > 0 ? ['websocket', 'webrtc'] as const : []), ...(Number(process.env.CARRIER ?? 0) > 0 ? ['carrier'] as const : [])])) warm.push(await pendingCalls(kind, 1));
    await measure(warm, SPEAK ? 8 : 3);
    const solo: Array<{ kind: Kind; n: number; cpuPerCall: number; jitter99: number; added99: number }> = [];
    for (const n of [SMALL, CALLS].filter((x) => x > 0)) {
      for (const kind of KINDS) {
        const job = await pendingCalls(kind, n);
        const m = await measure([job]);
        const r = m.rs[0]!;
        const cpuPerCall = m.cpuPct / Math.max(1, r.connected); // per connected call (a failed connect is reported, not averaged in)
        solo.push({ kind, n, cpuPerCall, jitter99: pct(r.jitter, 99), added99: pct(r.talk?.replyMs ?? [], 99) - FIXED_TURN_MS });
        log(`${transportLine(kind, n, r, m.serverSent, m.callerLoss)}; server CPU ${f1(m.cpuPct)} % of one core = ${f2(cpuPerCall)} % per connected call (codec workers ${f1(m.codecPct)} % of it); ` +
          `server event-loop delay p50 ${f1(m.loopMs.p50)} ms, p99 ${f1(m.loopMs.p99)} ms, max ${f1(m.loopMs.max)} ms`);
        if (r.talk) log(`  ${turnsLine(r.talk)}\n  ${slowTurnsLine(r, m)}\n  ${lateRunsLine(r, m)}\n  ${await serverTurns(job.callIds, r.talk.turnAt)}`);
        if (kind === 'webrtc') log(`  ${m.ingressLine}`);
        log(`  ${machineLine(m)}`);
        if (STAGES) for (const l of [...breakdown(m.stages, m.wall, m.perKind, m.profile), ...planeLines(m.planeUse, m.wall, m.perKind)]) log(l);
      }
    }
    // MIXED=N: N WebSocket + N WebRTC (+ CARRIER=M carrier stream) calls at the same time on the
    // one server; pacing per transport, CPU for all together and, by stage, per transport
    const MIXED = Number(process.env.MIXED ?? 0);
    const CARRIER = Number(process.env.CARRIER ?? 0);
    if (MIXED > 0 || CARRIER > 0) {
      const sizes: Array<[Kind, number]> = [['websocket', MIXED], ['webrtc', MIXED], ['carrier', CARRIER]];
      const jobs = [];
      for (const [kind, n] of sizes) if (n > 0) jobs.push(await pendingCalls(kind, n));
      const m = await measure(jobs);
      const live = m.rs.reduce((a, r) => a + r.connected, 0);
      log(`mixed ${jobs.map((j) => `${j.callIds.length} ${KIND_NAMES[j.kind]}`).join(' + ')} calls, ${SECONDS} s: server CPU ${f1(m.cpuPct)} % of one core ` +
        `(${f2(m.cpuPct / Math.max(1, live))} % per call, codec workers ${f1(m.codecPct)} %)`);
      for (const [i, j] of jobs.entries()) {
        log(`  ${transportLine(j.kind, j.callIds.length, m.rs[i]!, m.serverSent, m.callerLoss)}`);
        if (m.rs[i]!.talk) log(`    ${turnsLine(m.rs[i]!.talk!)}\n    ${slowTurnsLine(m.rs[i]!, m)}\n    ${lateRunsLine(m.rs[i]!, m)}\n    ${await serverTurns(j.callIds, m.rs[i]!.talk!.turnAt)}`);
        if (j.kind === 'webrtc') log(`    ${m.ingressLine}`);
      }
      log(`  ${machineLine(m)}`);
      if (STAGES) for (const l of [...breakdown(m.stages, m.wall, m.perKind, m.profile), ...planeLines(m.planeUse, m.wall, m.perKind)]) log(l);
    }
    for (const n of [...new Set(solo.map((x) => x.n))]) {
      const at = solo.filter((x) => x.n === n);
      const ws = at.find((x) => x.kind === 'websocket');
      log(`CPU per call at ${n} calls, side by side: ${at.map((x) => `${KIND_NAMES[x.kind]} ${f2(x.cpuPerCall)} %${ws && x !== ws ? ` (${f2(x.cpuPerCall / ws.cpuPerCall)}× WebSocket)` : ''}`).join(', ')}; ` +
        `jitter p99 ${at.map((x) => `${KIND_NAMES[x.kind]} ${f1(x.jitter99)} ms`).join(', ')}` +
        (SPEAK ? `; server-added per turn p99 ${at.map((x) => `${KIND_NAMES[x.kind]} ${f1(x.added99)} ms`).join(', ')}` : ''));
    }
    log(`${SPEAK ? `engines: vendor adapters against local fakes (STT ${STT}, fake end of turn after ${STT_END_MS} ms of silence; LLM openai; TTS elevenlabs); VAD: Silero (callers speaking and pausing)` : `VAD: ${silero ? 'Silero (callers silent: windows below the silence gate skip inference)' : 'fake'}`}; codecs: ${process.env.WEBRTC_CODEC_THREADS && process.env.WEBRTC_CODEC_THREADS !== '0' ? `pool of ${process.env.WEBRTC_CODEC_THREADS}` : 'inline'}; ` +
      (STAGES ? 'breakdown on (CPU profile + stage timers: the profiler thread is left out of the server CPU, its sampling and the timers are in it; STAGES=0 for the cleanest CPU figures)' : 'breakdown off (STAGES=0)'));
    const pinned = (await import('../core/affinity.ts')).pacingCpu();
    log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (other processes share these cores)${pinned ? `; MEDIA_PACING_CPU placed the server's threads ${pinned.placements} times (once at the start, then whenever its set of threads changed)` : ''}`);
    await combined.close();
    await db.end();
  } catch (err) {
    exit = 1;
    log(`bench failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    fakes?.kill();
    await scratch.stop();
  }
  process.exit(exit);
}
