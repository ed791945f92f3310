// Shared machinery of the local STT vendor fakes (test/fakes/stt/<id>.ts): one HTTP server that accepts the
// WebSocket upgrade only on the vendor's path with the vendor's auth header (else the vendor's HTTP refusal), a
// record of every connection (path, query, headers, every message in order), and a deterministic "listener" that
// decides what was said from the audio it receives: speech is 20 ms granules louder than an RMS threshold (the
// tests send a tone for speech and zeros for silence), each speech segment takes the next utterance of a script,
// one word is "recognised" per `wordMs` of speech, and the vendor fake turns onsets, words and the length of the
// silence that follows into that vendor's own messages. No real recognition, no timers: everything follows from
// the audio received, so tests are exact and fast.
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export type Recorded =
  | { kind: 'json'; data: Record<string, unknown> }
  | { kind: 'text'; data: string }
  | { kind: 'audio'; samples: number };

export interface FakeConnection {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  messages: Recorded[];
  /** caller audio samples received (16 kHz) */
  samples: number;
  ws: WebSocket;
  closed: boolean;
  /** a hung vendor: the socket stays open, audio is read and counted, nothing is answered */
  stalled: boolean;
  /** messages this fake sent, in order */
  sent: Array<Record<string, unknown>>;
  send(msg: Record<string, unknown>): void;
}

export interface WsFake {
  /** base URL for `<ID>_BASE_URL` (http://127.0.0.1:port + prefix) */
  url: string;
  connections: FakeConnection[];
  /** refuse the next upgrades with this HTTP status and JSON body (until cleared with null) */
  refuseUpgrades(r: { status: number; body: Record<string, unknown> } | null): void;
  /** close every open connection from the vendor side (a mid-call disconnect) */
  dropAll(code?: number, reason?: string): void;
  /** every open connection hangs (stays open, never answers again); later connections behave normally */
  stallAll(): void;
  close(): Promise<void>;
}

export interface WsFakeOptions {
  path: string;
  prefix?: string;
  /** null when the headers/query authenticate, else the HTTP refusal */
  authenticate(headers: IncomingHttpHeaders, query: URLSearchParams): { status: number; body: Record<string, unknown> } | null;
  /** a query/header check the vendor does at upgrade time (unknown model, missing parameter) */
  validate?(query: URLSearchParams, headers: IncomingHttpHeaders): { status: number; body: Record<string, unknown> } | null;
  onConnection(conn: FakeConnection): void;
  onMessage(conn: FakeConnection, data: Buffer, isBinary: boolean): void;
}

export async function startWsFake(o: WsFakeOptions): Promise<WsFake> {
  const connections: FakeConnection[] = [];
  let refusal: { status: number; body: Record<string, unknown> } | null = null;
  const wss = new WebSocketServer({ noServer: true });
  const server = http.createServer((_req, res) => {
    res.writeHead(404).end();
  });
  const prefix = o.prefix ?? '';
  const reject = (socket: Duplex, status: number, body: Record<string, unknown>) => {
    const text = JSON.stringify(body);
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  };
  server.on('upgrade', (req, socket, head) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname !== prefix + o.path) return reject(socket, 404, { message: `no route ${u.pathname}` });
    if (refusal) return reject(socket, refusal.status, refusal.body);
    const auth = o.authenticate(req.headers, u.searchParams);
    if (auth) return reject(socket, auth.status, auth.body);
    const bad = o.validate?.(u.searchParams, req.headers);
    if (bad) return reject(socket, bad.status, bad.body);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: FakeConnection = {
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        messages: [],
        samples: 0,
        ws,
        closed: false,
        stalled: false,
        sent: [],
        send(msg) {
          if (ws.readyState !== ws.OPEN || this.stalled) return;
          this.sent.push(msg);
          ws.send(JSON.stringify(msg));
        },
      };
      connections.push(conn);
      ws.on('close', () => (conn.closed = true));
      ws.on('error', () => {});
      ws.on('message', (data, isBinary) => {
        const buf = Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer);
        if (isBinary) conn.messages.push({ kind: 'audio', samples: buf.length / 2 });
        else {
          const text = buf.toString('utf8');
          try {
            conn.messages.push({ kind: 'json', data: JSON.parse(text) as Record<string, unknown> });
          } catch {
            conn.messages.push({ kind: 'text', data: text });
          }
        }
        if (conn.stalled) {
          if (isBinary) conn.samples += buf.length / 2;
          return;
        }
        o.onMessage(conn, buf, isBinary);
      });
      o.onConnection(conn);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    connections,
    refuseUpgrades: (r) => (refusal = r),
    dropAll: (code = 1011, reason = 'server going away') => {
      for (const c of connections) if (!c.closed) c.ws.close(code, reason);
    },
    stallAll: () => {
      for (const c of connections) if (!c.closed) c.stalled = true;
    },
    close: async () => {
      for (const c of connections) c.ws.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Caller audio (16-bit little-endian PCM) as the fake's recogniser takes it, counted on the connection. */
export function callerAudio(c: FakeConnection, bytes: Buffer): Int16Array {
  const pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  c.samples += pcm.length;
  return pcm;
}

/** The vendor's idle timeout: each call of the returned function (re)starts it; `ms` without one closes the socket
 * with code 1000 and `reason`. Without `ms` the vendor never closes an idle socket. */
export function idleClose(c: FakeConnection, ms: number | undefined, reason: string): () => void {
  let timer: NodeJS.Timeout | null = null;
  c.ws.on('close', () => {
    if (timer) clearTimeout(timer);
  });
  return () => {
    if (!ms) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => c.ws.close(1000, reason), ms);
  };
}

