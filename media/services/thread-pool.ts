// A small pool of worker threads that run a model's inference off the media process's event loop (the local
// Whisper recogniser and the Piper voice: both block while they compute, for tens to hundreds of milliseconds).
// Each thread loads the model once (workerData) and answers requests in order: { id, ...request } in,
// { id, result } or { id, error } out. A request goes to the thread with the fewest outstanding requests; a
// thread that fails or exits rejects what it had and is replaced at the next request. Idle threads never keep the
// process alive.
import { Worker } from 'node:worker_threads';

type Pending<R> = { resolve(r: R): void; reject(e: Error): void };

class Slot<R> {
  worker: Worker | null = null;
  ready: Promise<void> | null = null;
  readonly pending = new Map<number, Pending<R>>();
}

export class ThreadPool<Q extends object, R> {
  private readonly slots: Slot<R>[];
  private seq = 0;

  constructor(
    private readonly script: URL,
    private readonly workerData: unknown,
    size: number,
    private readonly what: string,
  ) {
    this.slots = Array.from({ length: Math.max(1, size) }, () => new Slot<R>());
  }

  get size(): number {
    return this.slots.length;
  }

  /** Requests sent and not answered yet, over all threads. */
  get outstanding(): number {
    return this.slots.reduce((n, s) => n + s.pending.size, 0);
  }

  /** Every thread started and its model loaded (rejects with the load error). */
  async ready(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.start(s)));
  }

  run(req: Q, transfer: ArrayBuffer[] = []): Promise<R> {
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size || (s.pending.size === slot.pending.size && s.worker && !slot.worker)) slot = s;
    const id = ++this.seq;
    // counted at once (not when the thread is up), so that requests made together spread over the threads
    const answer = new Promise<R>((resolve, reject) => slot.pending.set(id, { resolve, reject }));
    this.start(slot).then(
      () => {
        if (!slot.pending.has(id) || !slot.worker) return;
        slot.worker.ref();
        slot.worker.postMessage({ ...req, id }, transfer);
      },
      () => {}, // start() failing rejects every pending request of the slot
    );
    return answer;
  }

  private start(slot: Slot<R>): Promise<void> {
    if (slot.ready) return slot.ready;
    const w = new Worker(this.script, { workerData: this.workerData });
    w.unref();
    slot.worker = w;
    const fail = (err: Error) => {
      if (slot.worker !== w) return;
      slot.worker = null;
      slot.ready = null;
      const pending = [...slot.pending.values()];
      slot.pending.clear();
      for (const p of pending) p.reject(err);
      void w.terminate();
    };
    slot.ready = new Promise<void>((ok, bad) => {
      w.on('message', (m: { id: number; result?: R; error?: string; loaded?: boolean; loadError?: string }) => {
        if (m.loaded) return ok();
        if (m.loadError !== undefined) {
          bad(new Error(`${this.what}: ${m.loadError}`));
          return fail(new Error(`${this.what}: ${m.loadError}`));
        }
        const p = slot.pending.get(m.id);
        if (!p) return;
        slot.pending.delete(m.id);
        if (slot.pending.size === 0) w.unref();
        if (m.error !== undefined) p.reject(new Error(`${this.what}: ${m.error}`));
        else p.resolve(m.result as R);
      });
      w.on('error', (err) => {
        bad(err);
        fail(err);
      });
      w.on('exit', (code) => {
        const err = new Error(`${this.what} thread exited (${code})`);
        bad(err);
        fail(err);
      });
    });
    slot.ready.catch(() => {});
    return slot.ready;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.slots.map(async (s) => {
        const w = s.worker;
        s.worker = null;
        s.ready = null;
        for (const p of s.pending.values()) p.reject(new Error(`${this.what} closed`));
        s.pending.clear();
        if (w) await w.terminate();
      }),
    );
  }
}

/** In a pool thread: load the model, announce it, then answer each request with handle()'s result. */
export async function serveThread<Q, R>(port: import('node:worker_threads').MessagePort, load: () => Promise<(req: Q) => Promise<{ result: R; transfer?: ArrayBuffer[] }>>): Promise<void> {
  let handle: (req: Q) => Promise<{ result: R; transfer?: ArrayBuffer[] }>;
  try {
    handle = await load();
  } catch (err) {
    port.postMessage({ loadError: err instanceof Error ? err.message : String(err) });
    return;
  }
  port.postMessage({ loaded: true });
  let chain = Promise.resolve();
  port.on('message', (req: Q & { id: number }) => {
    chain = chain.then(async () => {
      try {
        const { result, transfer } = await handle(req);
        port.postMessage({ id: req.id, result }, transfer ?? []);
      } catch (err) {
        port.postMessage({ id: req.id, error: err instanceof Error ? err.message : String(err) });
      }
    });
  });
}
