// HTTP server with upgrade routing and graceful drain: stop accepting, finish in-flight requests, then close.
import http from 'node:http';
import type { Duplex } from 'node:stream';

export type UpgradeHandler = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;
export type HttpHandler = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

export interface ServerParts {
  /** Tried in order; the first that returns true owns the request. */
  http: HttpHandler[];
  /** The fallback for plain HTTP requests (the Koa app). */
  fallback: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  upgrade: UpgradeHandler[];
}

export interface RunningServer {
  server: http.Server;
  port: number;
  close(graceMs?: number): Promise<void>;
}

export async function startServer(parts: ServerParts, port: number, host = '0.0.0.0'): Promise<RunningServer> {
  const server = http.createServer((req, res) => {
    for (const h of parts.http) if (h(req, res)) return;
    parts.fallback(req, res);
  });
  server.keepAliveTimeout = 65_000;
  server.on('upgrade', (req, socket, head) => {
    for (const h of parts.upgrade) if (h(req, socket, head)) return;
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  return {
    server,
    port: actualPort,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
