// The Opus codec of WebRTC calls in worker processes, when asked for (WEBRTC_CODEC_THREADS ≥ 1; default 0 = inline:
// at the sizes a node admits, the IPC costs more CPU than the work it moves; docs/benchmarks.md, and measure with
// bench/webrtc before turning it on). Each call is pinned to one worker for its life (the least loaded when it opens),
// so its codec state never moves. Work queued in one event-loop turn travels as ONE message per worker (the 20 ms clock
// ticks every call's pacer in one turn); results come back per call in submission order; timing (the pacer, the
// jitter buffer and its gap timer) stays on the event loop. WEBRTC_CODEC_DECODE=inline moves only the encoding: caller
// packets arrive one turn each, so a worker would cost a message per packet. Processes, not threads: the native Opus
// addon keeps one output buffer per process (core/audio/opus.ts), and the thread-safe WASM build costs more CPU.
// A worker that dies loses its in-flight work (agent frames counted unsent, caller frames replaced by silence and
// counted concealed); a fresh worker takes its calls with new codec state. More than MAX_DEATHS deaths within
// DEATH_WINDOW_MS break the pool: every call, current and new, continues inline (logged once); no call ends for it.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../core/logger.ts';
import { placeChildProcess } from '../../core/affinity.ts';
import { timed } from '../stage-cpu.ts';
import { CallCodec, CONCEAL, concat, type DecodeOp } from './call-codec.ts';
import type { BatchIn, BatchOut, Hello } from './codec-thread.ts';
import type { FrameSink } from './jitter.ts';
import { FRAME_SAMPLES } from '../../core/audio/opus.ts';

const MAX_DEATHS = 3;
const DEATH_WINDOW_MS = 60_000;

export interface CodecHandlers {
  /** Opus packets of agent audio submitted with encode(), in order; `lost` frames never came back (thread died);
   * `tag` is the sum of the tags given to the encode() calls these packets come from. */
  packets(packets: Uint8Array[], lost: number, tag: number): void;
  /** Caller audio at 16 kHz from the sink's instructions, in order; `corrupt` packets were concealed; `lost`
   * frames were replaced by silence because their thread died. */
  pcm(pcm16k: Int16Array, corrupt: number, lost: number): void;
}

export interface CodecChannel {
  /** Where this call's codec runs right now. */
  readonly mode: 'thread' | 'inline';
  /** Agent audio, 24 kHz, any length; the packets arrive through handlers.packets with `tag` (the owner's own
   * number, e.g. an RTP timestamp jump to apply before these packets; tags of merged submissions are summed). */
  encode(pcm24k: Int16Array, tag?: number): void;
  /** The jitter buffer's sink; the PCM arrives through handlers.pcm. */
  readonly sink: FrameSink;
  close(): void;
}

interface Pending {
  pcm: Int16Array[];
  tag: number;
  ops: DecodeOp[];
}

class Channel implements CodecChannel {
  thread: CodecThread | null = null;
  inline: CallCodec | null = null;
  /** the decoder on the event loop while encoding runs on a worker (the pool's decodeInline) */
  local: CallCodec | null = null;
  pending: Pending | null = null;
  /** submissions in flight on the thread: 24 kHz samples to encode and decode instructions, oldest first */
  readonly inFlight: Array<{ encodeSamples: number; tag: number; ops: number; silence: number }> = [];
  closed = false;
  readonly sink: FrameSink;

  constructor(
    readonly id: number,
    readonly h: CodecHandlers,
    private readonly pool: CodecPool,
  ) {
    if (pool.decodeInline) this.local = new CallCodec();
    const op = (o: DecodeOp) => {
      if (this.closed) return;
      const here = this.decoder;
      if (here) {
        const pcm = timed('webrtc: opus decode', here.decodeOne, o);
        return this.h.pcm(pcm, here.lastCorrupt, 0);
      }
      this.queue().ops.push(o);
    };
    this.sink = {
      // the payload is a view into node-datachannel's message buffer: decoded here it is used at once; queued for a
      // worker it needs a copy we own
      packet: (p) => op(this.decoder ? p : p.slice()),
      conceal: () => op(CONCEAL),
      silence: (n) => op(n),
    };
  }

  get mode(): 'thread' | 'inline' {
    return this.inline ? 'inline' : 'thread';
  }

  /** The codec that decodes this call's caller audio on the event loop, or null when a worker does. */
  private get decoder(): CallCodec | null {
    return this.inline ?? this.local;
  }

  /** Encode and decode on the event loop from now on; a decoder already here keeps its state (its encoder, never
   *  used, starts the agent stream afresh). */
  goInline(): void {
    this.thread = null;
    this.inline = this.local ?? new CallCodec();
  }

