// Activities of the campaign workflow (workflows/campaign). Contacts, attempts, counters, state and logs live in
// PostgreSQL; each activity is idempotent, so a retry or a re-run after a worker crash converges on the same rows.
// Dialing is exactly-once through the business key `campaignId:contactId:attempt` that placeOutboundCall stores on
// the call row (it returns the existing call when the key is already there).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { CsvError } from '../core/campaigns/csv.ts';
import type { AttemptOutcome } from '../core/campaigns/policy.ts';
import { effectiveConcurrency } from '../core/campaigns/policy.ts';
import type { CampaignLogEntry, CampaignSettings, CampaignState } from '../core/campaigns/schemas.ts';
import { readContacts, SourceError } from '../core/campaigns/source.ts';
import {
  appendCampaignLogs,
  callerIdCount,
  getCampaignById,
  logEntry,
  orgCeiling,
  reserveCallerId,
  settingsOf,
} from '../core/campaigns/store.ts';
import type { Config } from '../core/config.ts';
import { sql, type Db } from '../core/db/pool.ts';
import type { Logger } from '../core/logger.ts';
import type { Storage } from '../core/storage/index.ts';
import { GateRefused, OutboundInvalid, ProviderRejected } from '../core/telephony/errors.ts';
import { DIAL_PLACED, placeOutboundCall, type OutboundDeps } from '../core/telephony/outbound.ts';

export interface CampaignDeps {
  config: Config;
  db: Db;
  logger: Logger;
  storage: Storage;
  /** Places one outbound call (core/telephony/outbound.ts placeOutboundCall); injectable for tests of the activity alone. */
  dialer: Dialer;
}

export interface DialRequest {
  orgId: string;
  agentUuid: string;
  telephonyConfigId: number;
  provider: string;
  fromNumber: string;
  toNumber: string;
  contextVariables: Record<string, string>;
  campaignId: number;
  dialKey: string;
}
/** Resolves with the call (existing when the dial key was already used); rejects with DialRefusal or other errors. */
export type Dialer = (req: DialRequest) => Promise<{ callId: string; existing: boolean }>;

/** How a dial error is classified by the dialer adapter (activities/worker wiring). */
export type DialRefusal =
  | { kind: 'wait'; waitFor: 'organization slot' | 'media_capacity' }
  | { kind: 'refused'; reason: string; message: string }
  | { kind: 'failed'; callId: string | null; connectionStatus: string; message: string };
export class DialRefusedError extends Error {
  constructor(readonly refusal: DialRefusal) {
    super('message' in refusal ? refusal.message : refusal.waitFor);
  }
}

export type DialOutcome =
  | { kind: 'dialed'; callId: string; ended: AttemptOutcome | null }
  | { kind: 'wait'; waitFor: 'organization slot' | 'caller_id' | 'media_capacity' }
  | { kind: 'refused'; reason: string; message: string }
  | { kind: 'failed'; callId: string | null; connectionStatus: string; message: string };

/**
 * The real dialer: placeOutboundCall with the campaign's agent, configuration and caller ID. Its typed errors become
 * DialRefusedError: an organization slot full → wait; wallet/quota → refused (the campaign pauses); a carrier
 * rejection → failed with the dial_failed row; an invalid agent/configuration → failed (initiation_failed).
 */
function activityClient() {
  try {
    return Context.current().client;
  } catch {
    return null; // not running as an activity (unit tests), or a worker without a client
  }
}

export function outboundDialer(deps: OutboundDeps): Dialer {
  return async (req) => {
    try {
      // Inside an activity the worker's own client is at hand: a dial that fails or never connects then gets its
      // call.completed like any never-connected call (core/calls/unconnected.ts).
      const placed = await placeOutboundCall({ ...deps, temporal: deps.temporal ?? activityClient() }, {
        orgId: req.orgId,
        agentUuid: req.agentUuid,
        telephonyConfigId: req.telephonyConfigId,
        fromNumber: req.fromNumber,
        toNumber: req.toNumber,
        contextVariables: req.contextVariables,
        campaignId: req.campaignId,
        dialKey: req.dialKey,
        callSource: 'api_outbound',
        tags: ['outbound', 'campaign'],
      });
      return { callId: placed.callId, existing: placed.existing };
    } catch (err) {
      if (err instanceof GateRefused) {
        if (err.slotFull) throw new DialRefusedError({ kind: 'wait', waitFor: 'organization slot' });
        // no media node has room: nothing was dialled and no row written; the contact waits like for a slot
        if (err.mediaFull) throw new DialRefusedError({ kind: 'wait', waitFor: 'media_capacity' });
        const message = typeof err.detail === 'string' ? err.detail : String((err.detail as { error_message?: unknown }).error_message ?? err.message);
        throw new DialRefusedError({ kind: 'refused', reason: err.reason, message });
      }
      if (err instanceof ProviderRejected) {
        throw new DialRefusedError({ kind: 'failed', callId: err.callId, connectionStatus: 'dial_failed', message: `Carrier rejected the dial: ${err.detail.message}` });
      }
      if (err instanceof OutboundInvalid) {
        throw new DialRefusedError({ kind: 'failed', callId: null, connectionStatus: 'initiation_failed', message: `Call could not be started: ${err.message}` });
      }
      throw err;
    }
  };
}

