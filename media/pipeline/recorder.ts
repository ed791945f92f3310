// Recorder tap: caller (16 kHz, upsampled) and agent (24 kHz) mixed onto one timeline of 24 kHz s16 (mixed with
// saturation as it arrives). Only a short window of the timeline is in memory: fixed 1-second blocks (48 KB) from a
// small pool; once the timeline has moved RESIDENT_BLOCKS past a block, the block is handed to a sink (a spool file
// in production, media/session/spool.ts) and its buffer goes back to the pool when the write is done. Memory per call
// is therefore flat however long the call runs. Audio that arrives for a block already written (a caller stream
// running seconds behind the agent) is mixed in on the sink by a read-modify-write, in order with the block writes
// (one serial queue of sink operations), so nothing is lost. Nothing on the audio path waits for the sink and the
// audio path allocates nothing (except a copy of such late audio).
import { wavHeader } from '../../core/audio/wav.ts';
import { LinearResampler } from '../../core/audio/resample.ts';

export const RECORDING_RATE = 24000;
const RATE = RECORDING_RATE;
/** Blocks kept in memory (the mixing window): audio up to this many seconds behind the newest sample mixes in memory. */
export const RESIDENT_BLOCKS = 3;

/** Where blocks of the mixed timeline go. Positions and lengths are in samples of the data chunk. */
export interface RecordingSink {
  /** Write samples at a position (the buffer is reused once the promise settles). */
  write(pcm: Int16Array, at: number): Promise<void>;
  /** Read n samples at a position; zeros where nothing was written. */
  read(at: number, n: number): Promise<Int16Array>;
  /** The data chunk ends at `samples`: write the final WAV header, close. */
  close(samples: number): Promise<void>;
  /** Drop everything (the call never started, or the recording was given up). */
  discard(): Promise<void>;
}

/** The finished recording: a mono 16-bit 24 kHz WAV. */
export interface RecordingResult {
  durationS: number;
  bytes: number;
}

export class Recorder {
  private readonly up = new LinearResampler(16000, RATE);
  /** the upsampled caller frame, reused (add() mixes it into the blocks at once) */
  private scratch = new Int16Array(0);
  private callerPos = 0; // samples at 24 kHz
  private end = 0;
  /** resident blocks: block index b lives in ring[b % RESIDENT_BLOCKS] while lo <= b < lo + RESIDENT_BLOCKS */
  private readonly ring: Array<Int16Array | null> = new Array<Int16Array | null>(RESIDENT_BLOCKS).fill(null);
  private lo = 0;
  /** block buffers whose write finished, zeroed, ready for reuse (fixed pool: RESIDENT_BLOCKS + the writes in flight) */
  private readonly free: Int16Array[] = [];
  private queue: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private finished: Promise<RecordingResult | null> | null = null;
  /** samples that arrived after their block had gone to the sink (mixed in there) */
  lateSamples = 0;
  /** block buffers ever allocated (the pool's size) */
  buffersAllocated = 0;

  constructor(
    private readonly t0: number,
    private readonly sink: RecordingSink,
    private readonly maxSeconds = 7300,
  ) {}

  /** caller audio as it arrives (16 kHz); placed at its stream position, realigned to the clock after gaps */
  addCaller(pcm16k: Int16Array, now: number): void {
    const need = Math.ceil(pcm16k.length * 1.5) + 3;
    if (this.scratch.length < need) this.scratch = new Int16Array(need);
    const up = this.up.process(pcm16k, this.scratch);
    const wall = Math.round(((now - this.t0) / 1000) * RATE) - up.length;
    if (wall - this.callerPos > RATE / 5) this.callerPos = wall; // client paused sending: keep the timeline
    this.add(up, this.callerPos);
    this.callerPos += up.length;
  }

  /** agent audio frame (24 kHz) at its playout time on the clock */
  addAgent(pcm24k: Int16Array, at: number): void {
    this.add(pcm24k, Math.max(0, Math.round(((at - this.t0) / 1000) * RATE)));
  }

  private add(pcm: Int16Array, pos: number): void {
    if (this.finished) return;
    let i = 0;
    while (i < pcm.length) {
      const p = pos + i;
      const b = Math.floor(p / RATE);
      if (b >= this.maxSeconds) break;
      const off = p - b * RATE;
      const n = Math.min(pcm.length - i, RATE - off);
      const block = this.block(b);
      if (block) mix(block, off, pcm, i, n);
      else this.late(pcm.slice(i, i + n), p);
      i += n;
    }
    const last = Math.min(pos + pcm.length, this.maxSeconds * RATE);
    if (last > this.end) this.end = last;
  }

  /** The in-memory block b (older resident blocks go to the sink to make room); null when b already went there. */
  private block(b: number): Int16Array | null {
    if (b < this.lo) return null;
    if (b >= this.lo + RESIDENT_BLOCKS) {
      const newLo = b - RESIDENT_BLOCKS + 1;
      for (let k = this.lo; k < Math.min(newLo, this.lo + RESIDENT_BLOCKS); k++) this.flush(k, RATE);
      this.lo = newLo;
    }
    const slot = b % RESIDENT_BLOCKS;
    let block = this.ring[slot];
    if (!block) {
      block = this.free.pop() ?? this.allocate();
      this.ring[slot] = block;
    }
    return block;
  }

