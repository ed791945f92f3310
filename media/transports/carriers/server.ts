// The carriers' media-stream WebSocket endpoints (core/telephony/README.md):
//  - `/api/v1/telephony/{carrier}/stream/{callId}`: the stream of a call the api created (outbound dial or inbound
//    webhook), authenticated by our signed per-call token (in the URL, or in Twilio's `start.customParameters`).
//  - `/api/v1/telephony/smartflo/stream/{configId}?sig=…`: Smartflo's static Voice Bot URL of a configuration (signed
//    with its id). At `start`, resolveInboundStream finds the call: our outbound call by its signed custom
//    identifier, else an inbound binding, else the number's agent (gates run there); a refused inbound call hears a
//    short refusal and is hung up.
// Every accepted stream waits for `start`, checks its credentials before touching any row (a bad token changes
// nothing: close 1008), claims the pending row and runs it through the call runner like any other transport, with
// the phone-only options of phone-call.ts. Backpressure (media/admission.ts): a call whose room the api reserved on
// this node before dialling it is taken (the node takes the reservation over); any other stream over the node's
// capacity closes 1013 'Media node at capacity' before anything is claimed or created, and while the node drains an
// unreserved stream closes 1013 'Server is draining'. From admission until its call runs (or the set-up fails) the
// stream counts toward capacity as a joining call.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import type { UpgradeHandler } from '../../../core/http-server.ts';
import { refusalMessage, resolveInboundStream } from '../../../core/telephony/inbound.ts';
import { verifySmartfloStreamSig, verifyStreamToken } from '../../../core/telephony/signing.ts';
import type { Admission } from '../../admission.ts';
import type { MediaDeps } from '../../deps.ts';
import { claimCall, loadCall, reservedHere, type CallRow } from '../../session/lifecycle.ts';
import type { CallRunner } from '../../session/runner.ts';
import { createCallEventListener, type CallEventListener } from './events.ts';
import { carrierDialect } from './index.ts';
import { phoneCallOptions, speakAndClose } from './phone-call.ts';
import { SmartfloStreamTransport } from './smartflo.ts';
import type { CarrierStreamTransport } from './stream.ts';

