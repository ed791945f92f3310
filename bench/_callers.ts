// Pieces the call benchmarks share: a bench re-running itself in a child process under another role (clients,
// vendor fakes) so the server's CPU and memory figures are its own, and a WebSocket caller on /api/v1/ws/audio
// that streams caller audio in real time.
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

/** Run the bench module `moduleUrl` (its import.meta.url) again as a child with argv[2] = `role`, send it `job` (if
 * any); `result` is the first message it sends back, or a rejection if it exits before sending one. */
export function forkRole<T>(moduleUrl: string, role: string, job?: unknown): { result: Promise<T>; kill(): void } {
  const child = fork(fileURLToPath(moduleUrl), [role], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const result = new Promise<T>((resolve, reject) => {
    child.once('message', (r) => resolve(r as T));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${role} process exited (${code})`)));
  });
  if (job !== undefined) child.send(job as object);
  return { result, kill: () => child.kill() };
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
