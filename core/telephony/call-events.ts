// Events about live phone calls, announced by the api process (carrier webhooks) to the media process that runs the
// call: `NOTIFY telephony_call_events, '{"callId":…,"type":"amd","answeredBy":…,"messageEnd":…}'`. The media side
// listens with one connection per process (media/transports/carriers/events.ts). `messageEnd`: the carrier says a
// machine's greeting is over (Twilio DetectMessageEnd `machine_end_*`, Telnyx greeting ended, Vonage beep).
import { sql, type Db } from '../db/pool.ts';

export const CALL_EVENTS_CHANNEL = 'telephony_call_events';

export interface CallEvent {
  callId: string;
  type: string;
  answeredBy?: string;
  /** the machine's greeting has ended (its beep, or the silence after it): a voicemail message can start */
  messageEnd?: boolean;
}

/** An AMD verdict that also says the machine's greeting is over (Twilio's `machine_end_*`). */
export function isMessageEnd(answeredBy: string): boolean {
  return answeredBy.toLowerCase().startsWith('machine_end_');
}

export async function notifyCallEvent(db: Db, ev: CallEvent): Promise<void> {
  await db.query(sql.unsafe`SELECT pg_notify(${CALL_EVENTS_CHANNEL}, ${JSON.stringify(ev)})`);
}