  encode(pcm24k: Int16Array, tag = 0): void {
    if (this.closed) return;
    const inline = this.inline;
    if (inline) return this.h.packets(timed('webrtc: opus encode', () => inline.encode(pcm24k)), 0, tag);
    const q = this.queue();
    q.pcm.push(pcm24k.slice());
    q.tag += tag;
  }

  private queue(): Pending {
    if (!this.pending) {
      this.pending = { pcm: [], tag: 0, ops: [] };
      this.thread!.dirty(this);
    }
    return this.pending;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = null;
    this.pool.release(this);
  }
}

const WORKER_FILE = fileURLToPath(new URL('./codec-thread.ts', import.meta.url));

class CodecThread {
  readonly worker: ChildProcess;
  readonly channels = new Map<number, Channel>();
  private opens: number[] = [];
  private closes: number[] = [];
  private dirtyList: Channel[] = [];
  private scheduled = false;
  dead = false;
  /** the Opus build the thread loaded (known once it has started) */
  backend: 'native' | 'wasm' | null = null;
  /** messages posted (for the benchmark: one per thread per event-loop turn with work) */
  messages = 0;

  constructor(private readonly onDeath: (t: CodecThread, why: string) => void) {
    // a child process (not a worker thread): the native Opus addon is only safe with one thread per process
    // (opus.ts); `advanced` serialization carries typed arrays as such. execArgv (the TypeScript loader) is inherited.
    this.worker = fork(WORKER_FILE, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    placeChildProcess(this.worker.pid); // off the pacing core (core/affinity.ts, MEDIA_PACING_CPU)
    this.setRef(false);
    this.worker.on('message', (msg: BatchOut | Hello) => {
      if (msg.t === 'hello') this.backend = msg.backend;
      else this.onDone(msg);
    });
    this.worker.on('error', (err) => this.die(`codec worker failed: ${err.message}`));
    this.worker.on('exit', (code, signal) => this.die(`codec worker exited (${signal ?? code})`));
  }

  /** An idle pool does not keep the media process alive. */
  private setRef(on: boolean): void {
    const ch = this.worker.channel as { ref?(): void; unref?(): void } | undefined;
    if (on) {
      this.worker.ref();
      ch?.ref?.();
    } else {
      this.worker.unref();
      ch?.unref?.();
    }
  }

  /** Stop the worker; resolves once it has exited. */
  terminate(): Promise<void> {
    if (this.worker.exitCode !== null || this.worker.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.kill('SIGKILL');
    });
  }

  attach(c: Channel): void {
    c.thread = this;
    this.channels.set(c.id, c);
    if (this.channels.size === 1) this.setRef(true);
    this.opens.push(c.id);
    this.schedule();
  }

  detach(c: Channel): void {
    if (!this.channels.delete(c.id)) return;
    if (this.channels.size === 0) this.setRef(false);
    this.closes.push(c.id);
    this.schedule();
  }

  dirty(c: Channel): void {
    this.dirtyList.push(c);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.dead) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.dead) return;
    const calls: BatchIn['calls'] = [];
    for (const c of this.dirtyList) {
      const p = c.pending;
      c.pending = null;
      if (!p || c.closed || c.thread !== this) continue;
      const call: BatchIn['calls'][number] = { id: c.id };
      let encodeSamples = 0;
      if (p.pcm.length) {
        call.pcm = concat(p.pcm);
        encodeSamples = call.pcm.length;
      }
      let silence = 0;
      if (p.ops.length) {
        call.ops = p.ops;
        for (const o of p.ops) if (typeof o === 'number' && o > 0) silence += o;
      }
      c.inFlight.push({ encodeSamples, tag: p.tag, ops: p.ops.filter((o) => typeof o !== 'number' || o === CONCEAL).length, silence });
      calls.push(call);
    }
    this.dirtyList = [];
    if (!calls.length && !this.opens.length && !this.closes.length) return;
    const msg: BatchIn = { t: 'batch', open: this.opens, calls, close: this.closes };
    this.opens = [];
    this.closes = [];
    this.messages++;
    try {
      this.worker.send(msg);
    } catch (err) {
      this.die(`codec worker unreachable: ${(err as Error).message}`);
    }
  };

  private onDone(msg: BatchOut): void {
    if (this.dead) return;
    for (const r of msg.calls) {
      const c = this.channels.get(r.id);
      if (!c) continue;
      const f = c.inFlight.shift();
      if (r.packets) c.h.packets(r.packets, 0, f?.tag ?? 0);
      if (r.pcm) c.h.pcm(r.pcm, r.corrupt ?? 0, 0);
    }
  }

  private die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    this.onDeath(this, why);
  }
}

