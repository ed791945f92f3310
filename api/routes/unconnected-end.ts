// The end of one of our phone calls that a carrier status callback reports before the media stream connected
// (busy, no-answer, failed, canceled, or answered and gone): shared by the Twilio callbacks (carrier-webhooks.ts)
// and the generic carrier hooks (carrier-hooks.ts). The row is finished as never connected (only if still pending:
// exactly one caller wins), then the never-connected rule (core/calls/unconnected.ts: `call.ended`, then
// `call.completed` from the post-call workflow) and the phone-call end hook follow.
import { announceUnconnected, finishUnconnected, onPhoneCallEnded } from '../../core/telephony/ended.ts';
import type { ApiDeps } from '../deps.ts';

/** Finish a still-pending call as never connected with `connectionStatus`, recording the carrier's status. */
export async function endUnconnectedCall(deps: ApiDeps, callId: string, connectionStatus: string, carrierStatus: { status: string; duration: unknown }): Promise<void> {
  const ended = await finishUnconnected(deps.db, callId, connectionStatus, { carrier_status: carrierStatus });
  if (!ended) return;
  void announceUnconnected(deps, ended);
  await onPhoneCallEnded(deps, ended.id).catch((err: unknown) => deps.logger.warn({ err, callId: ended.id }, 'phone-call end hook failed'));
}
