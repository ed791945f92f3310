// The WebRTC media plane on a thread of its own (WEBRTC_MEDIA_THREAD=1): every peer connection of the media process
// (node-datachannel, Opus, the jitter buffer, RTP packetizing and SRTP, the events data channel) runs on one worker
// thread as the ordinary WebRtcTransport (plane-thread.ts); the main thread keeps the pipeline and sees each call
// through a PlanePeer, the same Transport interface. Why: with many calls, the Opus encoding and SRTP sends of each
// 20 ms tick hold up the main thread and the caller packets behind it; here they run beside it on another core.
// Traffic: one message per event-loop turn each way (down: all calls' agent PCM in one transferred buffer, then events
// and close/destroy; up: decoded caller audio, then connected/failed/gone/lost); offers and candidates are requests.
// node-datachannel may be loaded by one thread of a process only, never again after it ended: the main thread never
// loads it with the plane on (signaling.ts imports the transport lazily), and the plane thread is never restarted.
// It keeps the main thread's raised priority (core/priority.ts), runs Opus as WASM, shares its counters (metrics.ts).
// A fault on it ends its calls (connected ones as pipeline_error, joining ones as never connected), not the thread.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../core/logger.ts';
import type { CloseKind } from '../transports/types.ts';
import type { Stall, ThreadStageCpu } from '../stage-cpu.ts';
import { shareWebRtcCounts } from './metrics.ts';
import { OfferError, PeerListeners, type WebRtcOptions, type WebRtcPeer } from './peer-types.ts';

/** PCM of many calls in one buffer: part i is `lens[i]` samples of call `ids[i]`. */
export interface PlaneAudio {
  ids: number[];
  lens: number[];
  pcm: Int16Array;
}
export type DownOp = ['event', number, string] | ['close', number, CloseKind, string | undefined] | ['destroy', number];
export type UpOp = ['connected', number] | ['failed', number, string] | ['gone', number] | ['lost', number, string];
type PeerOptions = Omit<WebRtcOptions, 'logger' | 'codecThreads' | 'codecDecode'>;
export type ToPlane =
  | { t: 'down'; audio?: PlaneAudio; ops: DownOp[] }
  | { t: 'answer'; req: number; id: number; sdp: string; options: PeerOptions }
  | { t: 'renegotiate'; req: number; id: number; sdp: string }
  | { t: 'candidate'; req: number; id: number; candidate: string; mid: string | null }
  | { t: 'stages'; req: number }
  | { t: 'stalls'; req: number }
  | { t: 'stop' }
  | { t: 'crash' }
  | { t: 'block'; ms: number };
export type FromPlane =
  | { t: 'up'; audio?: PlaneAudio; ops: UpOp[] }
  | ({ t: 'res'; req: number; ok: true } & PlaneReply)
  | { t: 'res'; req: number; ok: false; offer: boolean; message: string };
/** What a request's reply carries: an answer's SDP and pc_id, a renegotiation's SDP, the stages, the stalls. */
export interface PlaneReply {
  sdp?: string;
  pcId?: string;
  stages?: ThreadStageCpu;
  stalls?: Stall[];
}
export interface PlaneInit {
  counts: SharedArrayBuffer;
  logLevel: string;
}

/**
 * The traffic of one event-loop turn in one direction, posted as one message when the turn's work is done: ops in
 * order, and every call's PCM copied at once into one buffer (the sender may reuse its own) that travels transferred.
 */
export class TurnBatch<Op> {
  private ops: Op[] = [];
  private ids: number[] = [];
  private lens: number[] = [];
  private buf = new Int16Array(1 << 16);
  private fill = 0;
  private scheduled = false;

  constructor(private readonly post: (ops: Op[], audio: PlaneAudio | null, transfer: ArrayBuffer[]) => void) {}

  audio(id: number, pcm: Int16Array): void {
    if (this.fill + pcm.length > this.buf.length) {
      const bigger = new Int16Array(Math.max(this.buf.length * 2, this.fill + pcm.length));
      bigger.set(this.buf.subarray(0, this.fill));
      this.buf = bigger;
    }
    this.buf.set(pcm, this.fill);
    this.fill += pcm.length;
    this.ids.push(id);
    this.lens.push(pcm.length);
    this.later();
  }

  op(op: Op): void {
    this.ops.push(op);
    this.later();
  }

  /** Drop what is queued (the other side is gone). */
  clear(): void {
    this.ops = [];
    this.ids = [];
    this.lens = [];
    this.fill = 0;
  }

