// Events about live phone calls, announced by the api process (carrier webhooks) to the media process that runs the
// call: `NOTIFY telephony_call_events, '{"callId":…,"type":"amd","answeredBy":…}'`. The media side listens with one
// connection per process (media/transports/carriers/events.ts).
import { sql, type Db } from '../db/pool.ts';

export const CALL_EVENTS_CHANNEL = 'telephony_call_events';

export interface CallEvent {
  callId: string;
  type: string;
  answeredBy?: string;
}

export async function notifyCallEvent(db: Db, ev: CallEvent): Promise<void> {
  await db.query(sql.unsafe`SELECT pg_notify(${CALL_EVENTS_CHANNEL}, ${JSON.stringify(ev)})`);
}
