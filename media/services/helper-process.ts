// Long-lived helper processes that a media process shares between its calls (the local STT's recognisers, the local
// TTS's synthesizers, the Piper voice's phonemizer), and the pool that keeps N of them running. send() writes a
// request to a helper's stdin as a frame: 1 byte kind + 4 bytes little-endian id + 4 bytes little-endian payload
// length + payload (a helper with a line protocol of its own, as the phonemizer, writes to `child.stdin` itself);
// each helper's output format is its own (subclasses parse stdout). Helpers never keep the media process alive by
// themselves (they exit when their stdin closes); a helper of a pool that dies is restarted with a growing backoff.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { placeChildProcess } from '../../core/affinity.ts';
import { resetChildPriority } from '../../core/priority.ts';

export abstract class HelperProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly ready: Promise<void>;
  dead = false;
  protected stderr = '';
  private markStarted: () => void = () => {};

  constructor(command: string, args: string[], what: string, startTimeoutMs: number) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    resetChildPriority(this.child.pid); // not at the media process's raised pacing priority (core/priority.ts)
    placeChildProcess(this.child.pid); // nor on its pacing core (core/affinity.ts, MEDIA_PACING_CPU)
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr]) (s as unknown as { unref?(): void }).unref?.();
    this.child.stdin.on('error', () => {}); // EPIPE after a crash is reported through 'exit'
    this.child.stderr.on('data', (d: Buffer) => {
      if (this.stderr.length < 4000) this.stderr += d.toString();
    });
    this.ready = new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        fail(new Error(`${what} did not start within ${startTimeoutMs / 1000} s`));
      }, startTimeoutMs);
      this.markStarted = () => {
        clearTimeout(timer);
        ok();
      };
      this.child.once('error', (err) => {
        clearTimeout(timer);
        fail(err);
      });
      this.child.once('exit', (code) => {
        clearTimeout(timer);
        fail(new Error(`${what} failed to start (exit ${code}): ${this.stderr.trim().slice(-500)}`));
      });
    });
    this.ready.catch(() => {});
    this.child.stdout.on('data', (d: Buffer) => this.onOutput(d));
    this.hold(true); // while it starts: whoever awaits `ready` is not left with an empty event loop
    this.child.once('exit', () => {
      this.dead = true;
      this.onDeath();
    });
  }

  /** The helper said it is ready. */
  protected started(): void {
    this.hold(this.busy());
    this.markStarted();
  }

  /** Requests outstanding (it then keeps the media process alive, see hold()). */
  protected abstract busy(): boolean;

  /** A chunk of the helper's stdout. */
  protected abstract onOutput(data: Buffer): void;

  /** The helper exited: fail what it was doing. */
  protected abstract onDeath(): void;

  /** Keep the media process alive while `busy` (a script awaiting a helper's answer must not just exit). */
  protected hold(busy: boolean): void {
    // both the output pipe (answers) and the process handle (its exit, should it die) count
    const out = this.child.stdout as unknown as { ref?(): void; unref?(): void };
    if (busy) {
      out.ref?.();
      this.child.ref();
    } else {
      out.unref?.();
      this.child.unref();
    }
  }

  send(kind: string, id: number, payload?: Buffer): boolean {
    if (this.dead || this.child.stdin.destroyed) return false;
    const header = Buffer.alloc(9);
    header.write(kind, 0, 'latin1');
    header.writeUInt32LE(id, 1);
    header.writeUInt32LE(payload?.length ?? 0, 5);
    this.child.stdin.write(payload ? Buffer.concat([header, payload]) : header);
    return true;
  }

  /** Ask it to quit ('Q', then end of input); killed after 2 s. Resolves once it has exited. */
  quit(): Promise<void> {
    return new Promise<void>((res) => {
      if (this.dead) return res();
      this.child.ref(); // wait for it even when nothing else keeps the process alive
      this.child.once('exit', () => res());
      this.send('Q', 0);
      this.child.stdin.end();
      setTimeout(() => this.child.kill('SIGKILL'), 2000).unref();
    });
  }
}

/** `size` helpers kept running: one that dies is replaced (100 ms backoff, doubling up to 5 s while it keeps dying). */
export class HelperPool<W extends HelperProcess> {
  readonly workers: W[] = [];
  private closed = false;
  private restarts = 0;

  constructor(
    size: number,
    private readonly make: () => W,
  ) {
    for (let i = 0; i < size; i++) this.workers.push(this.start());
  }

  private start(): W {
    const w = this.make();
    w.child.once('exit', () => {
      if (this.closed) return;
      const i = this.workers.indexOf(w);
      if (i < 0) return;
      const delay = Math.min(5000, 100 * 2 ** Math.min(6, this.restarts++));
      setTimeout(() => {
        if (!this.closed && this.workers[i] === w) this.workers[i] = this.start();
      }, delay).unref();
    });
    return w;
  }

  /** Resolves once every helper is up (rejects with the first failure). */
  ready(): Promise<void> {
    return Promise.all(this.workers.map((w) => w.ready)).then(() => undefined);
  }

  get pids(): number[] {
    return this.workers.map((w) => w.child.pid ?? 0);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((w) => w.quit()));
  }
}
