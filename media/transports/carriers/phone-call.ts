// The phone-only parts of a carrier call, handed to the call runner as options: transfer through the carrier
// adapter, the carrier's hang-up when the agent ends the call, answer supervision on outbound calls (carrier AMD and
// end-of-message where the adapter has them, else what the first seconds sound like: media/session/answer-supervisor.ts),
// keys through the carrier's DTMF API where it has one, the carrier's whole-call recording of inbound
// calls, and the end-of-call hook of core/telephony. What a phone call leaves on its row beyond a web call's:
// `carrier_call_id`; `logs.dtmf` = `[{digit, t_ms, timestamp}]` for every key the caller pressed (the keys also reach
// the LLM as a user turn `[keypad: …]`, never as a transcript role); `logs.voicemail_detection` = the verdict
// `{result: human|voicemail|ivr, by: amd|phrases|words|beep|long_greeting|initial_silence|window, answeredBy?, words?,
// ms?}`; `logs.voicemail` = `{left, after: carrier|beep|silence|timeout, waitedMs}` when a message was left;
// `logs.transfer` = `{transferId, destination, timeoutS, record, recordSkipped?, requestedAt}` (plus `error` when the
// carrier refused; `recordSkipped` says why a recordTransfer was not recorded); `logs.carrier_recording_unsupported`
// = why recordInProviderConsole could not be honoured on this carrier and direction;
// `logs.carrier_stop` = the carrier's stop reason.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../../core/db/pool.ts';
import { SecretUnreadable } from '../../../core/secrets.ts';
import { onPhoneCallEnded } from '../../../core/telephony/ended.ts';
import { carrierFor } from '../../../core/telephony/registry.ts';
import { callCarrier } from '../../../core/telephony/store.ts';
import { carrierHookUrl } from '../../../core/telephony/urls.ts';
import { concatInt16 } from '../../audio/pcm.ts';
import type { MediaDeps } from '../../deps.ts';
import { createLocalTts } from '../../services/tts/local.ts';
import { writeCallLogs, type CallRow } from '../../session/lifecycle.ts';
import type { RunOptions } from '../../session/runner.ts';
import { answerSupervisorFor } from '../../session/answer-supervisor.ts';
import type { CarrierTransfer } from '../../tools/runtime.ts';
import type { CallEventListener } from './events.ts';
import type { CarrierStreamTransport } from './stream.ts';

export interface PhoneCallDeps extends MediaDeps {
  /** The process's listener of live phone-call events (AMD results), opened on first use. */
  events(): CallEventListener;
}

