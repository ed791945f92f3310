// WebRTC signaling, served by the media process (spec "WebRTC signaling"; docs/calls.md "WebRTC (browser calls)"):
//   POST  /api/v1/webrtc/offer/{call_id}   {sdp, type: 'offer', pc_id?}  → {sdp, type: 'answer', pc_id, iceServers}
//   PATCH /api/v1/webrtc/offer/{call_id}   {candidate, pc_id?}          → {success: true}   (trickle ICE)
//   GET   /api/v1/webrtc/ice-servers                                       → {iceServers}
// All with X-API-Key. The first offer for a pending web call is answered within the POST and claims the row; the
// pipeline starts once the peer connects. A peer that never connects within WEBRTC_CONNECT_TIMEOUT_S (or whose ICE
// fails first) ends the call as no_participant by the never-connected rule (core/calls/unconnected.ts). A first offer
// while draining or at capacity → 503 with nothing claimed (a retry on another node works); an answered peer counts
// toward capacity until its call runs or ends; renegotiating a live peer (its pc_id) is never refused. Peers run on
// this event loop or on the media-plane thread (plane.ts); one that fails on our side ends its call as pipeline_error.
import type http from 'node:http';
import { z } from 'zod';
import type { HttpHandler } from '../../core/http-server.ts';
import { sql } from '../../core/db/pool.ts';
import { announceNeverConnected, neverConnectedRow, UNCONNECTED_RETURNING } from '../../core/calls/unconnected.ts';
import { WEB_TRANSPORTS } from '../../core/calls/model.ts';
import { resolveApiKey } from '../../core/orgs.ts';
import { hitRateLimit } from '../../core/ratelimit.ts';
import { to422, zodToItems } from '../../core/validation.ts';
import { bodyFindings, flatFindings, safeDecode, unstorable422 } from '../../core/input-guard.ts';
import type { MediaDeps } from '../deps.ts';
import type { Admission } from '../admission.ts';
import type { CallRunner } from '../session/runner.ts';
import { claimCall, loadCall, reservedHere, type CallRow } from '../session/lifecycle.ts';
import { parseIceServers, parsePortRange, toNdcIceServers, type BrowserIceServer } from './ice.ts';
import { OfferError, type WebRtcNetOptions, type WebRtcOptions, type WebRtcPeer } from './peer-types.ts';
import { MediaPlane } from './plane.ts';