  /** Post what is queued now (also run at the end of the turn). */
  flush(): void {
    this.scheduled = false;
    if (!this.ops.length && !this.ids.length) return;
    const audio: PlaneAudio | null = this.ids.length ? { ids: this.ids, lens: this.lens, pcm: this.buf.slice(0, this.fill) } : null;
    const ops = this.ops;
    this.clear();
    this.post(ops, audio, audio ? [audio.pcm.buffer as ArrayBuffer] : []);
  }

  private later(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }
}

/** Each packed part in order, as a view into the one buffer. */
export function unpackAudio(a: PlaneAudio, each: (id: number, pcm: Int16Array) => void): void {
  let off = 0;
  for (let i = 0; i < a.ids.length; i++) {
    const n = a.lens[i]!;
    each(a.ids[i]!, a.pcm.subarray(off, off + n));
    off += n;
  }
}

const THREAD_FILE = new URL('./plane-thread.ts', import.meta.url);

export class MediaPlane {
  private worker: Worker | null = null;
  private readonly counts = shareWebRtcCounts();
  private readonly peers = new Map<number, PlanePeer>();
  private readonly requests = new Map<number, { resolve(v: PlaneReply): void; reject(e: Error): void }>();
  private nextId = 1;
  private nextReq = 1;
  // this turn's traffic to the plane (dropped when there is no thread to take it)
  private readonly down = new TurnBatch<DownOp>((ops, audio, transfer) =>
    this.worker?.postMessage({ t: 'down', ops, ...(audio ? { audio } : {}) } satisfies ToPlane, transfer));
  /** why the plane thread is gone for good (closed, or it exited), or null */
  private ended: string | null = null;

  constructor(private readonly log: Logger, private readonly logLevel: string) {}

  /** The plane thread's id (the benchmark finds its CPU time in /proc), or null before the first peer. */
  get threadId(): number | null {
    return this.worker?.threadId ?? null;
  }

  /** Answer a browser offer on the plane thread. */
  async answer(offerSdp: string, o: WebRtcOptions): Promise<{ transport: PlanePeer; sdp: string }> {
    const { logger: _l, codecThreads: _c, codecDecode: _d, ...options } = o;
    const id = this.nextId++;
    const res = await this.request({ t: 'answer', req: 0, id, sdp: offerSdp, options });
    const peer = new PlanePeer(this, id, res.pcId!);
    this.peers.set(id, peer);
    return { transport: peer, sdp: res.sdp! };
  }

  /** The plane thread's CPU time and stages so far (bench/webrtc subtracts two), or null before it started. */
  async stages(): Promise<ThreadStageCpu | null> {
    if (!this.worker) return null;
    return (await this.request({ t: 'stages', req: 0 })).stages ?? null;
  }

  /** The plane thread's event-loop stalls (≥ 40 ms) since the last call (bench/webrtc): the first call starts the
   * thread's watch (a 5 ms timer, so off unless asked) and returns none. */
  async stalls(): Promise<Stall[]> {
    if (!this.worker) return [];
    return (await this.request({ t: 'stalls', req: 0 })).stalls ?? [];
  }

  request(m: Extract<ToPlane, { req: number }>): Promise<PlaneReply> {
    const w = this.start();
    m.req = this.nextReq++;
    return new Promise((resolve, reject) => {
      this.requests.set(m.req, { resolve, reject });
      w.postMessage(m);
    });
  }

  /** Agent audio of a call for this turn's message. */
  audio(id: number, pcm: Int16Array): void {
    this.down.audio(id, pcm);
  }

  op(op: DownOp): void {
    this.down.op(op);
  }

  forget(id: number): void {
    this.peers.delete(id);
  }

  /** Throw an uncaught exception on the plane thread (tests: what its calls do then). Never Worker.terminate():
   * that aborts the process while node-datachannel is loaded (plane-thread.ts). */
  crash(): void {
    this.worker?.postMessage({ t: 'crash' } satisfies ToPlane);
  }

  /** Hold the plane thread's event loop for `ms` (tests: a stall its watch must see). */
  block(ms: number): void {
    this.worker?.postMessage({ t: 'block', ms } satisfies ToPlane);
  }

