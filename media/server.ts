// The media service: owns every live audio connection (today the raw-audio WebSocket; WebRTC and carrier streams
// are not served yet).
// It plugs into an HTTP server as upgrade handlers and plain HTTP handlers.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HttpHandler, UpgradeHandler } from '../core/http-server.ts';
import { resolveApiKey } from '../core/orgs.ts';
import type { MediaDeps } from './deps.ts';
import { createCallRunner } from './session/runner.ts';
import {
  claimCall,
  endedPayload,
  handOffPostCall,
  heartbeat,
  HEARTBEAT_MS,
  loadCall,
  reconcileOrphans,
  removeNode,
  sendLifecycleWebhook,
  type CallRow,
} from './session/lifecycle.ts';
import { WsTransport } from './transports/ws.ts';
import { createTelephonyStreams } from './telephony-streams.ts';
import { createWebRtcSignaling } from './webrtc/signaling.ts';
import { callPageHandler } from './webrtc/page.ts';

export interface MediaService {
  upgrade: UpgradeHandler[];
  http: HttpHandler[];
  /** Live calls on this process (reported in /metrics and used when draining). */
  activeCalls(): number;
  /** Stop accepting new calls; resolves when active calls have ended or graceMs passed. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
}

const WS_PATH = /^\/api\/v1\/ws\/audio\/([^/?#]+)\/?$/;
const RECONCILE_MS = 30_000;

export function createMediaService(deps: MediaDeps): MediaService {
  const { logger } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const runner = createCallRunner(deps);
  const live = runner.live;
  const pendingSetups = new Set<Promise<void>>();
  let draining = false;
  let closed = false;
  const phone = createTelephonyStreams(deps, runner, () => draining || closed);

  // heartbeat + reconciliation of calls orphaned by a crashed media process
  const reconcile = async () => {
    try {
      await heartbeat(deps.db);
      for (const row of await reconcileOrphans(deps.db)) {
        logger.warn({ callId: row.id }, 'reconciled a call left active by a dead media process');
        void sendLifecycleWebhook(deps, row, endedPayload(row, 'pipeline_error', 'completed', row)).then(() => handOffPostCall(deps, row));
      }
    } catch (err) {
      if (!closed) logger.warn({ err }, 'media heartbeat/reconcile failed');
    }
  };
  const started = reconcile();
  const hb = setInterval(() => void heartbeat(deps.db).catch(() => {}), HEARTBEAT_MS);
  const rc = setInterval(() => void reconcile(), RECONCILE_MS);
  hb.unref();
  rc.unref();

  function reject(socket: Duplex, status: number, detail: string): void {
    const body = JSON.stringify({ detail });
    socket.end(
      `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Service Unavailable'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  function acceptAndClose(req: http.IncomingMessage, socket: Duplex, head: Buffer, code: number, reason: string): void {
    wss.handleUpgrade(req, socket, head, (ws) => ws.close(code, reason));
  }

  const upgrade: UpgradeHandler = (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = WS_PATH.exec(url.pathname);
    if (!m) return false;
    const callId = decodeURIComponent(m[1]!);
    const p = (async () => {
      const key = url.searchParams.get('api_key') ?? headerValue(req.headers['x-api-key']);
      if (!key) return reject(socket, 401, 'Authorization header required');
      const principal = await resolveApiKey(deps.db, key);
      if (!principal) return reject(socket, 401, 'Invalid or expired API key');
      if (draining || closed) return acceptAndClose(req, socket, head, 1013, 'Server is draining');
      const row = await loadCall(deps.db, callId);
      if (!row || !principal.organizationId || row.organization_id !== principal.organizationId) {
        return acceptAndClose(req, socket, head, 1008, 'Invalid call');
      }
      if (row.transport !== 'websocket') return acceptAndClose(req, socket, head, 1008, 'Call transport mismatch');
      if (row.status !== 'pending') return acceptAndClose(req, socket, head, 1008, 'Call not available');
      const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
      await runCall(ws, row);
    })().catch((err: unknown) => {
      logger.error({ err, callId }, 'websocket setup failed');
      if (!socket.destroyed) socket.destroy();
    });
    const tracked = p.finally(() => pendingSetups.delete(tracked));
    pendingSetups.add(tracked);
    return true;
  };

  // WebRTC signaling (offer/answer, trickle ICE, ICE servers) and the browser call page
  const track = (p: Promise<unknown>) => {
    const t: Promise<void> = p.then(() => {}, () => {}).finally(() => pendingSetups.delete(t));
    pendingSetups.add(t);
  };
  const webrtc = createWebRtcSignaling(deps, runner, { draining: () => draining || closed, track });

  async function runCall(ws: WebSocket, pending: CallRow): Promise<void> {
    const transport = new WsTransport(ws);
    ws.on('error', (err) => logger.debug({ err, callId: pending.id }, 'websocket error'));
    const claimed = await claimCall(deps.db, pending.id, pending.organization_id);
    if (!claimed) return transport.closeWith(1008, 'Call not available');
    await runner.run(transport, claimed, { claimed: true });
  }

  return {
    upgrade: [upgrade, phone.upgrade],
    http: [webrtc.http, callPageHandler],
    activeCalls: () => live.size,
    async drain(graceMs: number) {
      draining = true;
      const deadline = Date.now() + graceMs;
      while (live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    },
    async close() {
      draining = true;
      closed = true;
      clearInterval(hb);
      clearInterval(rc);
      await started;
      await Promise.allSettled([...pendingSetups]);
      await Promise.allSettled([...live].map((s) => s.end('cancelled')));
      await phone.close();
      await webrtc.close();
      for (const c of wss.clients) c.terminate();
      await removeNode(deps.db).catch(() => {});
    },
  };
}

function headerValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}