const SMARTFLO_PATH = /^\/api\/v1\/telephony\/smartflo\/stream\/([^/?#]+)\/?$/;
/** `/api/v1/telephony/{carrier}/stream/{callId}` (core/telephony/urls.ts carrierStreamUrl). */
const CARRIER_PATH = /^\/api\/v1\/telephony\/([a-z]+)\/stream\/([^/?#]+)\/?$/;
/** how long a carrier may take between accepting the socket and sending `start` */
const START_TIMEOUT_MS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const phoneRow = z.object({
  transport: z.string(),
  status: z.string(),
  telephony_provider: z.string().nullable(),
});

export interface CarrierStreams {
  upgrade: UpgradeHandler;
  close(): Promise<void>;
}

/** `weightOf`: what a call of this row weighs on this node when it joins on transport `kind`. */
export function createCarrierStreams(deps: MediaDeps, runner: CallRunner, admission: Admission, weightOf: (kind: string, row: CallRow) => number): CarrierStreams {
  const { db, config, logger } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const pending = new Set<Promise<void>>();
  let listener: CallEventListener | null = null;
  const phoneDeps = { ...deps, events: () => (listener ??= createCallEventListener(config.DATABASE_URL, logger)) };

  const accept = (req: http.IncomingMessage, socket: Duplex, head: Buffer) =>
    new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));

  const upgrade: UpgradeHandler = (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const sf = SMARTFLO_PATH.exec(url.pathname);
    const other = sf ? null : CARRIER_PATH.exec(url.pathname);
    const dialect = other ? carrierDialect(other[1]!) : null;
    if (!sf && !dialect) return false;
    const p = (async () => {
      const ws = await accept(req, socket, head);
      ws.on('error', (err) => logger.debug({ err }, 'carrier stream socket error'));
      if (sf) await smartfloStream(ws, decodeURIComponent(sf[1]!), url.searchParams.get('sig'));
      else await callStream(dialect!.make(ws, url.searchParams), dialect!.tokenIn, other![1]!, decodeURIComponent(other![2]!), url.searchParams.get('token'));
    })().catch((err: unknown) => {
      logger.error({ err, path: url.pathname }, 'carrier stream setup failed');
      if (!socket.destroyed) socket.destroy();
    });
    const tracked = p.finally(() => pending.delete(tracked));
    pending.add(tracked);
    return true;
  };

  /** The stream of one of our calls: the signed per-call token is checked before anything else. */
  async function callStream(transport: CarrierStreamTransport, tokenIn: 'url' | 'start', carrier: string, callId: string, urlToken: string | null): Promise<void> {
    const refuseToken = () => {
      logger.warn({ callId, carrier }, 'carrier stream with a missing or forged token refused');
      transport.closeWith(1008, 'Invalid stream token');
    };
    if (tokenIn === 'url' && !verifyStreamToken(config, callId, urlToken)) return refuseToken();
    const start = await transport.waitStart(START_TIMEOUT_MS).catch(() => null);
    if (!start) return transport.closeWith(1008, 'No start message');
    if (tokenIn === 'start' && !verifyStreamToken(config, callId, start.customParameters.token)) return refuseToken();
    const info = await phoneInfo(callId);
    const row = info && info.telephony_provider === carrier && info.status === 'pending' ? await loadCall(db, callId) : null;
    if (!row || row.status !== 'pending') return transport.closeWith(1008, 'Call not available');
    await admitted(transport, { weight: weightOf(transport.kind, row), reserved: reservedHere(row) }, () => runPhoneCall(transport, row, start.callSid, carrier));
  }

  async function smartfloStream(ws: WebSocket, rawConfigId: string, sig: string | null): Promise<void> {
    const transport = new SmartfloStreamTransport(ws);
    if (!/^\d{1,18}$/.test(rawConfigId) || !verifySmartfloStreamSig(config, rawConfigId, sig)) {
      logger.warn({ configId: rawConfigId }, 'smartflo stream with a missing or forged signature refused');
      return transport.closeWith(1008, 'Invalid stream signature');
    }
    if (admission.refusal() === 'draining') return transport.closeWith(1013, 'Server is draining');
    const start = await transport.waitStart(START_TIMEOUT_MS).catch(() => null);
    if (!start) return transport.closeWith(1008, 'No start message');
    // before resolveInboundStream: its engines are not known yet, so it is held at the transport's joining weight
    // until its call runs. Smartflo has answered already: a stream over capacity hears the busy message, and its
    // call is resolved only to leave the refused row.
    if (admission.refusal('carrier') === 'capacity') {
      const refused = await resolveInboundStream(
        { db, config, logger, temporal: deps.temporal },
        { configId: Number(rawConfigId), customParameters: start.customParameters, from: start.from ?? '', to: start.to ?? '', carrierCallId: start.callSid || null, atCapacity: true },
      ).catch((err: unknown) => (logger.warn({ err }, 'the refused smartflo stream left no row'), null));
      logger.info({ reason: 'capacity', callId: refused?.callId ?? null }, 'smartflo stream refused');
      return speakAndClose(deps, transport, refused && !refused.ok ? refused.message : refusalMessage('media_capacity'));
    }
    await admitted(transport, {}, async () => {
      const inbound = await resolveInboundStream(
        { db, config, logger, temporal: deps.temporal },
        { configId: Number(rawConfigId), customParameters: start.customParameters, from: start.from ?? '', to: start.to ?? '', carrierCallId: start.callSid || null },
      );
      if (!inbound.ok) {
        logger.info({ reason: inbound.reason, callId: inbound.callId }, 'smartflo stream refused');
        await speakAndClose(deps, transport, inbound.message);
        return;
      }
      const row = await loadCall(db, inbound.callId);
      if (!row || row.status !== 'pending') return transport.closeWith(1008, 'Call not available');
      await runPhoneCall(transport, row, start.callSid, 'smartflo');
    });
  }

  /**
   * A stream whose credentials checked out: refused over capacity (unless its room was reserved here) or while
   * draining, else counted as joining during setUp.
   */
  async function admitted(transport: CarrierStreamTransport, opts: { weight?: number; reserved?: boolean }, setUp: () => Promise<void>): Promise<void> {
    const a = admission.admit('carrier', opts);
    if (!a.ok) {
      logger.info({ reason: a.reason, transport: transport.kind }, 'carrier stream refused');
      return transport.closeWith(1013, a.text);
    }
    try {
      await setUp(); // resolves once runner.run has the call live, or it could not start
    } finally {
      a.release();
    }
  }

  async function phoneInfo(callId: string) {
    if (!UUID.test(callId)) return null;
    return db.maybeOne(sql.type(phoneRow)`
      SELECT transport, status, telephony_provider FROM calls
      WHERE id = ${callId} AND transport IN ('outbound', 'inbound')`);
  }

  async function runPhoneCall(transport: CarrierStreamTransport, row: CallRow, carrierCallId: string, provider: string): Promise<void> {
    const callId = row.id;
    const claimed = await claimCall(db, row.id, row.organization_id);
    if (!claimed) return transport.closeWith(1008, 'Call not available');
    if (carrierCallId) {
      await db.query(sql.type(z.object({}))`
        UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${carrierCallId}) WHERE id = ${callId}`);
    }
    await runner.run(transport, claimed, phoneCallOptions(phoneDeps, claimed, transport, provider));
  }

  return {
    upgrade,
    async close() {
      await Promise.allSettled([...pending]);
      for (const c of wss.clients) c.terminate();
      await listener?.close();
    },
  };
}
