// The carriers' media-stream WebSocket endpoints (core/telephony/README.md):
//  - Twilio  `/api/v1/telephony/twilio/stream/{callId}`: the TwiML <Stream> of a call the api created (outbound
//    dial or inbound voice webhook). Authenticated by the signed token in `start.customParameters.token`.
//  - Smartflo `/api/v1/telephony/smartflo/stream/{configId}?sig=…`: the static Voice Bot URL of a configuration
//    (signed with its id). At `start`, resolveInboundStream finds the call: our outbound call by its signed
//    custom identifier, else an inbound binding, else the number's agent (gates run there); a refused inbound call
//    hears a short refusal and is hung up.
// Every accepted stream waits for `start`, checks its credentials before touching any row (a bad token changes
// nothing: close 1008), claims the pending row and runs it through the call runner like any other transport.
// Backpressure (media/admission.ts): while the node drains a new stream closes 1013 'Server is draining'; once its
// credentials are checked, a stream over the node's capacity closes 1013 'Media node at capacity' before anything
// is claimed or created (the call row stays as it was: pending). From then until its call runs (or the set-up
// fails) the stream counts toward capacity as a joining call.
// The phone-only parts of a call live here: carrier hang-up when the agent ends the call, transfer through the
// carrier adapter, voicemail detection, and the end-of-call hook of core/telephony.
//
// What a phone call leaves on its row beyond a web call's: `carrier_call_id` (the stream's callSid); `logs.dtmf` =
// `[{digit, t_ms, timestamp}]` for every key the caller pressed (t_ms from the start of the session; the keys also
// reach the LLM as a user turn `[keypad: …]`, never as a transcript role); `logs.voicemail_detection` = the verdict `{result: machine|human, by: amd|words|
// long_greeting|initial_silence|window, answeredBy?, words?, ms?}`; `logs.transfer` = `{transferId, destination,
// record, requestedAt}` (plus `error` when the carrier refused); `logs.carrier_stop` = Smartflo's stop reason.
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { sql } from '../core/db/pool.ts';
import type { UpgradeHandler } from '../core/http-server.ts';
import { resolveInboundStream } from '../core/telephony/inbound.ts';
import { onPhoneCallEnded } from '../core/telephony/ended.ts';
import { verifySmartfloStreamSig, verifyStreamToken } from '../core/telephony/signing.ts';
import { callCarrier } from '../core/telephony/store.ts';
import { carrierHookUrl, twilioRecordingUrl } from '../core/telephony/urls.ts';
import type { MediaDeps } from './deps.ts';
import type { Admission } from './admission.ts';
import { createLocalTts } from './services/tts/local.ts';
import { claimCall, loadCall, type CallRow } from './session/lifecycle.ts';
import type { CallRunner, RunOptions } from './session/runner.ts';
import { VoicemailDetector, type VoicemailVerdict } from './session/voicemail.ts';
import type { CarrierTransfer } from './tools/runtime.ts';
import { createCallEventListener, type CallEventListener } from './telephony-events.ts';
import type { CarrierStreamTransport } from './transports/carrier-stream.ts';
import { SmartfloStreamTransport } from './transports/smartflo.ts';
import { TwilioStreamTransport } from './transports/twilio.ts';
import { carrierTransportFor } from './transports/registry.ts';
import { carrierFor } from '../core/telephony/registry.ts';

