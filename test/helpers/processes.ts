// The service's entry points (api/main.ts, media/main.ts, activities/worker.ts) started as real child processes,
// in the production shape, for the tests that need more than one process (scale-out, steering, faults); and a
// caller on a media node's audio WebSocket. Every process started here is SIGKILLed by killServiceProcesses()
// (register it with test.after.always in each file).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { freePort, waitForPort } from '../../scripts/infra.ts';

const children: ChildProcess[] = [];

/** SIGKILL every process started here that is still running. */
export function killServiceProcesses(): void {
  for (const c of children) if (alive(c)) c.kill('SIGKILL');
}

/** The process is still running. */
export const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** SIGKILL, and wait until the process is gone. */
export async function kill(child: ChildProcess): Promise<void> {
  if (!alive(child)) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

export interface ServiceProcess {
  child: ChildProcess;
  origin: string;
  port: number;
  /** `<entry> exited (<code or signal>)` once it has exited */
  exits: string[];
}

/** A log line of a process (JSON on its stdout). */
export interface LogLine { msg?: string; callId?: string }

export interface StartOptions {
  /** the port it listens on (default: a free one) */
  port?: number;
  /** wait until it listens (default true; a worker does not listen) */
  listens?: boolean;
  /** how long it may take to listen (default 60 s) */
  listenTimeoutMs?: number;
  /** its log lines at level warn and above are collected here */
  logs?: LogLine[];
  /** its logs at this level shown on the test's output (default: silent, output ignored) */
  showLogs?: string;
}

/** Start one of the service's entry points as its own process; `env` may depend on the port it listens on. */
export async function startServiceProcess(entry: string, env: Record<string, string> | ((port: number) => Record<string, string>), opts: StartOptions = {}): Promise<ServiceProcess> {
  const port = opts.port ?? await freePort();
  const shown = opts.showLogs;
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, ...(typeof env === 'function' ? env(port) : env), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: opts.logs ? 'warn' : shown ?? 'silent' },
    stdio: ['ignore', opts.logs ? 'pipe' : shown ? 'inherit' : 'ignore', shown ? 'inherit' : 'ignore'],
  });
  const logs = opts.logs;
  if (logs && child.stdout) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try { logs.push(JSON.parse(line) as LogLine); } catch { /* not a log line */ }
    });
  }
  const exits: string[] = [];
  child.once('exit', (code, signal) => exits.push(`${entry} exited (${signal ?? code})`));
  children.push(child);
  if (opts.listens ?? true) await waitForPort(port, opts.listenTimeoutMs ?? 60_000);
  return { child, origin: `http://127.0.0.1:${port}`, port, exits };
}

/** The audio WebSocket URL of a call on the media node at `origin` (http://host:port). */
export const audioUrlOf = (origin: string, callId: string) => `${origin.replace(/^http/, 'ws')}/api/v1/ws/audio/${callId}`;

/** A caller on a call's audio WebSocket: streams silence (20 ms frames) once open, counts the agent's audio frames. */
export function audioCaller(audioUrl: string, key: string) {
  const ws = new WebSocket(`${audioUrl}?api_key=${encodeURIComponent(key)}`);
  let frames = 0;
  let timer: NodeJS.Timeout | null = null;
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      if (timer) clearInterval(timer);
      resolve({ code, reason: reason.toString() });
    }),
  );
  ws.on('error', () => {});
  ws.on('open', () => {
    timer = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(Buffer.alloc(640)), 20);
  });
  ws.on('message', (_d, binary) => {
    if (binary) frames++;
  });
  return { ws, closed, frames: () => frames };
}
