// The media service: owns every live audio connection (WebSocket audio, WebRTC signalling, carrier streams).
// It plugs into an HTTP server as upgrade handlers and plain HTTP handlers.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HttpHandler, UpgradeHandler } from '../core/http-server.ts';
import { resolveApiKey } from '../core/orgs.ts';
import { policyFromConfig } from '../core/net/ssrf.ts';
import type { EngineFactory, MediaDeps } from './deps.ts';
import { CallSession, type SessionResult } from './session/call-session.ts';
import { parseCallConfig, type CallConfig } from './session/config.ts';
import {
  cancelCallRow,
  claimCall,
  endedPayload,
  finishCallRow,
  handOffPostCall,
  heartbeat,
  HEARTBEAT_MS,
  loadCall,
  reconcileOrphans,
  removeNode,
  sendLifecycleWebhook,
  startedPayload,
  storeRecording,
  type CallRow,
} from './session/lifecycle.ts';
import { WsTransport } from './transports/ws.ts';
import { buildToolSet } from './tools/runtime.ts';
import { embeddingConfigFrom, searchKnowledge } from '../core/retrieval.ts';
import { createNoiseGate } from './noise/index.ts';
import { createEngines } from './services/index.ts';
import { createVad } from './vad/index.ts';
import { activeCallsGauge } from './pipeline/metrics.ts';

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
  const live = new Set<CallSession>();
  const pendingSetups = new Set<Promise<void>>();
  let draining = false;
  let closed = false;

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

  const engineFactory: EngineFactory = deps.engines ?? defaultEngines;

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

  async function runCall(ws: WebSocket, pending: CallRow): Promise<void> {
    const transport = new WsTransport(ws);
    const early: Int16Array[] = [];
    let session: CallSession | null = null;
    let clientGone = false;
    ws.on('message', (data, isBinary) => {
      if (!isBinary) return; // the protocol has no client text messages
      const pcm = transport.decode(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer));
      if (session) session.pushAudio(pcm);
      else if (early.length < 500) early.push(pcm);
    });
    ws.on('close', () => {
      clientGone = true;
      if (session) void session.end('user_hangup');
    });
    ws.on('error', (err) => logger.debug({ err, callId: pending.id }, 'websocket error'));

    const row = await claimCall(deps.db, pending.id, pending.organization_id);
    if (!row) {
      transport.close(1008, 'Call not available');
      return;
    }
    const log = logger.child({ callId: row.id });
    let startedHook: Promise<void> = Promise.resolve();
    let built: CallSession | null = null;
    try {
      const config = parseCallConfig(row.config_snapshot);
      built = await buildSession(row, config, transport, async (result) => {
        if (built) live.delete(built);
        activeCallsGauge.set(live.size);
        await finishLive(row, result, transport, startedHook);
      });
      if (clientGone) throw new Error('client disconnected before the pipeline started');
      await built.start();
      if (clientGone) {
        // the caller hung up while the engines were opening: the pipeline did start, it ends as a hang-up
        live.add(built);
        session = built;
        await built.end('user_hangup');
        return;
      }
      session = built;
      live.add(built);
      activeCallsGauge.set(live.size);
      startedHook = sendLifecycleWebhook(deps, row, startedPayload(row, row.started_at ?? new Date().toISOString()));
      for (const pcm of early.splice(0)) built.pushAudio(pcm);
    } catch (err) {
      if (session) return; // started; the session's own end handling runs
      await built?.abandon();
      log.warn({ err }, 'call could not start: cancelled');
      const f = await cancelCallRow(deps.db, row.id, (err as Error).message ?? String(err));
      transport.sendEvent({ type: 'error', message: `Call could not start: ${(err as Error).message ?? String(err)}` });
      transport.close(1011, 'Call could not start');
      if (f) void sendLifecycleWebhook(deps, row, endedPayload(row, null, 'cancelled', f));
    }
  }

  async function buildSession(row: CallRow, config: CallConfig, transport: WsTransport, onEnd: (r: SessionResult) => Promise<void>): Promise<CallSession> {
    const callVars = (row.context_variables && typeof row.context_variables === 'object' ? row.context_variables : {}) as Record<string, string>;
    const vars: Record<string, string> = {
      ...config.contextVariables,
      ...callVars,
      user_number: row.customer_number ?? '',
      agent_number: row.platform_number ?? '',
    };
    const systemPrompt = config.systemPrompt.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (m, k: string) => vars[k] ?? m);
    const [{ engines, vad }, tools, denoiser] = await Promise.all([
      engineFactory({ callId: row.id, config, appConfig: deps.config }),
      buildToolSet(
        {
          db: deps.db,
          orgId: row.organization_id,
          callId: row.id,
          transport: row.transport,
          contextVariables: vars,
          policy: policyFromConfig(deps.config),
          logger,
          searchKnowledge: (db, q) => searchKnowledge(db, { ...q, embedding: embeddingConfigFrom(deps.config) }),
        },
        config.tools,
      ),
      config.noiseGate.enabled ? createNoiseGate({ model: config.noiseGate.model, enhancementLevel: config.noiseGate.enhancementLevel }) : Promise.resolve(null),
    ]);
    return new CallSession({
      callId: row.id,
      config,
      systemPrompt,
      engines,
      vad,
      denoiser,
      tools,
      transport,
      logger,
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(deps.holdMusicMs ? { holdMusicMs: deps.holdMusicMs } : {}),
      onEnd,
    });
  }

  async function finishLive(row: CallRow, result: SessionResult, transport: WsTransport, startedHook: Promise<void>): Promise<void> {
    const f = await finishCallRow(deps.db, row, result);
    await storeRecording(deps, row.id, result.recording.toWav());
    if (result.reason === 'pipeline_error') transport.close(1011, 'Internal error');
    else transport.close(1000);
    await startedHook;
    await sendLifecycleWebhook(deps, row, endedPayload(row, result.reason, 'completed', f));
    await handOffPostCall(deps, row);
  }

  return {
    upgrade: [upgrade],
    http: [],
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
      for (const c of wss.clients) c.terminate();
      await removeNode(deps.db).catch(() => {});
    },
  };
}

function headerValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

// ── default engines: media/services (one adapter per vendor, `local` engines) + the Silero VAD ───────────
const defaultEngines: EngineFactory = async ({ config, appConfig }) => {
  const engines = createEngines(appConfig, config);
  const vad = await createVad();
  return { engines, vad };
};
