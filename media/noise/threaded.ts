// The noise gate off the event loop. Inline on the media process's event loop RNNoise takes a large share of a core
// with many callers speaking at once, and a burst of queued frames holds every call's output pacing up (see
// docs/benchmarks.md). Here the gates of all calls live in one worker thread per media process: frames submitted
// within the same turn of the event loop go over as one message (buffers transferred, not copied) and come back
// denoised, in order, per call. The gate itself is the same code as inline (media/noise/index.ts), so the audio is
// identical, only slightly later. If the thread dies, its calls fall back to an inline gate from that moment (the
// frames in flight are lost).
import { Worker } from 'node:worker_threads';
import { createNoiseGate, type NoiseGate, type NoiseModel } from './index.ts';

/** A denoiser whose output comes back asynchronously, in submission order. */
export interface AsyncDenoiser {
  submit(pcm: Int16Array, done: (out: Int16Array) => void): void;
  close(): void;
}

interface Slot {
  done: Array<(out: Int16Array) => void>;
  fallback: Promise<NoiseGate> | null;
  opts: { model: NoiseModel; enhancementLevel: number };
}

class GateThread {
  private readonly worker: Worker;
  private readonly slots = new Map<number, Slot>();
  private batchIds: number[] = [];
  private batchFrames: Int16Array[] = [];
  private scheduled = false;
  private refs = 0;
  dead = false;

  constructor(private readonly onDead: () => void) {
    this.worker = new Worker(new URL('./thread.ts', import.meta.url));
    this.worker.unref();
    this.worker.on('message', (msg: { t: string; ids?: number[]; frames?: Int16Array[]; id?: number }) => {
      if (msg.t !== 'done') return;
      const ids = msg.ids!;
      const frames = msg.frames!;
      for (let i = 0; i < ids.length; i++) this.slots.get(ids[i]!)?.done.shift()?.(frames[i]!);
    });
    const die = () => {
      if (this.dead) return;
      this.dead = true;
      this.onDead();
      // frames in flight are lost (an empty result); later ones go through an inline gate
      for (const s of this.slots.values()) {
        for (const d of s.done.splice(0)) d(new Int16Array(0));
      }
    };
    this.worker.on('error', die);
    this.worker.on('exit', die);
  }

  open(id: number, opts: { model: NoiseModel; enhancementLevel: number }): Slot {
    const slot: Slot = { done: [], fallback: null, opts };
    this.slots.set(id, slot);
    if (this.refs++ === 0) this.worker.ref();
    this.worker.postMessage({ t: 'open', id, model: opts.model, level: opts.enhancementLevel });
    return slot;
  }

  run(id: number, pcm: Int16Array, done: (out: Int16Array) => void): void {
    const slot = this.slots.get(id)!;
    slot.done.push(done);
    // a copy we own (the caller's frame may be a view into a larger buffer it reuses)
    this.batchIds.push(id);
    this.batchFrames.push(pcm.slice());
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (!this.batchIds.length) return;
    const ids = this.batchIds;
    const frames = this.batchFrames;
    this.batchIds = [];
    this.batchFrames = [];
    this.worker.postMessage({ t: 'run', ids, frames }, frames.map((f) => f.buffer as ArrayBuffer));
  };

  close(id: number): void {
    if (!this.slots.delete(id)) return;
    if (!this.dead) this.worker.postMessage({ t: 'close', id });
    if (--this.refs === 0) this.worker.unref();
  }
}

let thread: GateThread | null = null;
let nextId = 1;

/** A call's noise gate, run on the shared gate thread. Same contract as createNoiseGate, asynchronous output. */
export function createThreadedNoiseGate(opts: { model: NoiseModel; enhancementLevel: number }): AsyncDenoiser {
  const t = (thread ??= new GateThread(() => {
    if (thread === t) thread = null; // the next call starts a new thread
  }));
  const id = nextId++;
  const slot = t.open(id, opts);
  let inline: NoiseGate | null = null;
  let closed = false;
  return {
    submit(pcm, done) {
      if (closed) return done(pcm);
      if (!t.dead) return t.run(id, pcm, done);
      // the thread is gone: this call's gate continues inline (a fresh state: a few ms of re-convergence)
      slot.fallback ??= createNoiseGate(opts);
      void slot.fallback.then(
        (g) => {
          inline = g;
          done(closed ? pcm : g.process(pcm));
        },
        () => done(pcm),
      );
    },
    close() {
      if (closed) return;
      closed = true;
      t.close(id);
      inline?.close();
    },
  };
}

/** Process start: start the gate thread and load RNNoise in it (one frame of silence through a gate and back). */
export function warmNoiseGateThread(): Promise<void> {
  const g = createThreadedNoiseGate({ model: 'voice-focus', enhancementLevel: 0.8 });
  return new Promise<void>((resolve) =>
    g.submit(new Int16Array(320), () => {
      g.close();
      resolve();
    }),
  );
}