const TWILIO_PATH = /^\/api\/v1\/telephony\/twilio\/stream\/([^/?#]+)\/?$/;
const SMARTFLO_PATH = /^\/api\/v1\/telephony\/smartflo\/stream\/([^/?#]+)\/?$/;
/** The other carriers: `/api/v1/telephony/{carrier}/stream/{callId}?token=…` (core/telephony/urls.ts carrierStreamUrl). */
const CARRIER_PATH = /^\/api\/v1\/telephony\/([a-z]+)\/stream\/([^/?#]+)\/?$/;
/** how long a carrier may take between accepting the socket and sending `start` */
const START_TIMEOUT_MS = 10_000;

const phoneRow = z.object({
  transport: z.string(),
  status: z.string(),
  telephony_provider: z.string().nullable(),
  answered_by: z.string().nullable(),
});

export interface TelephonyStreams {
  upgrade: UpgradeHandler;
  close(): Promise<void>;
}

export function createTelephonyStreams(deps: MediaDeps, runner: CallRunner, admission: Admission): TelephonyStreams {
  const { db, config, logger } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  const pending = new Set<Promise<void>>();
  let events: CallEventListener | null = null;
  const listener = () => (events ??= createCallEventListener(config.DATABASE_URL, logger));

  const accept = (req: http.IncomingMessage, socket: Duplex, head: Buffer) =>
    new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));

  const upgrade: UpgradeHandler = (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const tw = TWILIO_PATH.exec(url.pathname);
    const sf = tw ? null : SMARTFLO_PATH.exec(url.pathname);
    const other = tw || sf ? null : CARRIER_PATH.exec(url.pathname);
    const make = other ? carrierTransportFor(other[1]!) : null;
    if (!tw && !sf && !make) return false;
    const p = (async () => {
      const ws = await accept(req, socket, head);
      ws.on('error', (err) => logger.debug({ err }, 'carrier stream socket error'));
      if (tw) await twilioStream(ws, decodeURIComponent(tw[1]!));
      else if (sf) await smartfloStream(ws, decodeURIComponent(sf[1]!), url.searchParams.get('sig'));
      else await carrierStream(make!(ws, url.searchParams), other![1]!, decodeURIComponent(other![2]!), url.searchParams.get('token'));
    })().catch((err: unknown) => {
      logger.error({ err, path: url.pathname }, 'carrier stream setup failed');
      if (!socket.destroyed) socket.destroy();
    });
    const tracked = p.finally(() => pending.delete(tracked));
    pending.add(tracked);
    return true;
  };

  async function twilioStream(ws: WebSocket, callId: string): Promise<void> {
    const transport = new TwilioStreamTransport(ws);
    if (admission.refusal() === 'draining') return transport.closeWith(1013, 'Server is draining');
    const start = await transport.waitStart(START_TIMEOUT_MS).catch(() => null);
    if (!start) return transport.closeWith(1008, 'No start message');
    if (!verifyStreamToken(config, callId, start.customParameters.token)) {
      logger.warn({ callId }, 'twilio stream with a missing or forged token refused');
      return transport.closeWith(1008, 'Invalid stream token');
    }
    await admitted(transport, async () => {
      const info = await phoneInfo(callId);
      if (!info || info.telephony_provider !== 'twilio' || info.status !== 'pending') return transport.closeWith(1008, 'Call not available');
      await runPhoneCall(transport, callId, start.callSid, info);
    });
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
    // before resolveInboundStream: a refused stream creates no inbound call row
    await admitted(transport, async () => {
      const inbound = await resolveInboundStream(
        { db, config, logger, temporal: deps.temporal },
        { configId: Number(rawConfigId), customParameters: start.customParameters, from: start.from ?? '', to: start.to ?? '', carrierCallId: start.callSid || null },
      );
      if (!inbound.ok) {
        logger.info({ reason: inbound.reason, callId: inbound.callId }, 'smartflo stream refused');
        await speakAndClose(transport, inbound.message);
        return;
      }
      const info = await phoneInfo(inbound.callId);
      if (!info || info.status !== 'pending') return transport.closeWith(1008, 'Call not available');
      await runPhoneCall(transport, inbound.callId, start.callSid, info);
    });
  }

  /** A carrier on the generic stream path: the signed per-call token is in the URL, checked before anything else. */
  async function carrierStream(transport: CarrierStreamTransport, carrier: string, callId: string, token: string | null): Promise<void> {
    if (!verifyStreamToken(config, callId, token)) {
      logger.warn({ callId, carrier }, 'carrier stream with a missing or forged token refused');
      return transport.closeWith(1008, 'Invalid stream token');
    }
    if (admission.refusal() === 'draining') return transport.closeWith(1013, 'Server is draining');
    const start = await transport.waitStart(START_TIMEOUT_MS).catch(() => null);
    if (!start) return transport.closeWith(1008, 'No start message');
    await admitted(transport, async () => {
      const info = await phoneInfo(callId);
      if (!info || info.telephony_provider !== carrier || info.status !== 'pending') return transport.closeWith(1008, 'Call not available');
      await runPhoneCall(transport, callId, start.callSid, info);
    });
  }

  /** A stream whose credentials checked out: refused over capacity (or draining), else counted as joining during setUp. */
  async function admitted(transport: CarrierStreamTransport, setUp: () => Promise<void>): Promise<void> {
    const a = admission.admit('carrier');
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
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(callId)) return null;
    return db.maybeOne(sql.type(phoneRow)`
      SELECT transport, status, telephony_provider, answered_by FROM calls
      WHERE id = ${callId} AND transport IN ('outbound', 'inbound')`);
  }

  async function runPhoneCall(transport: CarrierStreamTransport, callId: string, carrierCallId: string, info: z.infer<typeof phoneRow>): Promise<void> {
    const row = await loadCall(db, callId);
    if (!row) return transport.closeWith(1008, 'Call not available');
    const claimed = await claimCall(db, row.id, row.organization_id);
    if (!claimed) return transport.closeWith(1008, 'Call not available');
    if (carrierCallId) {
      await db.query(sql.type(z.object({}))`
        UPDATE calls SET carrier_call_id = COALESCE(carrier_call_id, ${carrierCallId}) WHERE id = ${callId}`);
    }
    if (claimed.transport === 'inbound' && (claimed.config_snapshot as { recordInProviderConsole?: unknown } | null)?.recordInProviderConsole === true) {
      void startCarrierRecording(callId);
    }
    await runner.run(transport, claimed, phoneOptions(claimed, transport, info));
  }

  /**
   * recordInProviderConsole on an inbound call of a carrier whose answer cannot ask for it (Twilio): the call is live
   * on our stream now, so the carrier's REST API can record it. A failure is logged; the call goes on unrecorded.
   */
  async function startCarrierRecording(callId: string): Promise<void> {
    try {
      const carrier = await callCarrier(db, config, callId);
      if (!carrier?.carrierCallId || !carrier.adapter.startRecording) return;
      await carrier.adapter.startRecording({ config, logger }, carrier.creds, carrier.carrierCallId);
    } catch (err) {
      logger.warn({ err, callId }, 'the carrier could not start recording the inbound call');
    }
  }

  /** The phone-only behaviour of one call (see the file header). */
  function phoneOptions(row: CallRow, transport: CarrierStreamTransport, info: z.infer<typeof phoneRow>): RunOptions {
    let transferred = false;
    const log = logger.child({ callId: row.id, transport: transport.kind });
    const appendLogs = (entry: Record<string, unknown>) =>
      db
        .query(sql.type(z.object({}))`UPDATE calls SET logs = logs || ${JSON.stringify(entry)}::jsonb WHERE id = ${row.id}`)
        .catch((err: unknown) => log.warn({ err }, 'could not write call logs'));

    const transfer: CarrierTransfer = async ({ destination, timeoutS, recordTransfer }) => {
      const carrier = await callCarrier(db, config, row.id).catch(() => null);
      if (!carrier?.carrierCallId) return { ok: false, error: 'provider_not_supported: the carrier call is not known' };
      const transferId = randomUUID();
      await appendLogs({ transfer: { transferId, destination, record: recordTransfer, requestedAt: new Date().toISOString() } });
      transferred = true; // the stream stops once the carrier moves the call: that stop means "transferred"
      try {
        await carrier.adapter.transfer({ config, logger: log }, carrier.creds, carrier.carrierCallId, {
          callId: row.id,
          destination,
          timeoutS,
          recordingCallbackUrl: !recordTransfer ? null
            : carrier.adapter.id === 'twilio' ? twilioRecordingUrl(config, row.id)
            // carriers on the generic routes that sign their callbacks post the leg's recording to its `recording` hook
            : carrier.adapter.hooks && !carrier.adapter.signedUrls ? carrierHookUrl(config, carrier.adapter.id, 'recording', row.id) : null,
          callerId: carrier.platformNumber,
        });
        return { ok: true };
      } catch (err) {
        transferred = false;
        await appendLogs({ transfer: { transferId, destination, record: recordTransfer, error: (err as Error).message } });
        return { ok: false, error: (err as Error).message };
      }
    };

    const snap = (row.config_snapshot ?? {}) as { voicemailDetection?: unknown; greeting?: { speakFirst?: unknown } };
    const observers = [];
    if (row.transport === 'outbound' && snap.voicemailDetection !== false) {
      // Twilio dials with async AMD whenever the agent asks for voicemail detection (core/telephony/outbound.ts)
      const amd =
        (carrierFor(info.telephony_provider ?? '')?.carrierAmd ?? info.telephony_provider === 'twilio')
          ? {
              current: async () =>
                db.maybeOneFirst(sql.type(z.object({ answered_by: z.string().nullable() }))`SELECT answered_by FROM calls WHERE id = ${row.id}`),
              subscribe: async (cb: (a: string) => void) =>
                listener().subscribe(row.id, (ev) => {
                  if (ev.type === 'amd' && typeof ev.answeredBy === 'string') cb(ev.answeredBy);
                }),
            }
          : null;
      observers.push(
        new VoicemailDetector({
          amd,
          speakFirst: snap.greeting?.speakFirst === 'user' ? 'user' : 'agent',
          logger: log,
          onVerdict: (v: VoicemailVerdict) => void appendLogs({ voicemail_detection: v }),
        }),
      );
    }

    return {
      claimed: true,
      tools: { transfer },
      hangupReason: () => (transferred ? 'transferred' : 'user_hangup'),
      session: { observers },
      async onFinished(_row, result) {
        if (transport.stopReason) await appendLogs({ carrier_stop: transport.stopReason });
        if (result.reason !== 'user_hangup' && result.reason !== 'transferred') {
          // we end the call: the stream closes after the last audio played (Twilio then runs out of TwiML and hangs
          // up); the carrier's hang-up makes it certain
          await transport.whenPlayed(2000);
          const carrier = await callCarrier(db, config, row.id).catch(() => null);
          if (carrier?.carrierCallId) {
            await carrier.adapter.hangup({ config, logger: log }, carrier.creds, carrier.carrierCallId).catch((err: unknown) => log.warn({ err }, 'carrier hang-up failed'));
          }
        }
        await onPhoneCallEnded({ db, config, logger, temporal: deps.temporal }, row.id).catch((err: unknown) => log.warn({ err }, 'phone call end hook failed'));
      },
    };
  }

  /** A refused call hears why (local eSpeak voice, no vendor involved), then the stream ends. */
  async function speakAndClose(transport: CarrierStreamTransport, text: string): Promise<void> {
    try {
      const tts = createLocalTts({ languages: ['en'] });
      const parts: Int16Array[] = [];
      for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
      await tts.close?.();
      const pcm = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
      parts.reduce((o, p) => (pcm.set(p, o), o + p.length), 0);
      for (let i = 0; i < pcm.length; i += 480) transport.sendAudio(pcm.subarray(i, i + 480));
      await transport.whenPlayed((pcm.length / 24000) * 1000 + 3000);
    } catch (err) {
      logger.warn({ err }, 'refusal message could not be spoken');
    }
    transport.close('normal');
  }

  return {
    upgrade,
    async close() {
      await Promise.allSettled([...pending]);
      for (const c of wss.clients) c.terminate();
      await events?.close();
    },
  };
}