/** The phone-only behaviour of one claimed call (see the file header). */
export function phoneCallOptions(deps: PhoneCallDeps, row: CallRow, transport: CarrierStreamTransport, provider: string | null): RunOptions {
  const { db, config, logger } = deps;
  let transferred = false;
  const log = logger.child({ callId: row.id, transport: transport.kind });
  const appendLogs = (entry: Record<string, unknown>) =>
    db
      .query(sql.type(z.object({}))`UPDATE calls SET logs = logs || ${JSON.stringify(entry)}::jsonb WHERE id = ${row.id}`)
      .catch((err: unknown) => log.warn({ err }, 'could not write call logs'));

  const adapter = carrierFor(provider ?? '');
  const direction = row.transport === 'inbound' ? 'inbound' : 'outbound';
  const wantsWholeCall = (row.config_snapshot as { recordInProviderConsole?: unknown } | null)?.recordInProviderConsole === true;
  const wholeCallUnsupported = wantsWholeCall && adapter ? adapter.recordingSupport(direction === 'inbound' ? 'inbound_call' : 'outbound_call') : null;
  if (wholeCallUnsupported) {
    // an agent that met this carrier before the API refused such agents (or whose number's carrier changed): the
    // call goes on without the carrier's recording, and its logs say why
    log.warn({ reason: wholeCallUnsupported }, 'recordInProviderConsole cannot be honoured by this carrier');
    void appendLogs({ carrier_recording_unsupported: wholeCallUnsupported });
  }
  /** The carrier records the whole call itself: a transferred leg must not be recorded a second time. */
  const wholeCallRecorded = wantsWholeCall && !wholeCallUnsupported;
  if (row.transport === 'inbound' && wholeCallRecorded) {
    void startCarrierRecording(deps, row.id);
  }

  const transfer: CarrierTransfer = async ({ destination, timeoutS, recordTransfer }) => {
    let carrier;
    try {
      carrier = await callCarrier(db, config, row.id);
    } catch (err) {
      // credentials the current key cannot open: the LLM hears why, the call goes on
      return { ok: false, error: err instanceof SecretUnreadable ? err.message : 'provider_not_supported: the carrier of this call could not be loaded' };
    }
    if (!carrier?.carrierCallId) return { ok: false, error: 'provider_not_supported: the carrier call is not known' };
    const transferId = randomUUID();
    // recordTransfer: the transferred conversation is recorded by the carrier and re-hosted — unless the carrier
    // records the whole call already (recordInProviderConsole: the conversation is in that recording, so no second
    // one), or cannot record a transferred leg (Smartflo), which the logs then say
    const legUnsupported = carrier.adapter.recordingSupport('transfer_leg')
      ?? (carrier.adapter.hooks && !carrier.adapter.signedUrls ? null : `${carrier.adapter.id} posts no recording of a transferred leg`);
    const record = recordTransfer && !wholeCallRecorded && !legUnsupported;
    const recordSkipped = !recordTransfer || record ? undefined
      : wholeCallRecorded ? 'the carrier records the whole call (recordInProviderConsole): the transferred conversation is in that recording'
        : legUnsupported!;
    if (recordSkipped && !wholeCallRecorded) log.warn({ reason: recordSkipped }, 'recordTransfer cannot be honoured by this carrier');
    const entry = { transferId, destination, timeoutS, record, ...(recordSkipped ? { recordSkipped } : {}) };
    await appendLogs({ transfer: { ...entry, requestedAt: new Date().toISOString() } });
    transferred = true; // the stream stops once the carrier moves the call: that stop means "transferred"
    try {
      await carrier.adapter.transfer({ config, logger: log }, carrier.creds, carrier.carrierCallId, {
        callId: row.id,
        destination,
        timeoutS,
        // carriers that sign their callbacks post the transferred leg's recording to its `recording` webhook
        recordingCallbackUrl: record ? carrierHookUrl(config, carrier.adapter.id, 'recording', row.id) : null,
        callerId: carrier.platformNumber,
      });
      return { ok: true };
    } catch (err) {
      transferred = false;
      await appendLogs({ transfer: { ...entry, error: (err as Error).message } });
      return { ok: false, error: (err as Error).message };
    }
  };

  const observers = [];
  if (row.transport === 'outbound') {
    // carriers with AMD were asked for it at dial time (core/telephony/outbound.ts): their verdicts arrive as events
    const amd = adapter?.carrierAmd
      ? {
          current: async () =>
            db.maybeOneFirst(sql.type(z.object({ answered_by: z.string().nullable() }))`SELECT answered_by FROM calls WHERE id = ${row.id}`),
          subscribe: async (cb: (a: string, messageEnd: boolean) => void) =>
            deps.events().subscribe(row.id, (ev) => {
              if (ev.type === 'amd' && typeof ev.answeredBy === 'string') cb(ev.answeredBy, ev.messageEnd === true);
            }),
          messageEnd: adapter.amdMessageEnd === true,
        }
      : null;
    const supervisor = answerSupervisorFor({
      snapshot: row.config_snapshot, web: false, amd, logger: log,
      writeLogs: (e, tag) => writeCallLogs(db, row.id, e, tag).catch((err: unknown) => log.warn({ err }, 'could not write call logs')),
    });
    if (supervisor) observers.push(supervisor);
  }

  // keys through the carrier's DTMF API (the stream goes on); carriers without one get in-band tones
  const carrierDtmf = adapter?.sendDtmf
    ? async (digits: string) => {
        const carrier = await callCarrier(db, config, row.id);
        if (!carrier?.carrierCallId || !carrier.adapter.sendDtmf) throw new Error('the carrier call is not known');
        await carrier.adapter.sendDtmf({ config, logger: log }, carrier.creds, carrier.carrierCallId, digits);
      }
    : undefined;

  return {
    claimed: true,
    tools: { transfer, ...(adapter ? { transferSupport: (d: string) => adapter.transferSupport(d) } : {}) },
    ...(carrierDtmf ? { carrierDtmf } : {}),
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

/**
 * recordInProviderConsole on an inbound call of a carrier whose answer cannot ask for it (Twilio): the call is live
 * on our stream now, so the carrier's REST API can record it. A failure is logged; the call goes on unrecorded.
 */
async function startCarrierRecording(deps: MediaDeps, callId: string): Promise<void> {
  const { db, config, logger } = deps;
  try {
    const carrier = await callCarrier(db, config, callId);
    if (!carrier?.carrierCallId || !carrier.adapter.startRecording) return;
    await carrier.adapter.startRecording({ config, logger }, carrier.creds, carrier.carrierCallId);
  } catch (err) {
    logger.warn({ err, callId }, 'the carrier could not start recording the inbound call');
  }
}

/** A refused call hears why (local eSpeak voice, no vendor involved), then the stream ends. */
export async function speakAndClose(deps: Pick<MediaDeps, 'logger'>, transport: CarrierStreamTransport, text: string): Promise<void> {
  try {
    const tts = createLocalTts({ languages: ['en'] });
    const parts: Int16Array[] = [];
    for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
    await tts.close?.();
    const pcm = concatInt16(parts);
    for (let i = 0; i < pcm.length; i += 480) transport.sendAudio(pcm.subarray(i, i + 480));
    await transport.whenPlayed((pcm.length / 24000) * 1000 + 3000);
  } catch (err) {
    deps.logger.warn({ err }, 'refusal message could not be spoken');
  }
  transport.close('normal');
}
