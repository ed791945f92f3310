// WebRtcCaller peers (peer.ts) in a child process (caller-process.ts), for tests whose own process must not load
// node-datachannel (the server's WebRTC media-plane thread does). Same methods, asynchronous; state() reads the
// caller's counters and events.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CallerReply, CallerRequest, CallerState } from './caller-process.ts';

type Req = CallerRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export class CallerProcess {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private next = 1;

  constructor() {
    this.child = fork(fileURLToPath(new URL('./caller-process.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (r: CallerReply) => {
      const w = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      if (r.ok) w?.resolve(r.value);
      else w?.reject(new Error(r.message));
    });
    this.child.on('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error('the caller process exited'));
      this.waiting.clear();
    });
  }

  ask(r: Req): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ ...r, id });
    });
  }

  async caller(name = 'test-caller'): Promise<RemoteCaller> {
    return new RemoteCaller(this, (await this.ask({ op: 'create', name })) as number);
  }

  close(): void {
    this.child.kill();
  }
}

export class RemoteCaller {
  constructor(private readonly p: CallerProcess, private readonly id: number) {}

  private call(method: Extract<CallerRequest, { op: 'call' }>['method'], ...args: unknown[]): Promise<unknown> {
    return this.p.ask({ op: 'call', caller: this.id, method, args });
  }

  offer(o: { trickle?: boolean } = {}): Promise<string> {
    return this.call('offer', o) as Promise<string>;
  }

  reoffer(): Promise<string> {
    return this.call('reoffer') as Promise<string>;
  }

  async accept(sdp: string): Promise<void> {
    await this.call('accept', sdp);
  }

  async gathered(): Promise<void> {
    await this.call('gathered');
  }

  /** `ms` of a 440 Hz tone (speech for the scripted engines) or silence, in real time; resolves when sent. */
  async send(ms: number, tone = true): Promise<void> {
    await this.call('send', ms, tone);
  }

  async hangup(): Promise<void> {
    await this.call('hangup');
  }

  async close(): Promise<void> {
    await this.call('close');
  }

  state(): Promise<CallerState> {
    return this.p.ask({ op: 'state', caller: this.id }) as Promise<CallerState>;
  }
}
