// What the local TTS vendor fakes share: an HTTP + WebSocket server on an ephemeral loopback port that records
// every upgrade/request (path, query, headers) and every message, refuses a wrong key the way the vendor does,
// can drop live connections (mid-call disconnect), and makes deterministic audio: a 24 kHz sine whose length is
// proportional to the text (`MS_PER_CHAR` per character, so longer words last longer) and whose amplitude is
// derived from the text (`amplitudeOf`), so a test can tell which request a piece of audio belongs to.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export const MS_PER_CHAR = 20;
export const SAMPLES_PER_CHAR = (24000 * MS_PER_CHAR) / 1000;

/** A distinct, deterministic amplitude per text (1000..8600). */
export function amplitudeOf(text: string): number {
  let h = 0;
  for (const c of text.trim()) h = (h * 31 + c.charCodeAt(0)) % 39;
  return 1000 + h * 200;
}

/** The audio the fakes make for a text, at a sample rate (24 kHz unless a vendor is asked for another). */
export function toneFor(text: string, rate = 24000): Int16Array {
  const n = Math.max(1, text.length) * Math.round((rate * MS_PER_CHAR) / 1000);
  const amp = amplitudeOf(text);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * 300 * i) / rate));
  return out;
}

export const pcmBytes = (pcm: Int16Array): Buffer => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);

/** Wait until `at` (a Date.now() time): the vendor's time to first byte, counted from when the text arrived. */
export async function sleepUntil(at: number): Promise<void> {
  const ms = at - Date.now();
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/** Split audio into pieces of `ms` (the vendor streams it). */
export function pieces(pcm: Int16Array, ms = 100, rate = 24000): Int16Array[] {
  const step = Math.round((rate * ms) / 1000);
  const out: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += step) out.push(pcm.subarray(i, Math.min(pcm.length, i + step)));
  return out;
}

export interface Upgrade {
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
}

export interface Received {
  conn: number;
  msg: any;
}

export interface FakeServerOptions {
  /** true when the upgrade/request carries the right credentials */
  authorized(headers: IncomingMessage['headers'], query: URLSearchParams): boolean;
  /** extra refusal at upgrade (eleven_v3 on the WebSocket): status or null */
  refuseUpgrade?(u: Upgrade): { status: number; body: string } | null;
  onConnection?(ws: WebSocket, conn: number, u: Upgrade): void;
  onMessage(ws: WebSocket, msg: any, conn: number): void;
  onHttp?(req: IncomingMessage, res: ServerResponse, body: string): void | Promise<void>;
  /** status for an unauthorized upgrade (default 401) */
  unauthorizedStatus?: number;
}

export class FakeServer {
  readonly upgrades: Upgrade[] = [];
  readonly received: Received[] = [];
  readonly http: Array<{ method: string; path: string; headers: IncomingMessage['headers']; body: string; remotePort: number }> = [];
  readonly pings: number[] = [];
  readonly open = new Set<WebSocket>();
  /** refuse every upgrade with this status and body (a vendor outage: 5xx at connect) until set back to null */
  refusing: { status: number; body: string } | null = null;
  /** hung connections: open, their messages recorded, never answered */
  readonly stalled = new Set<WebSocket>();
  port = 0;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly server = createServer((req, res) => void this.handleHttp(req, res));
  private readonly sockets = new Set<Socket>();
  private conns = 0;

  constructor(private readonly o: FakeServerOptions) {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server.on('upgrade', (req, socket, head) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const u: Upgrade = { path: url.pathname, query: url.searchParams, headers: req.headers };
      this.upgrades.push(u);
      const refuse = (status: number, body: string) => {
        socket.end(`HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      };
      if (!this.o.authorized(req.headers, url.searchParams)) return refuse(this.o.unauthorizedStatus ?? 401, JSON.stringify({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } }));
      const r = this.refusing ?? this.o.refuseUpgrade?.(u);
      if (r) return refuse(r.status, r.body);
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const conn = ++this.conns;
        this.open.add(ws);
        ws.on('close', () => this.open.delete(ws));
        ws.on('ping', () => this.pings.push(conn));
        ws.on('message', (data) => {
          let msg: any;
          try {
            msg = JSON.parse(data.toString());
          } catch {
            msg = { raw: data.toString() };
          }
          this.received.push({ conn, msg });
          if (!this.stalled.has(ws)) this.o.onMessage(ws, msg, conn);
        });
        this.o.onConnection?.(ws, conn, u);
      });
    });
  }

  private async handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const c of req) body += c;
    this.http.push({ method: req.method ?? 'GET', path: req.url ?? '', headers: req.headers, body, remotePort: req.socket.remotePort ?? 0 });
    if (!this.o.onHttp) {
      res.writeHead(404).end();
      return;
    }
    try {
      await this.o.onHttp(req, res, body);
    } catch {
      res.destroy();
    }
  }

  async listen(): Promise<this> {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Messages received (all connections or one), in order. */
  messages(conn?: number): any[] {
    return this.received.filter((r) => conn === undefined || r.conn === conn).map((r) => r.msg);
  }

  /** Drop every live connection abruptly (network failure / vendor restart). */
  dropAll(): void {
    for (const ws of this.open) ws.terminate();
  }

  /** Every live connection hangs: stays open, never answers again (later connections behave normally). */
  stallAll(): void {
    for (const ws of this.open) this.stalled.add(ws);
  }

  /** Close every live connection the way a vendor's idle timeout does. */
  closeAll(code = 1000, reason = 'inactivity timeout'): void {
    for (const ws of this.open) ws.close(code, reason);
  }

  get connections(): number {
    return this.conns;
  }

  async close(): Promise<void> {
    for (const ws of this.open) ws.terminate();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}

/** Send a list of messages one per tick, stopping when `stop()` says so (a cancelled context). */
export async function sendPaced(ws: WebSocket, msgs: Array<() => string>, stop: () => boolean = () => false, gapMs = 2): Promise<void> {
  for (const m of msgs) {
    if (ws.readyState !== ws.OPEN || stop()) return;
    ws.send(m());
    await new Promise((r) => setTimeout(r, gapMs));
  }
}