  private allocate(): Int16Array {
    this.buffersAllocated++;
    return new Int16Array(RATE);
  }

  /** Block k (resident) goes to the sink; its buffer returns to the pool once written. Untouched blocks stay holes. */
  private flush(k: number, samples: number): void {
    const slot = k % RESIDENT_BLOCKS;
    const block = this.ring[slot];
    if (!block) return;
    this.ring[slot] = null;
    this.enqueue(async () => {
      try {
        if (samples > 0) await this.sink.write(samples === RATE ? block : block.subarray(0, samples), k * RATE);
      } finally {
        block.fill(0);
        this.free.push(block);
      }
    });
  }

  /** Audio for a block already on the sink: mixed in there, after the writes queued before it. */
  private late(pcm: Int16Array, at: number): void {
    this.lateSamples += pcm.length;
    this.enqueue(async () => {
      const cur = await this.sink.read(at, pcm.length);
      mix(cur, 0, pcm, 0, pcm.length);
      await this.sink.write(cur, at);
    });
  }

  private enqueue(op: () => Promise<void>): void {
    this.queue = this.queue.then(() => (this.failure ? undefined : op())).catch((err: unknown) => {
      this.failure ??= err;
    });
  }

  /** Resolves once the blocks handed to the sink so far are written (a time-compressed feed waits on it, as real time would). */
  flushed(): Promise<void> {
    return this.queue;
  }

  get durationS(): number {
    return this.end / RATE;
  }

  /** The first sink failure (disk full, …): the recording is then given up at finish(). */
  get error(): unknown {
    return this.failure;
  }

  /** Write what is still in memory, fix the WAV header; null when the sink failed (the recording is dropped). */
  finish(): Promise<RecordingResult | null> {
    this.finished ??= (async () => {
      for (let k = this.lo; k < this.lo + RESIDENT_BLOCKS; k++) this.flush(k, Math.max(0, Math.min(RATE, this.end - k * RATE)));
      this.enqueue(() => this.sink.close(this.end));
      await this.queue;
      if (this.failure) {
        await this.sink.discard().catch(() => {});
        return null;
      }
      return { durationS: this.durationS, bytes: 44 + this.end * 2 };
    })();
    return this.finished;
  }

  /** The call never started: nothing is kept. */
  async discard(): Promise<void> {
    this.finished ??= Promise.resolve(null);
    await this.queue;
    await this.sink.discard().catch(() => {});
  }
}

function mix(block: Int16Array, off: number, pcm: Int16Array, from: number, n: number): void {
  const end = off + n;
  for (let k = off, j = from; k < end; k++, j++) {
    let v = block[k]! + pcm[j]!; // saturating mix
    if (v > 32767) v = 32767;
    else if (v < -32768) v = -32768;
    block[k] = v;
  }
}

/** The 44-byte header of a mono 16-bit 24 kHz WAV whose data chunk holds `samples` samples. */
export function recordingHeader(samples: number): Buffer {
  return wavHeader({ sampleRate: RATE, channels: 1, bitsPerSample: 16, dataBytes: samples * 2 });
}

/** A sink kept in memory (unit tests, the bench's "everything in memory" baseline): wav() gives the file. */
export class MemorySink implements RecordingSink {
  private readonly blocks: Int16Array[] = [];
  private samples = 0;

  async write(pcm: Int16Array, at: number): Promise<void> {
    for (let i = 0; i < pcm.length; ) {
      const p = at + i;
      const b = Math.floor(p / RATE);
      const block = (this.blocks[b] ??= new Int16Array(RATE));
      const n = Math.min(pcm.length - i, RATE - (p - b * RATE));
      block.set(pcm.subarray(i, i + n), p - b * RATE);
      i += n;
    }
  }

  async read(at: number, n: number): Promise<Int16Array> {
    const out = new Int16Array(n);
    for (let i = 0; i < n; ) {
      const p = at + i;
      const b = Math.floor(p / RATE);
      const k = Math.min(n - i, RATE - (p - b * RATE));
      const block = this.blocks[b];
      if (block) out.set(block.subarray(p - b * RATE, p - b * RATE + k), i);
      i += k;
    }
    return out;
  }

  async close(samples: number): Promise<void> {
    this.samples = samples;
  }

  async discard(): Promise<void> {
    this.blocks.length = 0;
  }

  wav(): Buffer {
    const out = new Int16Array(this.samples);
    for (let b = 0; b * RATE < this.samples; b++) {
      const block = this.blocks[b];
      if (block) out.set(block.subarray(0, Math.min(RATE, this.samples - b * RATE)), b * RATE);
    }
    return Buffer.concat([recordingHeader(this.samples), Buffer.from(out.buffer, out.byteOffset, out.byteLength)]);
  }
}