  /** Stop the thread (process shutdown): its peers are destroyed, node-datachannel's runtime goes with it. */
  async close(): Promise<void> {
    this.ended ??= 'closed';
    const w = this.worker;
    if (!w) return;
    this.down.flush();
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.postMessage({ t: 'stop' } satisfies ToPlane);
    // never terminate() it (that aborts the process); a thread that does not end is left to the process's exit
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(() => {
      this.log.warn('webrtc media plane thread did not end within 5 s of its stop');
      resolve();
    }, 5000)))]);
    clearTimeout(timer);
  }

  /** Start the thread now (the media process's start), so the first offer does not wait for it to load. */
  warm(): void {
    this.start();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // one thread per process lifetime: node-datachannel cannot be loaded again by a second thread (plane-thread.ts)
    if (this.ended) throw new Error(`The WebRTC media plane is not running (${this.ended})`);
    const w = new Worker(THREAD_FILE, { workerData: { counts: this.counts, logLevel: this.logLevel } satisfies PlaneInit });
    this.worker = w;
    w.on('message', (m: FromPlane) => this.onMessage(m));
    w.on('error', (err) => this.log.error({ err }, 'webrtc media plane thread failed'));
    w.on('exit', (code) => this.died(w, code));
    return w;
  }

  private onMessage(m: FromPlane): void {
    if (m.t === 'up') {
      if (m.audio) unpackAudio(m.audio, (id, pcm) => this.peers.get(id)?.deliver(pcm));
      for (const op of m.ops) {
        const p = this.peers.get(op[1]);
        if (!p) continue;
        if (op[0] === 'connected') p.connected();
        else if (op[0] === 'failed') p.failed(op[2]);
        else if (op[0] === 'lost') p.lost(op[2]);
        else p.gone();
      }
    } else if (m.t === 'res') {
      const r = this.requests.get(m.req);
      if (!r) return;
      this.requests.delete(m.req);
      if (m.ok) r.resolve(m);
      else r.reject(m.offer ? new OfferError(m.message) : new Error(m.message));
    }
  }

  /** The thread ended (closed, or it failed in a way it could not catch): its peers are gone, its requests fail. */
  private died(w: Worker, code: number): void {
    if (this.worker !== w) return;
    this.worker = null;
    this.ended ??= `its thread exited (${code})`;
    this.down.clear();
    const peers = [...this.peers.values()];
    this.peers.clear();
    if (peers.length || this.requests.size) this.log.error({ code, calls: peers.length }, 'webrtc media plane thread exited: its calls end');
    for (const r of this.requests.values()) r.reject(new Error('the WebRTC media plane thread exited'));
    this.requests.clear();
    for (const p of peers) p.lost('the WebRTC media plane thread exited');
  }
}

/** A peer on the plane thread, as the signaling endpoint and the call runner see it. */
export class PlanePeer implements WebRtcPeer {
  readonly kind = 'webrtc';
  private phase: 'new' | 'connected' | 'closed' = 'new';
  private readonly listeners = new PeerListeners();
  private destroyed = false;
  /** set when the peer failed on the plane (or the plane's thread ended): the call ends as a pipeline error */
  lostWith: string | null = null;

  constructor(private readonly plane: MediaPlane, private readonly id: number, readonly pcId: string) {}

  async renegotiate(offerSdp: string): Promise<string> {
    if (this.phase === 'closed') throw new OfferError('The peer connection is closed');
    return (await this.plane.request({ t: 'renegotiate', req: 0, id: this.id, sdp: offerSdp })).sdp!;
  }

  async addRemoteCandidate(candidate: string, mid: string | null): Promise<void> {
    if (!candidate.trim()) return;
    await this.plane.request({ t: 'candidate', req: 0, id: this.id, candidate, mid });
  }

  onConnected(cb: () => void): void {
    this.listeners.onConnected(cb);
  }

  onFailed(cb: (why: string) => void): void {
    this.listeners.onFailed(cb);
  }

  sendAudio(pcm24k: Int16Array): void {
    if (this.phase !== 'closed') this.plane.audio(this.id, pcm24k);
  }

  sendEvent(event: Record<string, unknown>): void {
    if (this.phase !== 'closed') this.plane.op(['event', this.id, JSON.stringify(event)]);
  }

  onAudio(cb: (pcm16k: Int16Array) => void): void {
    this.listeners.onAudio(cb);
  }

  onClose(cb: () => void): void {
    this.listeners.onClose(cb);
  }

  close(kind: CloseKind, reason?: string): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.plane.op(['close', this.id, kind, reason]);
    this.plane.forget(this.id);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.phase = 'closed';
    this.plane.op(['destroy', this.id]);
    this.plane.forget(this.id);
  }

  // ── from the plane ──

  deliver(pcm16k: Int16Array): void {
    this.listeners.audio(pcm16k);
  }

  connected(): void {
    if (this.phase !== 'new') return;
    this.phase = 'connected';
    this.listeners.connected();
  }

  failed(why: string): void {
    if (this.phase !== 'new') return;
    this.listeners.failed(why);
  }

  /** The far end went away (the runner ends the call). */
  gone(): void {
    if (this.phase !== 'connected') return;
    this.phase = 'closed';
    this.plane.forget(this.id);
    this.listeners.gone();
  }

  /** The plane failed under this peer (or its thread ended). */
  lost(why: string): void {
    this.lostWith = why;
    if (this.phase === 'new') this.failed(this.lostWith);
    else this.gone();
  }
}
