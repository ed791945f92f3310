// A small pool of helper processes that run a model's inference off the media process's event loop (the local
// Whisper recogniser and the Piper voice: both block while they compute).
// Each helper loads the model once (its pool data) and answers requests in order: { id, ...request } in,
// { id, result } or { id, error } out. A request goes to the helper with the fewest outstanding requests; a
// helper that fails or exits rejects what it had and is replaced at the next request. Idle helpers never keep the
// process alive.
// Processes, not worker threads: the native addons (onnxruntime-node, whisper.cpp) tear down badly when a worker
// thread is terminated at process exit (std::terminate on a Napi::Error, or a segfault), and a child process dies on
// its own when the parent goes (its IPC channel closes).
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { placeChildProcess } from '../../core/affinity.ts';
import { resetHelperPriority } from '../../core/priority.ts';

type Pending<R> = { resolve(r: R): void; reject(e: Error): void };

class Slot<R> {
  worker: ChildProcess | null = null;
  ready: Promise<void> | null = null;
  readonly pending = new Map<number, Pending<R>>();
}

function setRef(w: ChildProcess, on: boolean): void {
  const ch = w.channel as { ref?(): void; unref?(): void } | undefined | null;
  if (on) {
    w.ref();
    ch?.ref?.();
  } else {
    w.unref();
    ch?.unref?.();
  }
}

/** The environment variable that carries a helper's pool data (JSON). */
const DATA_ENV = 'MEDIA_POOL_WORKER_DATA';

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

  /** Requests sent and not answered yet, over all helpers. */
  get outstanding(): number {
    return this.slots.reduce((n, s) => n + s.pending.size, 0);
  }

  /** Every helper started and its model loaded (rejects with the load error). */
  async ready(): Promise<void> {
    await Promise.all(this.slots.map((s) => this.start(s)));
  }

  run(req: Q, _transfer: ArrayBuffer[] = []): Promise<R> {
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size || (s.pending.size === slot.pending.size && s.worker && !slot.worker)) slot = s;
    const id = ++this.seq;
    // counted at once (not when the helper is up), so that requests made together spread over the helpers
    const answer = new Promise<R>((resolve, reject) => slot.pending.set(id, { resolve, reject }));
    this.start(slot).then(
      () => {
        const w = slot.worker;
        if (!slot.pending.has(id) || !w || !w.connected) return;
        setRef(w, true);
        w.send({ ...req, id });
      },
      () => {}, // start() failing rejects every pending request of the slot
    );
    return answer;
  }

  private start(slot: Slot<R>): Promise<void> {
    if (slot.ready) return slot.ready;
    const w = fork(fileURLToPath(this.script), [], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, [DATA_ENV]: JSON.stringify(this.workerData) },
    });
    placeChildProcess(w.pid); // off the media process's pacing core (core/affinity.ts, MEDIA_PACING_CPU)
    // referenced while it loads and while it has requests: only an idle helper lets the process exit
    setRef(w, true);
    slot.worker = w;
    const fail = (err: Error) => {
      if (slot.worker !== w) return;
      slot.worker = null;
      slot.ready = null;
      const pending = [...slot.pending.values()];
      slot.pending.clear();
      for (const p of pending) p.reject(err);
      if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    };
    slot.ready = new Promise<void>((ok, bad) => {
      w.on('message', (m: { id: number; result?: R; error?: string; loaded?: boolean; loadError?: string }) => {
        if (m.loaded) {
          if (slot.pending.size === 0) setRef(w, false);
          return ok();
        }
        if (m.loadError !== undefined) {
          bad(new Error(`${this.what}: ${m.loadError}`));
          return fail(new Error(`${this.what}: ${m.loadError}`));
        }
        const p = slot.pending.get(m.id);
        if (!p) return;
        slot.pending.delete(m.id);
        if (slot.pending.size === 0) setRef(w, false);
        if (m.error !== undefined) p.reject(new Error(`${this.what}: ${m.error}`));
        else p.resolve(m.result as R);
      });
      w.on('error', (err) => {
        bad(err);
        fail(err);
      });
      w.on('exit', (code, signal) => {
        const err = new Error(`${this.what} helper exited (${signal ?? code})`);
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
        if (w && w.exitCode === null && w.signalCode === null) {
          const gone = new Promise<void>((r) => w.once('exit', () => r()));
          setRef(w, true); // an unreferenced child's exit would not keep this wait alive
          w.kill('SIGKILL');
          await gone;
        }
      }),
    );
  }
}

