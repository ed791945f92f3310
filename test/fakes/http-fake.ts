// What every local fake of a vendor's streaming HTTP API needs: record each request, write a scripted list of
// stream records (noticing a client that goes away, optionally stalling or dropping mid-stream), and a server on
// an ephemeral loopback port that close() really closes (open streams included).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

/** Read the body, parse it as JSON (null when it is not), record the request and return the body. */
export async function recordRequest(req: IncomingMessage, requests: RecordedRequest[]): Promise<any> {
  let raw = '';
  for await (const c of req) raw += c;
  let body: any = null;
  try {
    body = JSON.parse(raw);
  } catch {
    /* recorded as null */
  }
  requests.push({ path: req.url ?? '', headers: req.headers, body });
  return body;
}

/**
 * Write pre-formatted records one per tick. `stallAfter`: stop writing and keep the socket open; `dropAfter`:
 * destroy the connection. `onAbort` runs when the client goes away before the end.
 */
export async function streamRecords(
  res: ServerResponse,
  records: string[],
  opts: { stallAfter?: number; dropAfter?: number; onAbort(): void },
): Promise<void> {
  let aborted = false;
  res.on('close', () => {
    if (!res.writableEnded) {
      aborted = true;
      opts.onAbort();
    }
  });
  for (let i = 0; i < records.length; i++) {
    if (aborted) return;
    if (opts.stallAfter !== undefined && i >= opts.stallAfter) return;
    if (opts.dropAfter !== undefined && i >= opts.dropAfter) {
      res.socket?.destroy();
      return;
    }
    res.write(records[i]);
    await new Promise((ok) => setImmediate(ok));
  }
  res.end();
}

export async function listenFake(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sockets) s.destroy();
        server.close(() => ok());
      }),
  };
}

/** A carrier's recording file for download tests: MPEG-1 Layer III frame headers (128 kbit/s, 8 kHz) padded out. */
export function fakeMp3(frames = 20): Buffer {
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x64]);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