const OFFER_PATH = /^\/api\/v1\/webrtc\/offer\/([^/?#]+)\/?$/;
const ICE_PATH = /^\/api\/v1\/webrtc\/ice-servers\/?$/;
const MAX_BODY = 256 * 1024;
export const CALL_NOT_FOUND = 'Call not found';
export const DUPLICATE_OFFER = 'Duplicate offer: this call already has a peer connection (send its pc_id to renegotiate)';

const offerBody = z.object({
  sdp: z.string().min(1).max(200_000),
  type: z.literal('offer'),
  pc_id: z.string().max(100).nullish(),
});
const candidateObj = z.object({
  candidate: z.string().max(2000),
  sdpMid: z.string().max(64).nullish(),
  sdpMLineIndex: z.number().int().min(0).max(64).nullish(),
  usernameFragment: z.string().max(256).nullish(),
});
const candidateItem = z.union([z.string().max(2000), candidateObj, z.null()]);
const patchBody = z.object({
  candidate: z.union([candidateItem, z.array(candidateItem).max(100)]),
  pc_id: z.string().max(100).nullish(),
});

interface Entry {
  callId: string;
  orgId: string;
  transport: WebRtcPeer;
  row: CallRow;
  timer: NodeJS.Timeout | null;
  running: boolean;
  /** stops counting this peer as joining (idempotent): once its call runs, or when it is forgotten */
  release: () => void;
}

export interface WebRtcSignaling {
  http: HttpHandler;
  /** Live peers of this process (answered, connecting or in a call). */
  readonly peers: ReadonlyMap<string, Entry>;
  /** The media-plane thread's owner (WEBRTC_MEDIA_THREAD), or null when the peers run on the event loop. */
  readonly plane: MediaPlane | null;
  close(): Promise<void>;
}

class Reply extends Error {
  constructor(readonly status: number, readonly detail: unknown) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export function createWebRtcSignaling(
  deps: MediaDeps,
  runner: CallRunner,
  ctl: { admission: Admission; track(p: Promise<unknown>): void; weightOf?: (kind: string, row: CallRow) => number },
): WebRtcSignaling {
  const { logger, config } = deps;
  const browserIce: BrowserIceServer[] = parseIceServers(config.WEBRTC_ICE_SERVERS);
  const net: WebRtcNetOptions = {
    iceServers: toNdcIceServers(browserIce),
    portRange: parsePortRange(config.WEBRTC_PORT_RANGE),
    bindAddress: config.WEBRTC_BIND_ADDRESS,
    announcedAddress: config.WEBRTC_ANNOUNCED_ADDRESS,
    codecThreads: config.WEBRTC_CODEC_THREADS,
    codecDecode: config.WEBRTC_CODEC_DECODE,
  };
  // the peers on the media-plane thread (WEBRTC_MEDIA_THREAD), or on this event loop: then node-datachannel is loaded
  // here, from the start (with the plane on, this thread must never load it: plane.ts)
  const plane = config.WEBRTC_MEDIA_THREAD ? new MediaPlane(logger, config.LOG_LEVEL) : null;
  plane?.warm();
  let releaseRuntime: (() => void) | null = null;
  const local = plane ? null : Promise.all([import('./runtime.ts'), import('./transport.ts')]).then(([runtime, t]) => {
    releaseRuntime = runtime.acquireWebRtcRuntime();
    return t.WebRtcTransport;
  });
  const answer = async (sdp: string, o: WebRtcOptions): Promise<{ transport: WebRtcPeer; sdp: string }> =>
    plane ? plane.answer(sdp, o) : (await local!).answer(sdp, o);
  const peers = new Map<string, Entry>(); // by call id
  const byPc = new Map<string, Entry>();
  const starting = new Set<string>(); // call ids whose first offer is being answered

  function forget(e: Entry): void {
    e.release();
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    if (peers.get(e.callId) === e) peers.delete(e.callId);
    if (byPc.get(e.transport.pcId) === e) byPc.delete(e.transport.pcId);
  }

  /** The peer never connected: the row ends no_participant, the slot is freed, call.ended then call.completed go out. */
  async function noParticipant(e: Entry, why: string): Promise<void> {
    if (e.running || !peers.has(e.callId)) return;
    forget(e);
    e.transport.destroy();
    logger.info({ callId: e.callId, why }, 'webrtc peer never connected: no_participant');
    const rows = await deps.db.any(sql.type(neverConnectedRow)`
      UPDATE calls SET status = 'error', connection_status = 'no_participant', ended_reason = NULL, started_at = NULL,
        ended_at = now(), duration_seconds = NULL, updated_at = now(),
        tags = CASE WHEN 'not_connected' = ANY(tags) THEN tags ELSE array_append(tags, 'not_connected') END,
        logs = logs || ${JSON.stringify({ webrtc: { not_connected: why } })}::jsonb
      WHERE id = ${e.callId} AND status = 'active'
      RETURNING ${UNCONNECTED_RETURNING}`);
    await announceNeverConnected(deps, rows);
  }

  async function connected(e: Entry): Promise<void> {
    if (!peers.has(e.callId) || e.running) return;
    e.running = true;
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    // the call starts now (the answer may have been handed out a while ago)
    const startedAt = await deps.db.maybeOneFirst(sql.type(z.object({ started_at: z.string() }))`
      UPDATE calls SET started_at = now(), updated_at = now() WHERE id = ${e.callId} AND status = 'active' RETURNING started_at::text`);
    if (!startedAt) {
      // the row was ended meanwhile (e.g. reconciled): nothing to run
      forget(e);
      e.transport.close('refused', 'Call not available');
      return;
    }
    const session = await runner
      .run(e.transport, { ...e.row, started_at: startedAt }, {
        claimed: true,
        onFinished: async () => forget(e),
        // the peer failed on our side (an exception in one of its callbacks, or a fault on the media plane): not the
        // caller's hang-up
        hangupReason: () => (e.transport.lostWith ? 'pipeline_error' : 'user_hangup'),
      })
      .finally(() => e.release()); // live now (or it could not start): no longer joining
    if (!session) forget(e);
  }

  async function handleOffer(req: http.IncomingMessage, callId: string): Promise<unknown> {
    const orgId = await authenticate(req);
    const body = parse(offerBody, await readJson(req));
    const row = await loadCall(deps.db, callId);
    if (!row || row.organization_id !== orgId || !WEB_TRANSPORTS.includes(row.transport as never) || row.transport === 'websocket') {
      throw new Reply(404, CALL_NOT_FOUND);
    }
    // renegotiation of the live peer
    if (body.pc_id) {
      const e = byPc.get(body.pc_id);
      if (e && e.callId === callId) {
        const sdp = await e.transport.renegotiate(body.sdp).catch(offerFailed);
        return { sdp, type: 'answer', pc_id: e.transport.pcId, iceServers: browserIce };
      }
    }
    if (row.status === 'active' || starting.has(callId) || peers.has(callId)) throw new Reply(409, DUPLICATE_OFFER);
    if (row.status !== 'pending') throw new Reply(404, CALL_NOT_FOUND);
    // at the call's own weight; a call whose room the api reserved on this node is taken over, never refused for capacity
    const admitted = ctl.admission.admit('webrtc', { weight: ctl.weightOf?.('webrtc', row), reserved: reservedHere(row) });
    if (!admitted.ok) throw new Reply(503, admitted.text);

    starting.add(callId);
    let transport: WebRtcPeer | null = null;
    let release: (() => void) | null = admitted.release;
    try {
      const telephonySim = await deps.db.maybeOneFirst(sql.type(z.object({ telephony_sim: z.boolean() }))`
        SELECT telephony_sim FROM calls WHERE id = ${callId}`);
      const answered = await answer(body.sdp, { ...net, callId, logger, telephonySim: telephonySim ?? false }).catch(offerFailed);
      transport = answered.transport;
      const claimed = await claimCall(deps.db, callId, orgId);
      if (!claimed) throw new Reply(409, DUPLICATE_OFFER);
      const e: Entry = { callId, orgId, transport, row: claimed, timer: null, running: false, release };
      peers.set(callId, e);
      byPc.set(transport.pcId, e);
      transport = null; // owned by the entry now
      release = null;
      e.timer = setTimeout(() => void noParticipant(e, `not connected within ${config.WEBRTC_CONNECT_TIMEOUT_S} s`).catch((err: unknown) =>
        logger.error({ err, callId }, 'could not end an unconnected webrtc call')), config.WEBRTC_CONNECT_TIMEOUT_S * 1000);
      e.timer.unref();
      e.transport.onFailed((why) => void noParticipant(e, why).catch((err: unknown) => logger.error({ err, callId }, 'could not end a failed webrtc call')));
      e.transport.onConnected(() => ctl.track(connected(e).catch((err: unknown) => logger.error({ err, callId }, 'webrtc call failed to start'))));
      return { sdp: answered.sdp, type: 'answer', pc_id: e.transport.pcId, iceServers: browserIce };
    } finally {
      starting.delete(callId);
      transport?.destroy();
      release?.(); // not answered: no longer joining
    }
  }

  async function handleCandidate(req: http.IncomingMessage, callId: string): Promise<unknown> {
    const orgId = await authenticate(req);
    const body = parse(patchBody, await readJson(req));
    const row = await loadCall(deps.db, callId);
    if (!row || row.organization_id !== orgId || row.transport === 'websocket' || !WEB_TRANSPORTS.includes(row.transport as never)) {
      throw new Reply(404, CALL_NOT_FOUND);
    }
    const e = (body.pc_id ? byPc.get(body.pc_id) : undefined) ?? peers.get(callId);
    if (!e || e.callId !== callId) {
      if (row.status === 'pending') throw new Reply(409, 'No offer has been answered for this call yet: POST the offer first');
      throw new Reply(404, CALL_NOT_FOUND);
    }
    const items = Array.isArray(body.candidate) ? body.candidate : [body.candidate];
    for (const c of items) {
      if (c === null) continue;
      const text = typeof c === 'string' ? c : c.candidate;
      const mid = typeof c === 'string' ? null : (c.sdpMid ?? null);
      if (text.trim() && !/^(a=)?candidate:/.test(text.trim())) throw new Reply(400, 'Invalid ICE candidate');
      try {
        await e.transport.addRemoteCandidate(text, mid);
      } catch {
        throw new Reply(400, 'Invalid ICE candidate');
      }
    }
    return { success: true };
  }

  async function authenticate(req: http.IncomingMessage): Promise<string> {
    const h = req.headers['x-api-key'];
    const key = (Array.isArray(h) ? h[0] : h) ?? '';
    if (!key) throw new Reply(401, 'Authorization header required');
    const principal = await resolveApiKey(deps.db, key);
    if (!principal) throw new Reply(401, 'Invalid or expired API key');
    if (!principal.organizationId) throw new Reply(400, 'No organization selected');
    // the organization's request-rate limit, as on the REST API
    const limit = await orgRateLimit(principal.organizationId);
    const decision = await hitRateLimit(deps.db, principal.organizationId, limit);
    if (!decision.allowed) throw new Reply(429, 'Rate limit exceeded');
    return principal.organizationId;
  }

  const rateCache = new Map<string, { limit: number; at: number }>();
  async function orgRateLimit(orgId: string): Promise<number> {
    const cached = rateCache.get(orgId);
    if (cached && Date.now() - cached.at < 5_000) return cached.limit;
    const limit = await deps.db.maybeOneFirst(sql.type(z.object({ rate_per_minute: z.number().nullable() }))`
      SELECT rate_per_minute FROM organizations WHERE id = ${orgId}`);
    const value = limit ?? config.DEFAULT_RATE_PER_MINUTE;
    rateCache.set(orgId, { limit: value, at: Date.now() });
    return value;
  }

  const handler: HttpHandler = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let work: (() => Promise<unknown>) | null = null;
    const m = OFFER_PATH.exec(url.pathname);
    const query: Record<string, string[]> = Object.create(null); // 'constructor' or '__proto__' are just names here
    for (const [k, v] of url.searchParams) (query[k] ??= []).push(v);
    const unstorable = [...flatFindings('query', query), ...(m ? flatFindings('path', { call_id: safeDecode(m[1]!) }) : [])];
    if (m && unstorable.length > 0) {
      work = () => Promise.reject(new Reply(422, unstorable422(unstorable)));
    } else if (m) {
      const callId = safeDecode(m[1]!);
      if (req.method === 'POST') work = () => handleOffer(req, callId);
      else if (req.method === 'PATCH') work = () => handleCandidate(req, callId);
      else work = () => Promise.reject(new Reply(405, 'Method Not Allowed'));
    } else if (ICE_PATH.test(url.pathname)) {
      work = unstorable.length > 0 ? () => Promise.reject(new Reply(422, unstorable422(unstorable))) : req.method === 'GET'
        ? async () => { await authenticate(req); return { iceServers: browserIce }; }
        : () => Promise.reject(new Reply(405, 'Method Not Allowed'));
    }
    if (!work) return false;
    const p = work().then(
      (body) => send(res, 200, body),
      (err: unknown) => {
        if (err instanceof Reply) return send(res, err.status, { detail: err.detail });
        logger.error({ err }, 'webrtc signaling failed');
        send(res, 500, { detail: 'Internal Server Error' });
      },
    );
    ctl.track(p);
    return true;
  };

  return {
    http: handler,
    peers,
    plane,
    async close() {
      // answered peers that never connected end like any unconnected call; running calls were ended by the runner
      await Promise.allSettled([...peers.values()].filter((e) => !e.running).map((e) => noParticipant(e, 'media process shutting down')));
      for (const e of [...peers.values()]) {
        forget(e);
        e.transport.destroy();
      }
      if (plane) await plane.close(); // DTLS close notifications leave before the thread ends
      else await new Promise((r) => setTimeout(r, 300)); // DTLS close notifications leave
      await local;
      releaseRuntime?.();
    },
  };
}

function offerFailed(err: unknown): never {
  if (err instanceof OfferError) throw new Reply(400, err.message);
  throw err;
}

function parse<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const unstorable = bodyFindings(value); // the API's input guard, same answer (core/input-guard.ts)
  if (unstorable.length > 0) throw new Reply(422, unstorable422(unstorable));
  const r = schema.safeParse(value);
  if (!r.success) throw new Reply(422, to422(zodToItems(r.error, value), 'body'));
  return r.data;
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > MAX_BODY) throw new Reply(413, `Request body exceeds ${MAX_BODY} bytes`);
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) throw new Reply(400, 'A JSON body is required');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Reply(400, `Malformed JSON body: ${(err as Error).message}`);
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}