/** The lost in-flight work of a channel whose thread died, reported through its handlers (see the header). */
function reportLost(c: Channel): void {
  let samples24 = 0;
  let tag = 0;
  let frames = 0;
  let silence = 0;
  for (const f of c.inFlight.splice(0)) {
    samples24 += f.encodeSamples;
    tag += f.tag;
    frames += f.ops;
    silence += f.silence;
  }
  const p = c.pending;
  c.pending = null;
  if (p) {
    for (const x of p.pcm) samples24 += x.length;
    tag += p.tag;
    for (const o of p.ops) {
      if (typeof o !== 'number' || o === CONCEAL) frames++;
      else silence += o;
    }
  }
  const lostPackets = Math.floor((samples24 * 2) / FRAME_SAMPLES);
  if (lostPackets || tag) c.h.packets([], lostPackets, tag);
  if (frames || silence) c.h.pcm(new Int16Array(Math.round((frames * FRAME_SAMPLES + silence) / 3)), 0, frames);
}

export class CodecPool {
  private readonly threads: CodecThread[] = [];
  private nextId = 1;
  private deaths: number[] = [];
  /** why the pool runs every codec inline, or null while its threads work */
  broken: string | null = null;

  constructor(
    readonly size: number,
    private readonly log?: Logger,
    /** decode caller audio on the event loop, encode on the workers (WEBRTC_CODEC_DECODE=inline) */
    readonly decodeInline = false,
  ) {
    if (size < 1) this.broken = 'WEBRTC_CODEC_THREADS=0';
  }

  open(h: CodecHandlers): CodecChannel {
    const c = new Channel(this.nextId++, h, this);
    if (this.broken) c.goInline();
    else this.leastLoaded().attach(c);
    return c;
  }

  /** Calls per thread (threads started so far), for stats and tests. */
  load(): number[] {
    return this.threads.map((t) => t.channels.size);
  }

  /** The Opus build of each thread (null until it has started). */
  backends(): Array<'native' | 'wasm' | null> {
    return this.threads.map((t) => t.backend);
  }

  /** Process ids of the workers (the benchmark reads their CPU time). */
  pids(): number[] {
    return this.threads.map((t) => t.worker.pid ?? 0);
  }

  /** Messages posted per thread so far (the benchmark's batching figure). */
  messages(): number[] {
    return this.threads.map((t) => t.messages);
  }

  /** The worker process a channel runs on (tests kill it to check what a dying worker does), or null inline. */
  workerOf(c: CodecChannel): ChildProcess | null {
    return (c as Channel).thread?.worker ?? null;
  }

  release(c: Channel): void {
    c.thread?.detach(c);
    c.thread = null;
    c.inFlight.length = 0;
  }

  /** Stop every thread (process shutdown, tests). Open channels continue inline. */
  async close(): Promise<void> {
    this.broken ??= 'codec pool closed';
    const threads = this.threads.splice(0);
    for (const t of threads) t.dead = true;
    for (const t of threads) for (const c of t.channels.values()) this.goInline(c);
    await Promise.all(threads.map((t) => t.terminate()));
  }

  private leastLoaded(): CodecThread {
    while (this.threads.length < this.size) this.threads.push(new CodecThread((t, why) => this.onDeath(t, why)));
    let best = this.threads[0]!;
    for (const t of this.threads) if (t.channels.size < best.channels.size) best = t;
    return best;
  }

  private goInline(c: Channel): void {
    reportLost(c);
    c.goInline();
  }

  private onDeath(t: CodecThread, why: string): void {
    const i = this.threads.indexOf(t);
    if (i < 0) return; // closed meanwhile
    const now = performance.now();
    this.deaths = [...this.deaths.filter((d) => now - d < DEATH_WINDOW_MS), now];
    const calls = [...t.channels.values()];
    if (this.deaths.length > MAX_DEATHS) {
      this.broken = `${this.deaths.length} codec threads died within ${DEATH_WINDOW_MS / 1000} s (last: ${why})`;
      this.log?.error({ why: this.broken }, 'webrtc codec pool broken: every call encodes and decodes inline from now on');
      const all = this.threads.splice(0);
      for (const other of all) {
        other.dead = true;
        for (const c of other.channels.values()) this.goInline(c);
        if (other !== t) void other.terminate();
      }
      return;
    }
    this.log?.warn({ why, calls: calls.length }, 'webrtc codec thread died: replaced; its calls continue there with fresh codec state');
    const fresh = new CodecThread((x, w) => this.onDeath(x, w));
    this.threads[i] = fresh;
    for (const c of calls) {
      reportLost(c);
      fresh.attach(c);
    }
  }
}

let shared: CodecPool | null = null;

/** Codec workers when WEBRTC_CODEC_THREADS is unset: none, the codec runs inline (see the header). */
export const DEFAULT_CODEC_THREADS = 0;

/** The process's codec pool (created on first use; `threads`, `log` and `decodeInline` count only then). */
export function codecPool(threads?: number, log?: Logger, decodeInline = false): CodecPool {
  shared ??= new CodecPool(threads ?? DEFAULT_CODEC_THREADS, log, decodeInline);
  return shared;
}
