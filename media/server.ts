// The media service: owns every live audio connection (the raw-audio WebSocket, WebRTC peers, carrier media streams).
// It plugs into an HTTP server as upgrade handlers and plain HTTP handlers.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { HttpHandler, UpgradeHandler } from '../core/http-server.ts';
import { CALLS_PER_CORE, defaultMaxCalls, NEURAL_CALLS_PER_CORE, type NodeLoad } from '../core/media-nodes.ts';
import { neuralLocalEnginesInstalled } from './services/model-files.ts';
import { closeNeuralEngines } from './services/neural.ts';
import { resolveApiKey } from '../core/orgs.ts';
import type { MediaDeps } from './deps.ts';
import { createCallRunner } from './session/runner.ts';
import {
  claimCall,
  handOffPostCall,
  heartbeat,
  HEARTBEAT_MS,
  loadCall,
  mediaLoadGauges,
  pruneNodes,
  removeNode,
  NODE_ID,
  reservedHere,
  type CallRow,
} from './session/lifecycle.ts';
import { WsTransport } from './transports/ws.ts';
import { createAdmission, REFUSAL_TEXT, rowWeight } from './admission.ts';
import { afterOutageGuard, endOrphanedCalls, notifyOrphans, OWN_ROW_GRACE_S } from '../core/calls/orphans.ts';
import { recoverSpools } from './session/spool.ts';
import { createCarrierStreams } from './transports/carriers/server.ts';
import { createWebRtcSignaling, type WebRtcSignaling } from './webrtc/signaling.ts';
import { callPageHandler } from './webrtc/page.ts';
import { warmMedia } from './session/warm.ts';
import { safeDecode } from '../core/input-guard.ts';
import { sharedClock } from './pipeline/clock.ts';