export const dialKey = (campaignId: number, contactId: number, attempt: number) => `${campaignId}:${contactId}:${attempt}`;

const NOT_FOUND = 'CampaignNotFound';
const SOURCE_INVALID = 'CampaignSourceInvalid';
const IMPORT_BATCH = 2000;

const contactRow = z.object({
  id: z.number(),
  row_number: z.number(),
  phone_number: z.string(),
  context_variables: z.record(z.string(), z.unknown()),
  attempts: z.number(),
  status: z.string(),
});
const endedCallRow = z.object({
  id: z.string(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  duration_seconds: z.number().nullable(),
});
const counts = z.object({ executed: z.number(), total: z.number() });

const ENDED = sql.fragment`status IN ('completed', 'error')`;

export function createCampaignActivities(deps: CampaignDeps) {
  const { db, storage, logger } = deps;

  async function campaignOrFail(campaignId: number) {
    const c = await getCampaignById(db, campaignId);
    if (!c) throw ApplicationFailure.create({ type: NOT_FOUND, message: `campaign ${campaignId} not found`, nonRetryable: true });
    return c;
  }

  return {
    async loadCampaign(a: { campaignId: number }): Promise<{ settings: CampaignSettings; state: CampaignState; organizationId: string }> {
      const c = await campaignOrFail(a.campaignId);
      return { settings: settingsOf(c), state: c.state as CampaignState, organizationId: c.organization_id };
    },

    /** Writes the state (started_at on first leaving created, completed_at on a terminal state) and a log entry. */
    async setState(a: { campaignId: number; state: CampaignState; at: number; log: Omit<CampaignLogEntry, 'ts'> | null }): Promise<void> {
      const at = new Date(a.at).toISOString();
      const entries = a.log ? JSON.stringify([logEntry(a.at, a.log)]) : '[]';
      await db.query(sql.unsafe`
        UPDATE campaigns SET state = ${a.state},
          started_at = CASE WHEN started_at IS NULL AND ${a.state} <> 'created' THEN ${at}::timestamptz ELSE started_at END,
          completed_at = CASE WHEN ${a.state} IN ('completed', 'failed') THEN COALESCE(completed_at, ${at}::timestamptz) ELSE completed_at END,
          logs = logs || ${entries}::jsonb, updated_at = now()
        WHERE id = ${a.campaignId}`);
    },

    async appendLog(a: { campaignId: number; at: number; entry: Omit<CampaignLogEntry, 'ts'> }): Promise<void> {
      await appendCampaignLogs(db, a.campaignId, [logEntry(a.at, a.entry)]);
    },

    /**
     * Reads the CSV again (it was validated at creation) and inserts one contact per row, in batches; rows already
     * there (a retried import) are kept. Heartbeats the batch reached.
     */
    async importContacts(a: { campaignId: number }): Promise<{ imported: number; failed: number; total: number }> {
      const c = await campaignOrFail(a.campaignId);
      let contacts;
      try {
        contacts = await readContacts(storage, c.source_key);
      } catch (err) {
        if (err instanceof SourceError || err instanceof CsvError) {
          throw ApplicationFailure.create({ type: SOURCE_INVALID, message: err.message, nonRetryable: true });
        }
        throw err;
      }
      for (let i = 0; i < contacts.length; i += IMPORT_BATCH) {
        const batch = contacts.slice(i, i + IMPORT_BATCH);
        await db.query(sql.unsafe`
          INSERT INTO campaign_contacts (campaign_id, row_number, phone_number, context_variables)
          SELECT ${a.campaignId}, r, p, v::jsonb
          FROM unnest(${sql.array(batch.map((x) => x.rowNumber), 'int4')}::int[], ${sql.array(batch.map((x) => x.phoneNumber), 'text')}::text[],
                      ${sql.array(batch.map((x) => JSON.stringify(x.variables)), 'text')}::text[]) AS t(r, p, v)
          ON CONFLICT (campaign_id, row_number) DO NOTHING`);
        await db.query(sql.unsafe`UPDATE campaigns SET processed_rows = ${Math.min(i + IMPORT_BATCH, contacts.length)}, updated_at = now() WHERE id = ${a.campaignId}`);
        Context.current().heartbeat({ rows: i + batch.length });
      }
      const imported = await db.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM campaign_contacts WHERE campaign_id = ${a.campaignId}`);
      const failed = contacts.length - imported;
      await db.query(sql.unsafe`
        UPDATE campaigns SET total_rows = ${contacts.length}, processed_rows = ${contacts.length}, failed_rows = ${failed},
          total_queued_count = ${imported}, updated_at = now()
        WHERE id = ${a.campaignId}`);
      return { imported, failed, total: contacts.length };
    },

    /** min(max_concurrency, organization ceiling, caller-ID pool size of the campaign's (organization, config)). */
    async capacity(a: { campaignId: number; maxConcurrency: number }) {
      const c = await campaignOrFail(a.campaignId);
      const [ceiling, callerIds] = await Promise.all([
        orgCeiling(db, deps.config, c.organization_id),
        callerIdCount(db, c.organization_id, c.telephony_configuration_id),
      ]);
      const capacity = effectiveConcurrency(a.maxConcurrency, ceiling, callerIds);
      return {
        capacity,
        maxConcurrency: a.maxConcurrency,
        orgCeiling: ceiling,
        callerIds,
        message: callerIds === 0
          ? `Telephony configuration ${c.telephony_configuration_id} has no active phone number to call from`
          : `Dialing at most ${capacity} calls at a time`,
      };
    },

    /** Up to `limit` contacts due now: retries whose time came first, then never-dialed contacts after the cursor. */
    async nextContacts(a: { campaignId: number; cursor: number; limit: number; now: number }) {
      const now = new Date(a.now).toISOString();
      const retries = await db.any(sql.type(contactRow)`
        SELECT id, row_number, phone_number, context_variables, attempts, status FROM campaign_contacts
        WHERE campaign_id = ${a.campaignId} AND status = 'retry' AND next_attempt_at <= ${now}::timestamptz
        ORDER BY next_attempt_at, id LIMIT ${a.limit}`);
      const fresh = retries.length >= a.limit ? [] : await db.any(sql.type(contactRow)`
        SELECT id, row_number, phone_number, context_variables, attempts, status FROM campaign_contacts
        WHERE campaign_id = ${a.campaignId} AND status = 'queued' AND id > ${a.cursor}
        ORDER BY id LIMIT ${a.limit - retries.length}`);
      const picked = [...retries, ...fresh];
      const lastFresh = fresh.at(-1)?.id ?? a.cursor;
      const summary = await db.one(sql.type(z.object({ more_queued: z.boolean(), next_retry_at: z.string().nullable(), executed: z.number(), total: z.number() }))`
        SELECT EXISTS (SELECT 1 FROM campaign_contacts WHERE campaign_id = ${a.campaignId} AND status = 'queued' AND id > ${lastFresh}) AS more_queued,
               (SELECT min(next_attempt_at) FROM campaign_contacts WHERE campaign_id = ${a.campaignId} AND status = 'retry'
                 AND id <> ALL(${sql.array(retries.map((r) => r.id), 'int8')})) AS next_retry_at,
               executed_count AS executed, total_queued_count AS total
        FROM campaigns WHERE id = ${a.campaignId}`);
      return {
        contacts: picked.map((r) => ({ contactId: r.id, rowNumber: r.row_number, phoneNumber: r.phone_number, attempt: r.attempts + 1 })),
        moreQueued: summary.more_queued,
        nextRetryAt: summary.next_retry_at === null ? null : new Date(summary.next_retry_at).getTime(),
        executed: summary.executed,
        total: summary.total,
      };
    },

    /**
     * Dials one contact for one attempt, exactly once: the attempt row and a caller ID of the pool are reserved,
     * then placeOutboundCall with the dial key (which returns the existing call on a retry). An organization without
     * a free slot or caller ID answers `wait`; a wallet/quota refusal `refused`; a carrier rejection `failed`.
     */
    async dialContact(a: { campaignId: number; contactId: number; attempt: number }): Promise<DialOutcome> {
      const c = await campaignOrFail(a.campaignId);
      const contact = await db.maybeOne(sql.type(contactRow)`
        SELECT id, row_number, phone_number, context_variables, attempts, status FROM campaign_contacts
        WHERE id = ${a.contactId} AND campaign_id = ${a.campaignId}`);
      if (!contact) throw ApplicationFailure.create({ type: NOT_FOUND, message: `contact ${a.contactId} not found`, nonRetryable: true });
      const key = dialKey(a.campaignId, a.contactId, a.attempt);

      // A call already placed under this key (the activity ran before, e.g. on a worker that crashed): return it.
      // A row whose dial never left (the worker died between writing it and sending the dial: pending, never
      // claimed) is not placed: the dial below sends it with that row (core/telephony/outbound.ts).
      const existing = await db.maybeOne(sql.type(endedCallRow)`
        SELECT id, status, connection_status, ended_reason, duration_seconds FROM calls
        WHERE dial_key = ${key} AND ${DIAL_PLACED}`);
      if (existing) return dialed(a, existing, contact.attempts);

      await db.query(sql.unsafe`
        INSERT INTO campaign_attempts (campaign_id, contact_id, attempt, organization_id, scheduled_at)
        VALUES (${a.campaignId}, ${a.contactId}, ${a.attempt}, ${c.organization_id}, now())
        ON CONFLICT (campaign_id, contact_id, attempt) DO NOTHING`);
      await db.query(sql.unsafe`
        UPDATE campaign_contacts SET status = 'dialing', updated_at = now() WHERE id = ${a.contactId} AND status <> 'done'`);

      const from = await reserveCallerId(db, { orgId: c.organization_id, configId: c.telephony_configuration_id, campaignId: a.campaignId, contactId: a.contactId, attempt: a.attempt });
      if (!from) return { kind: 'wait', waitFor: 'caller_id' };
      const provider = await db.maybeOneFirst(sql.type(z.object({ provider: z.string() }))`
        SELECT provider FROM telephony_configs WHERE id = ${c.telephony_configuration_id} AND organization_id = ${c.organization_id}`);
      if (!provider) {
        return failAttempt(a, { kind: 'failed', callId: null, connectionStatus: 'initiation_failed', message: `Telephony configuration ${c.telephony_configuration_id} no longer exists` });
      }
      const vars: Record<string, string> = {};
      for (const [k, v] of Object.entries(contact.context_variables)) vars[k] = String(v ?? '');
      try {
        const r = await deps.dialer({
          orgId: c.organization_id,
          agentUuid: c.agent_uuid,
          telephonyConfigId: c.telephony_configuration_id,
          provider,
          fromNumber: from,
          toNumber: contact.phone_number,
          contextVariables: vars,
          campaignId: a.campaignId,
          dialKey: key,
        });
        const row = await db.one(sql.type(endedCallRow)`
          SELECT id, status, connection_status, ended_reason, duration_seconds FROM calls WHERE id = ${r.callId}`);
        return dialed(a, row, contact.attempts);
      } catch (err) {
        if (!(err instanceof DialRefusedError)) throw err;
        const refusal = err.refusal;
        if (refusal.kind === 'failed') return failAttempt(a, refusal);
        // Not dialed: release the caller ID for others while the workflow waits.
        await db.query(sql.unsafe`
          UPDATE campaign_attempts SET caller_id = NULL
          WHERE campaign_id = ${a.campaignId} AND contact_id = ${a.contactId} AND attempt = ${a.attempt} AND call_id IS NULL`);
        return refusal;
      }
    },

    /**
     * Records how attempts ended, in one transaction: each attempt row, the contact's last status (and its retry
     * time, or done), and executed_count once per finished contact. Returns the campaign's counters.
     */
    async recordOutcomes(a: {
      campaignId: number;
      at: number;
      items: Array<{ contactId: number; attempt: number; outcome: AttemptOutcome; failure: boolean; retry: { at: number; delaySeconds: number; reason: string } | null }>;
    }): Promise<{ executed: number; total: number }> {
      const at = new Date(a.at).toISOString();
      return db.transaction(async (tx) => {
        let finished = 0;
        for (const it of a.items) {
          const o = it.outcome;
          await tx.query(sql.unsafe`
            INSERT INTO campaign_attempts (campaign_id, contact_id, attempt, organization_id, scheduled_at)
            SELECT ${a.campaignId}, ${it.contactId}, ${it.attempt}, organization_id, ${at}::timestamptz FROM campaigns WHERE id = ${a.campaignId}
            ON CONFLICT (campaign_id, contact_id, attempt) DO NOTHING`);
          await tx.query(sql.unsafe`
            UPDATE campaign_attempts SET call_id = COALESCE(call_id, ${o.callId}::uuid), connection_status = ${o.connectionStatus},
              ended_reason = ${o.endedReason}, duration_seconds = ${o.durationSeconds}, failure = ${it.failure},
              ended_at = COALESCE(ended_at, ${at}::timestamptz)
            WHERE campaign_id = ${a.campaignId} AND contact_id = ${it.contactId} AND attempt = ${it.attempt}`);
          const moved = await tx.maybeOneFirst(sql.type(z.object({ id: z.number() }))`
            UPDATE campaign_contacts SET attempts = GREATEST(attempts, ${it.attempt}), last_call_id = COALESCE(${o.callId}::uuid, last_call_id),
              last_status = ${o.connectionStatus}, last_ended_reason = ${o.endedReason}, last_duration_seconds = ${o.durationSeconds},
              status = ${it.retry ? 'retry' : 'done'},
              next_attempt_at = ${it.retry ? new Date(it.retry.at).toISOString() : null}::timestamptz, updated_at = now()
            WHERE id = ${it.contactId} AND campaign_id = ${a.campaignId} AND status <> 'done' AND attempts <= ${it.attempt}
            RETURNING id`);
          if (moved === null) continue; // recorded before (an activity retry)
          if (it.retry) {
            await tx.query(sql.unsafe`
              INSERT INTO campaign_attempts (campaign_id, contact_id, attempt, organization_id, scheduled_at, retry_delay_seconds)
              SELECT ${a.campaignId}, ${it.contactId}, ${it.attempt + 1}, organization_id, ${new Date(it.retry.at).toISOString()}::timestamptz, ${it.retry.delaySeconds}
              FROM campaigns WHERE id = ${a.campaignId}
              ON CONFLICT (campaign_id, contact_id, attempt) DO NOTHING`);
          } else {
            finished++;
          }
        }
        return tx.one(sql.type(counts)`
          UPDATE campaigns SET executed_count = executed_count + ${finished}, updated_at = now() WHERE id = ${a.campaignId}
          RETURNING executed_count AS executed, total_queued_count AS total`);
      });
    },

    /** Final rows of the given campaign calls that already ended (a safety net for an outcome signal that never came). */
    async endedCalls(a: { campaignId: number; callIds: string[] }) {
      const rows = await db.any(sql.type(endedCallRow)`
        SELECT id, status, connection_status, ended_reason, duration_seconds FROM calls
        WHERE id = ANY(${sql.array(a.callIds, 'uuid')}) AND campaign_id = ${a.campaignId} AND ${ENDED}`);
      if (rows.length) logger.info({ campaignId: a.campaignId, calls: rows.length }, 'campaign calls ended without an outcome signal');
      return rows.map((r) => ({ callId: r.id, status: r.status, connectionStatus: r.connection_status, endedReason: r.ended_reason, durationSeconds: r.duration_seconds }));
    },
  };

  /** The attempt row gets its call id; a call that already ended comes back with its outcome. */
  async function dialed(a: { campaignId: number; contactId: number; attempt: number }, row: z.infer<typeof endedCallRow>, _attempts: number): Promise<DialOutcome> {
    await db.query(sql.unsafe`
      UPDATE campaign_attempts SET call_id = ${row.id}::uuid, dialed_at = COALESCE(dialed_at, now())
      WHERE campaign_id = ${a.campaignId} AND contact_id = ${a.contactId} AND attempt = ${a.attempt}`);
    await db.query(sql.unsafe`
      UPDATE campaign_contacts SET last_call_id = ${row.id}::uuid, updated_at = now() WHERE id = ${a.contactId} AND status <> 'done'`);
    const ended = row.status === 'completed' || row.status === 'error'
      ? { callId: row.id, connectionStatus: row.connection_status, endedReason: row.ended_reason, durationSeconds: row.duration_seconds }
      : null;
    return { kind: 'dialed', callId: row.id, ended };
  }

  async function failAttempt(a: { campaignId: number; contactId: number; attempt: number }, f: Extract<DialOutcome, { kind: 'failed' }>): Promise<DialOutcome> {
    await db.query(sql.unsafe`
      UPDATE campaign_attempts SET call_id = COALESCE(call_id, ${f.callId}::uuid), dialed_at = COALESCE(dialed_at, now())
      WHERE campaign_id = ${a.campaignId} AND contact_id = ${a.contactId} AND attempt = ${a.attempt}`);
    return f;
  }
}

export type CampaignActivities = ReturnType<typeof createCampaignActivities>;