/** In a pool helper: the data its pool gave it. */
export function poolData<T>(): T {
  return JSON.parse(process.env[DATA_ENV] ?? 'null') as T;
}

/** A pool helper's end of the channel to its pool (the IPC channel of this child process). */
export interface PoolPort {
  postMessage(m: unknown, transfer?: ArrayBuffer[]): void;
  on(event: 'message', fn: (m: never) => void): void;
}

export const poolPort: PoolPort = {
  postMessage: (m) => void process.send?.(m),
  on: (event, fn) => void process.on(event, fn as (m: unknown) => void),
};

/** A pool helper's start: leave with the media process, drop its priority, load, announce; null if loading failed. */
async function startHelper<H>(port: PoolPort, load: () => Promise<H>): Promise<H | null> {
  // the media process went away (its IPC channel closed): so does the helper
  process.on('disconnect', () => process.exit(0));
  resetHelperPriority(); // not at the media process's raised pacing priority (core/priority.ts)
  try {
    const handle = await load();
    port.postMessage({ loaded: true });
    return handle;
  } catch (err) {
    port.postMessage({ loadError: err instanceof Error ? err.message : String(err) });
    return null;
  }
}

/** In a pool helper: load the model, announce it, then answer each request with handle()'s result. */
export async function serveThread<Q, R>(port: PoolPort, load: () => Promise<(req: Q) => Promise<{ result: R; transfer?: ArrayBuffer[] }>>): Promise<void> {
  const handle = await startHelper(port, load);
  if (!handle) return;
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

/**
 * In a pool helper: like serveThread, but the requests that arrived while the last batch ran are answered as one
 * batch (at most `maxBatch`): a model with a batch dimension runs them in one inference.
 */
export async function serveBatches<Q, R>(port: PoolPort, load: () => Promise<(reqs: Q[]) => Promise<R[]>>, maxBatch = 16): Promise<void> {
  const handle = await startHelper(port, load);
  if (!handle) return;
  const queue: Array<Q & { id: number }> = [];
  let running = false;
  const drain = async () => {
    running = true;
    while (queue.length) {
      const batch = queue.splice(0, maxBatch);
      try {
        const results = await handle(batch);
        batch.forEach((req, i) => port.postMessage({ id: req.id, result: results[i] }));
      } catch (err) {
        for (const req of batch) port.postMessage({ id: req.id, error: err instanceof Error ? err.message : String(err) });
      }
    }
    running = false;
  };
  port.on('message', (req: Q & { id: number }) => {
    queue.push(req);
    // the current turn of the helper's event loop may bring more requests: they join this batch
    if (!running) setImmediate(() => void drain());
    running = true;
  });
}

/** A pool size: `workers`, else the environment variable's whole number, else one per core (at most 64). */
export function poolSize(envVar: string, workers?: number): number {
  const n = workers ?? Number(process.env[envVar]);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : Math.max(1, os.availableParallelism());
}

/**
 * One process-wide pool per model (Whisper decoders, Piper voices): made on first use, remade when its key (the
 * model file) changes, and dropped when it cannot load, so the next call tries again (the caller falls back).
 */
export class SharedPool<Q extends object, R> {
  private pool: ThreadPool<Q, R> | null = null;
  private key = '';

  /** The pool for `key`, every helper started with its model loaded; rejects with the load error. */
  async get(key: string, create: () => ThreadPool<Q, R>): Promise<ThreadPool<Q, R>> {
    if (!this.pool || this.key !== key) {
      await this.pool?.close();
      this.pool = create();
      this.key = key;
    }
    const p = this.pool;
    try {
      await p.ready();
    } catch (err) {
      if (this.pool === p) {
        this.pool = null;
        await p.close();
      }
      throw err;
    }
    return p;
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = null;
    await p?.close();
  }
}