export interface MediaService {
  upgrade: UpgradeHandler[];
  http: HttpHandler[];
  /** WebRTC signaling and its peers (tests reach the media-plane thread through it). */
  webrtc: WebRtcSignaling;
  /** Live calls on this process (reported in /metrics and used when draining). */
  activeCalls(): number;
  /** Load as reported in media_nodes, /metrics and /readyz: calls (live + joining on any transport), capacity, event-loop lag. */
  load(): NodeLoad;
  /** Stop accepting new calls; resolves when active calls have ended or graceMs passed. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
}

const WS_PATH = /^\/api\/v1\/ws\/audio\/([^/?#]+)\/?$/;
const RECONCILE_MS = 30_000;
/** The longest a starting node waits for its engines to load before it takes calls anyway. */
const WARM_CAP_MS = 60_000;

export function createMediaService(deps: MediaDeps): MediaService {
  const { logger } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const neural = !deps.engines && deps.config.NODE_ENV !== 'test' && neuralLocalEnginesInstalled();
  // what a local-engine call weighs here: the unit, or the neural engines' share of a core
  const localUnit = neural ? CALLS_PER_CORE / NEURAL_CALLS_PER_CORE : 1;
  const runner = createCallRunner(deps, { localUnit });
  const joinWeight = (kind: string, row: CallRow) => rowWeight(kind, row.config_snapshot, localUnit);
  const live = runner.live;
  const pendingSetups = new Set<Promise<void>>();
  // models and recognisers load now, not on the first call (only with the default engines). Until the neural ones
  // have loaded the node takes no new calls (it reports not accepting: POST /call answers 503 with Retry-After),
  // since its first callers would otherwise wait seconds for a greeting; WARM_CAP_MS bounds the wait.
  let warming = false;
  if (!deps.engines) {
    const warm = warmMedia(deps.config, logger);
    if (neural && deps.waitForEngines) {
      warming = true;
      void Promise.race([warm, new Promise((r) => setTimeout(r, WARM_CAP_MS).unref())]).finally(() => {
        warming = false;
        void report().catch(() => {});
      });
    }
  }
  let draining = false;
  let closed = false;

  // Capacity: calls live or joining on this process, on every transport; past MEDIA_MAX_CALLS new joins are refused
  // (WebSocket and carrier stream: close 1013, WebRTC offer: 503) so the calls already here keep real time, and the
  // client (or the proxy, or the carrier) tries another node. One admission point for all transports.
  // Capacity is counted in local-engine WebSocket calls of the light engines (CALLS_PER_CORE); each call weighs its
  // transport × engines (media/admission.ts). With the neural local models installed (Whisper / Piper are then what
  // `local` runs) a local-engine call weighs CALLS_PER_CORE / NEURAL_CALLS_PER_CORE units, so the node admits what
  // those engines serve in real time without limiting its vendor-engine calls; processes under NODE_ENV=test keep
  // the light weight.
  const capacity = deps.config.MEDIA_MAX_CALLS ?? defaultMaxCalls();
  const admission = createAdmission({ capacity, live: () => runner.liveWeight(), draining: () => draining || closed, closed: () => closed });
  const phone = createCarrierStreams(deps, runner, admission, joinWeight);
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  let lagMs = 0;
  // the node's own address, reported only when it is not the shared PUBLIC_URL (POST /call then steers calls to it)
  const ownUrl = deps.config.MEDIA_PUBLIC_URL?.replace(/\/+$/, '');
  const publicUrl = ownUrl && ownUrl !== deps.config.publicUrl ? ownUrl : null;
  const load = (): NodeLoad => ({ activeCalls: live.size + admission.joining, weightedLoad: round2(admission.weighted()), accepting: !warming && admission.refusal() === null, warming, capacity, loopLagMs: lagMs, draining, publicUrl, localUnit });
  const deadAfterS = deps.config.MEDIA_NODE_DEAD_AFTER_S;
  const heartbeatMs = Math.min(HEARTBEAT_MS, (deadAfterS * 1000) / 4);
  const reconcileMs = Math.min(RECONCILE_MS, (deadAfterS * 1000) / 2);
  let reportedAs = '';
  const report = async () => {
    const l = load();
    reportedAs = `${l.activeCalls}/${l.weightedLoad}/${l.accepting}/${l.draining}`;
    mediaLoadGauges.capacity.set(capacity);
    mediaLoadGauges.lag.set(lagMs / 1000);
    await heartbeat(deps.db, l);
  };
  const beat = () => {
    if (lag.count > 0) lagMs = Math.round((lag.percentile(99) / 1e6) * 10) / 10;
    lag.reset();
    void report().catch(() => {});
  };

  // heartbeat (with load) + reconciliation (core/calls/orphans.ts): first this node's call ends whose database writes
  // failed past their retries, then spool recordings left behind (uploaded before their rows end, so post-call finds
  // them), then rows of dead nodes and this node's own rows that no session owns any more
  let reconciling: Promise<void> | null = null;
  const deadNodes = afterOutageGuard(deadAfterS * 1000);
  const reconcileOnce = async () => {
    try {
      await report();
      await runner.retryUnfinished();
      await recoverSpools(deps, deadAfterS).catch((err: unknown) => logger.warn({ err }, 'spool recovery failed'));
      const rows = [
        ...((await deadNodes.run(() => endOrphanedCalls(deps.db, { deadAfterS, exceptNode: NODE_ID }))) ?? []),
        // a WebRTC call is claimed at its offer and reaches the runner once ICE connects (WEBRTC_CONNECT_TIMEOUT_S)
        ...(await endOrphanedCalls(deps.db, { node: NODE_ID, owned: [...runner.owned], graceS: Math.max(OWN_ROW_GRACE_S, deps.config.WEBRTC_CONNECT_TIMEOUT_S + 30) })),
      ];
      void notifyOrphans(deps, rows, (row) => handOffPostCall(deps, row));
      await pruneNodes(deps.db);
    } catch (err) {
      deadNodes.fail();
      if (!closed) logger.warn({ err }, 'media heartbeat/reconcile failed');
    }
  };
  const reconcile = () => (reconciling ??= reconcileOnce().finally(() => { reconciling = null; }));
  const started = reconcile();
  const hb = setInterval(beat, heartbeatMs);
  const rc = setInterval(() => void reconcile(), reconcileMs);
  // load changes reach media_nodes within a second (POST /call reads them), at most one write per second
  const lc = setInterval(() => {
    const l = load();
    if (`${l.activeCalls}/${l.weightedLoad}/${l.accepting}/${l.draining}` !== reportedAs) void report().catch(() => {});
  }, 1000);
  hb.unref();
  rc.unref();
  lc.unref();

  function reject(socket: Duplex, status: number, detail: string): void {
    const body = JSON.stringify({ detail });
    socket.end(
      `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Service Unavailable'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  function acceptAndClose(req: http.IncomingMessage, socket: Duplex, head: Buffer, code: number, reason: string): void {
    wss.handleUpgrade(req, socket, head, (ws) => ws.close(code, reason));
  }

  const clock = deps.clock ?? sharedClock;
  const upgrade: UpgradeHandler = (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = WS_PATH.exec(url.pathname);
    if (!m) return false;
    const callId = safeDecode(m[1]!); // a malformed escape must not throw out of the upgrade event
    const p = (async () => {
      const key = url.searchParams.get('api_key') ?? headerValue(req.headers['x-api-key']);
      if (!key) return reject(socket, 401, 'Authorization header required');
      const principal = await resolveApiKey(deps.db, key);
      clock.poll(); // each step of a join polls the frame clock: see media/session/runner.ts
      if (!principal) return reject(socket, 401, 'Invalid or expired API key');
      if (admission.refusal() === 'draining') return acceptAndClose(req, socket, head, 1013, REFUSAL_TEXT.draining);
      // `mode=text`: the caller types its turns (media/session/text-mode.ts); absent or `audio`: the audio protocol
      const mode = url.searchParams.get('mode') ?? 'audio';
      if (mode !== 'audio' && mode !== 'text') return acceptAndClose(req, socket, head, 1008, 'Unsupported mode');
      await join(req, socket, head, callId, principal.organizationId, mode === 'text');
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
  const webrtc = createWebRtcSignaling(deps, runner, { admission, track, weightOf: joinWeight });

  /**
   * A join: the call row's checks, then admission at the call's own weight (a call whose room the api reserved here
   * is taken over, never refused for capacity), then the pipeline (resolves once it started or could not). `text`:
   * the WebSocket's text mode.
   */
  async function join(req: http.IncomingMessage, socket: Duplex, head: Buffer, callId: string, organizationId: string | null, text: boolean): Promise<void> {
    const row = await loadCall(deps.db, callId);
    clock.poll();
    if (!row || !organizationId || row.organization_id !== organizationId) {
      return acceptAndClose(req, socket, head, 1008, 'Invalid call');
    }
    if (row.transport !== 'websocket') return acceptAndClose(req, socket, head, 1008, 'Call transport mismatch');
    if (row.status !== 'pending') return acceptAndClose(req, socket, head, 1008, 'Call not available');
    const admitted = admission.admit('websocket', { weight: joinWeight('websocket', row), reserved: reservedHere(row) });
    if (!admitted.ok) return acceptAndClose(req, socket, head, 1013, admitted.text);
    try {
      const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
      clock.poll();
      await runCall(ws, row, text);
    } finally {
      admitted.release();
    }
  }

  async function runCall(ws: WebSocket, pending: CallRow, text: boolean): Promise<void> {
    const transport = new WsTransport(ws, undefined, { text });
    ws.on('error', (err) => logger.debug({ err, callId: pending.id }, 'websocket error'));
    const claimed = await claimCall(deps.db, pending.id, pending.organization_id);
    clock.poll();
    if (!claimed) return transport.closeWith(1008, 'Call not available');
    await runner.run(transport, claimed, { claimed: true });
  }

  return {
    upgrade: [upgrade, phone.upgrade],
    http: [webrtc.http, callPageHandler],
    webrtc,
    activeCalls: () => live.size,
    load,
    async drain(graceMs: number) {
      draining = true;
      void report().catch(() => {});
      const deadline = Date.now() + graceMs;
      while (live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    },
    async close() {
      draining = true;
      closed = true;
      clearInterval(hb);
      clearInterval(rc);
      clearInterval(lc);
      lag.disable();
      await started;
      await Promise.allSettled([...pendingSetups]);
      await Promise.allSettled([...live].map((s) => s.end('cancelled')));
      await phone.close();
      await webrtc.close();
      for (const c of wss.clients) c.terminate();
      await removeNode(deps.db).catch(() => {});
      // the neural local engines' helpers and model (native code must not be torn down by process exit)
      await closeNeuralEngines();
    },
  };
}

function headerValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