export const GRANULE = 320; // 20 ms at 16 kHz
const LOUD = 800;

export interface ListenerHooks {
  /** speech began (a new utterance, or speech again during the silence after one) */
  onset(resumed: boolean): void;
  /** one more word recognised: the words so far */
  word(words: string[]): void;
  /** one more 20 ms of silence after speech: total silence so far, the whole utterance */
  silence(ms: number, utterance: string): void;
}

/**
 * Decides deterministically what the caller said from the audio alone. `endUtterance()` is called by the vendor
 * fake when its own end of turn fires; the next speech then takes the next line of the script.
 */
export class Listener {
  private carry = new Int16Array(0);
  private loudMs = 0;
  private speechMs = 0;
  private silenceMs = 0;
  private inUtterance = false;
  private speaking = false;
  private current: string[] = [];
  private revealed = 0;
  constructor(
    /** the next line of the script (shared across a fake's connections: a reconnect does not replay a line) */
    private readonly nextLine: () => string | undefined,
    private readonly hooks: ListenerHooks,
    private readonly wordMs = 100,
  ) {}

  get utterance(): string {
    return this.current.join(' ');
  }
  get words(): string[] {
    return this.current.slice(0, Math.max(this.revealed, 0));
  }
  get active(): boolean {
    return this.inUtterance;
  }

  feed(pcm: Int16Array): void {
    let buf = pcm;
    if (this.carry.length) {
      buf = new Int16Array(this.carry.length + pcm.length);
      buf.set(this.carry);
      buf.set(pcm, this.carry.length);
    }
    let off = 0;
    for (; off + GRANULE <= buf.length; off += GRANULE) this.granule(buf.subarray(off, off + GRANULE));
    this.carry = buf.slice(off);
  }

  /** the vendor ended the utterance (its end of turn): the next speech is a new line of the script */
  endUtterance(): void {
    this.inUtterance = false;
    this.speaking = false;
    this.silenceMs = 0;
  }

  private granule(g: Int16Array): void {
    let s = 0;
    for (const v of g) s += v * v;
    const loud = Math.sqrt(s / g.length) > LOUD;
    if (loud) {
      this.loudMs += 20;
      if (!this.speaking && this.loudMs >= 60) {
        this.speaking = true;
        const resumed = this.inUtterance;
        if (!this.inUtterance) {
          this.inUtterance = true;
          this.current = (this.nextLine() ?? 'hello').split(/\s+/).filter(Boolean);
          this.revealed = 0;
          this.speechMs = 0;
        }
        this.silenceMs = 0;
        this.hooks.onset(resumed);
      }
      if (this.speaking) {
        this.speechMs += 20;
        const n = Math.min(this.current.length, Math.floor(this.speechMs / this.wordMs));
        if (n > this.revealed) {
          this.revealed = n;
          this.hooks.word(this.current.slice(0, n));
        }
      }
      return;
    }
    this.loudMs = 0;
    if (this.speaking) this.speaking = false;
    if (this.inUtterance) {
      this.silenceMs += 20;
      this.hooks.silence(this.silenceMs, this.utterance);
    }
  }
}

/** "What are your hours?" → "what are your hours" (the vendors' unformatted text) */
export function unformatted(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}\s']/gu, '').replace(/\s+/g, ' ').trim();
}

/** PCM of a 20 ms-multiple tone (speech) or silence, for tests. */
export function tone(ms: number, amplitude = 4000): Int16Array {
  const n = Math.round((ms * 16000) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 16000));
  return out;
}
export function silence(ms: number): Int16Array {
  return new Int16Array(Math.round((ms * 16000) / 1000));
}

/** A script read line by line across all of a fake's connections. */
export function scriptReader(script: string[]): () => string | undefined {
  let i = 0;
  return () => script[i++];
}
