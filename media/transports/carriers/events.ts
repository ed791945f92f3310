// The media side of the live phone-call events the api process announces (core/telephony/call-events.ts). One
// LISTEN connection per media process, opened on the first subscription; a lost connection is reopened on the next.
import pg from 'pg';
import type { Logger } from '../../../core/logger.ts';
import { CALL_EVENTS_CHANNEL, type CallEvent } from '../../../core/telephony/call-events.ts';

export type { CallEvent };

export interface CallEventListener {
  /** Resolves once the LISTEN is in place (events NOTIFYed after that are delivered). */
  subscribe(callId: string, cb: (ev: CallEvent) => void): Promise<() => void>;
  close(): Promise<void>;
}

export function createCallEventListener(databaseUrl: string | undefined, logger: Logger): CallEventListener {
  const subs = new Map<string, Set<(ev: CallEvent) => void>>();
  let client: Promise<pg.Client> | null = null;
  let closed = false;

  function connect(): Promise<pg.Client> {
    if (client) return client;
    client = (async () => {
      if (!databaseUrl) throw new Error('DATABASE_URL is not set');
      const c = new pg.Client({ connectionString: databaseUrl });
      c.on('error', (err) => {
        logger.warn({ err }, 'telephony event listener connection lost');
        client = null;
      });
      c.on('notification', (n) => {
        if (n.channel !== CALL_EVENTS_CHANNEL || !n.payload) return;
        let ev: CallEvent;
        try {
          ev = JSON.parse(n.payload) as CallEvent;
        } catch {
          return;
        }
        for (const cb of subs.get(ev.callId) ?? []) cb(ev);
      });
      await c.connect();
      await c.query(`LISTEN ${CALL_EVENTS_CHANNEL}`);
      return c;
    })();
    client.catch(() => (client = null));
    return client;
  }

  return {
    async subscribe(callId, cb) {
      let set = subs.get(callId);
      if (!set) subs.set(callId, (set = new Set()));
      set.add(cb);
      if (!closed) await connect();
      return () => {
        set.delete(cb);
        if (!set.size) subs.delete(callId);
      };
    },
    async close() {
      closed = true;
      subs.clear();
      const c = client;
      client = null;
      if (c) await c.then((x) => x.end()).catch(() => {});
    },
  };
}
