// Local HTTP servers for tests: a server on a free loopback port, and a receiver that records every request the
// service sends it (webhooks, HTTP tools) and answers it, for the test to look at afterwards.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A server for `handler` on a free port of 127.0.0.1; `url` is its origin (http://127.0.0.1:port). */
export async function listen(handler: http.RequestListener): Promise<{ url: string; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** The whole body of a request. */
export async function body(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** A request as the receiver got it; `json` is the parsed body, or null when the body is not JSON. */
export interface Received {
  method: string;
  /** path and query */
  url: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  json: any;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Records every request, in order of arrival, and answers each with `status` (default 200) and `{"ok":true}`. */
export async function startReceiver(opts: { status?: number } = {}) {
  const events: Received[] = [];
  const waiters: Array<() => void> = [];
  const srv = await listen(async (req, res) => {
    const raw = await body(req);
    let json: unknown = null;
    try { json = JSON.parse(raw.toString('utf8')); } catch { /* keep raw */ }
    events.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, json });
    res.writeHead(opts.status ?? 200, { 'content-type': 'application/json' }).end('{"ok":true}');
    for (const w of waiters.splice(0)) w();
  });
  return {
    ...srv,
    events,
    /** The JSON bodies, in order of arrival (a request whose body is not JSON is left out); webhooks by default. */
    bodies<T = { event: string; callId: string; [k: string]: unknown }>(): T[] {
      return events.filter((e) => e.json !== null).map((e) => e.json as T);
    },
    /** Resolves once `n` requests arrived (or rejects after timeoutMs). */
    async waitFor(n: number, timeoutMs = 60_000): Promise<Received[]> {
      const deadline = Date.now() + timeoutMs;
      while (events.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} webhook events, got ${events.length}`);
        await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 500); });
      }
      return events;
    },
  };
}
