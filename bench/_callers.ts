// Pieces the call benchmarks share: a bench re-running itself in a child process under another role (clients,
// vendor fakes) so the server's CPU and memory figures are its own, a WebSocket caller on /api/v1/ws/audio
// that streams caller audio in real time, and the turn taking of a caller that speaks and pauses (SpeakingCaller,
// any transport: bench/pipeline MODE=vendors, bench/webrtc SPEAK=1).
import { fork, type ChildProcess } from 'node:child_process';
import { placeChildProcess } from '../core/affinity.ts';
import { resetChildPriority } from '../core/priority.ts';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

/** Run the bench module `moduleUrl` (its import.meta.url) again as a child with argv[2] = `role`, send it `job` (if
 * any); `result` is the first message it sends back, or a rejection if it exits before sending one. */
export function forkRole<T>(moduleUrl: string, role: string, job?: unknown): { result: Promise<T>; kill(): void; child: ChildProcess } {
  const child = fork(fileURLToPath(moduleUrl), [role], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  // forked from a raised pacing thread (core/priority.ts): callers and fakes run at the run's own priority, and off
  // its core when MEDIA_PACING_CPU gives it one (core/affinity.ts)
  resetChildPriority(child.pid);
  placeChildProcess(child.pid);
  const result = new Promise<T>((resolve, reject) => {
    child.once('message', (r) => resolve(r as T));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${role} process exited (${code})`)));
  });
  if (job !== undefined) child.send(job as object);
  return { result, kill: () => child.kill(), child };
}

export interface WsCaller {
  origin: string;
  key: string;
  callId: string;
  /** ms of caller audio per message; one message is sent every frameMs in real time */
  frameMs: number;
  /** the caller hangs up (close 1000) this long after the socket opened */
  seconds: number;
  /** the next message of caller audio (16 kHz s16le); `now` is when it is sent */
  frame(now: number): Buffer;
  /** the socket opened at `start`, before the first frame */
  onOpen?(start: number): void;
  /** a binary message (agent audio) arrived at `now` */
  onAudio?(now: number): void;
  /** the socket closed (not called when it failed): the close code (1013: the media node refused the call) */
  onClose?(code: number): void;
}

/** One caller on /api/v1/ws/audio/:id; resolves once its socket has closed or failed. */
export function wsCaller(c: WsCaller): Promise<void> {
  return new Promise<void>((resolve) => {
    const ws = new WebSocket(`${c.origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${c.callId}?api_key=${c.key}`);
    let timer: NodeJS.Timeout | null = null;
    ws.on('open', () => {
      const start = performance.now();
      c.onOpen?.(start);
      let k = 0;
      const send = () => {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(c.frame(performance.now()));
        k++;
        timer = setTimeout(send, Math.max(0, start + k * c.frameMs - performance.now()));
      };
      send();
      setTimeout(() => ws.close(1000), c.seconds * 1000);
    });
    ws.on('message', (_d, binary) => {
      if (binary) c.onAudio?.(performance.now());
    });
    ws.on('close', (code) => {
      if (timer) clearTimeout(timer);
      c.onClose?.(code);
      resolve();
    });
    ws.on('error', () => resolve());
  });
}

/** a frame arriving more than this after its playout time counts as late */
export const LATE_MS = 40;

/** What a bench's speaking callers measured, summed over its callers (one object shared by all of them). */
export interface SpeakingStats {
  /** reply pacing: inter-arrival |Δ − 20 ms| of agent frames within a burst, after its 6-frame lead */
  jitter: number[];
  /** jitter samples ≥ 15 ms by shape: the frame came < 5 ms after the previous one (a catch-up burst) or > 35 ms */
  tail: { burst: number; gap: number };
  /** each of those samples: when it arrived (performance.timeOrigin-based, comparable with the server's tick times)
   * and its inter-arrival time */
  tailAt: Array<[number, number]>;
  /** per answered turn, for callers given an id: [id, end of speech, first reply audio] as wall times
   * (performance.timeOrigin-based, comparable with the server's stored turn times) */
  turnAt: Array<[string, number, number]>;
  /** per turn: end of the caller's speech → first agent audio of the reply (ms) */
  replyMs: number[];
  /** agent frames received */
  frames: number;
  /** agent frames that arrived more than LATE_MS after their playout time */
  late: number;
  /** per run of late frames (one utterance's frames late one after another): its first frame's playout time and
   * arrival (wall times, as `turnAt`) and its index in the utterance */
  lateAt: Array<[playout: number, arrival: number, k: number]>;
  /** sentences the callers spoke */
  spoken: number;
  /** sentences answered (reply audio arrived) */
  turns: number;
  /** sentences with no reply audio within 8 s (the caller then spoke again) */
  unanswered: number;
}

export const speakingStats = (): SpeakingStats => ({ jitter: [], tail: { burst: 0, gap: 0 }, tailAt: [], turnAt: [], lateAt: [], replyMs: [], frames: 0, late: 0, spoken: 0, turns: 0, unanswered: 0 });

/** The k-th frame of `frameSamples` samples of `speech`, zero-padded at the end of the sentence. */
export function speechFrame(speech: Int16Array, k: number, frameSamples: number): Int16Array {
  const f = new Int16Array(frameSamples);
  f.set(speech.subarray(k * frameSamples, (k + 1) * frameSamples));
  return f;
}

/**
 * One caller's turn taking, whatever its transport: it speaks a sentence (`speechSamples` at 16 kHz, ending on its
 * last loud frame: the end of the sentence is the end of speech), stays on the line in silence until the agent's
 * reply is over (800 ms without agent audio after the reply started, or 8 s without any reply), waits 300 ms and
 * speaks again. It times end of speech → first reply audio and judges the agent's frames:
 *   - pacing: a gap of more than 100 ms starts a new burst, whose first 6 frames are the pacer's lead (frames 0..4
 *     come at once, 100 ms ahead); after that |Δ − 20 ms| per frame
 *   - playout: a client starts playing an utterance's first frame on arrival and frame k at first + k·20 ms; an
 *     utterance runs from its first frame until the caller speaks again, so a gap inside it (an underrun, a late
 *     tick) pushes every later frame past its time instead of being taken for a new utterance
 * Frame-based transports call `frame(now)` once per caller frame; others call `startsSpeaking` and `spoke`.
 */
export class SpeakingCaller {
  private lastAudio = 0;
  private prev = 0;
  private inBurst = 0;
  private speaking = false;
  /** frame mode: index of the next frame of the sentence */
  private k = 0;
  private endOfSpeech = 0;
  private waitingReply = false;
  private nextSpeakAt = Infinity;
  /** the agent utterance being received (the greeting, then each reply): arrival of its first frame, frames so far */
  private uttFirst = 0;
  private uttN = -1; // -1: the next agent frame starts a new utterance
  /** the utterance's last frame was late */
  private lateRun = false;

  constructor(
    private readonly s: SpeakingStats,
    /** samples (16 kHz) per caller frame, and in the sentence; `id` (the call's) puts its turns in `turnAt` */
    private readonly o: { frameSamples: number; speechSamples: number; id?: string },
  ) {}

  /** The line opened at `start`: the first sentence comes after the greeting, the callers staggered over 2 s. */
  open(start: number, index: number): void {
    this.nextSpeakAt = start + 2500 + (index % 40) * 50;
  }

  /** True when the caller starts its sentence at `now` (quiet, the last reply over, its time come). */
  startsSpeaking(now: number): boolean {
    if (this.waitingReply && this.endOfSpeech && ((this.lastAudio > this.endOfSpeech && now - this.lastAudio > 800) || now - this.endOfSpeech > 8000)) {
      if (this.lastAudio < this.endOfSpeech) this.s.unanswered++;
      this.waitingReply = false;
      this.endOfSpeech = 0;
      this.nextSpeakAt = now + 300;
    }
    if (this.speaking || this.waitingReply || now < this.nextSpeakAt) return false;
    this.speaking = true;
    this.uttN = -1; // the agent's next audio is the reply to this sentence
    this.s.spoken++;
    return true;
  }

  /** The sentence's audio ended at `at` (wall time): the caller now waits for the reply. */
  spoke(at: number): void {
    this.speaking = false;
    this.waitingReply = true;
    this.endOfSpeech = at;
  }

  /** Frame mode, once per caller frame sent at `now`: the index of the sentence's frame to send, or -1 (silence).
   * A frame sent at `now` carries the audio of [now, now + frame length). */
  frame(now: number): number {
    if (!this.speaking && this.startsSpeaking(now)) this.k = 0;
    if (!this.speaking) return -1;
    const k = this.k++;
    const pos = (k + 1) * this.o.frameSamples;
    if (pos >= this.o.speechSamples) this.spoke(now + (this.o.frameSamples - (pos - this.o.speechSamples)) / 16);
    return k;
  }

  /** An agent audio frame arrived at `now`. */
  onAudio(now: number): void {
    const s = this.s;
    if (this.waitingReply && this.endOfSpeech && this.lastAudio < this.endOfSpeech) {
      s.replyMs.push(now - this.endOfSpeech);
      if (this.o.id) s.turnAt.push([this.o.id, performance.timeOrigin + this.endOfSpeech, performance.timeOrigin + now]);
      s.turns++;
    }
    if (this.uttN < 0) {
      this.uttFirst = now;
      this.uttN = 0;
      this.lateRun = false;
    }
    const playout = this.uttFirst + this.uttN * 20;
    const late = now > playout + LATE_MS;
    if (late) s.late++;
    if (late && !this.lateRun) s.lateAt.push([performance.timeOrigin + playout, performance.timeOrigin + now, this.uttN]);
    this.lateRun = late;
    this.uttN++;
    if (now - this.prev > 100) this.inBurst = 0;
    if (this.inBurst >= 6) {
      const d = now - this.prev;
      s.jitter.push(Math.abs(d - 20));
      if (d < 5) s.tail.burst++;
      else if (d > 35) s.tail.gap++;
      if (Math.abs(d - 20) >= 15) s.tailAt.push([performance.timeOrigin + now, d]);
    }
    this.inBurst++;
    this.prev = now;
    this.lastAudio = now;
    s.frames++;
  }
}
