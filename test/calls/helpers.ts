// Test-only helpers for call rows: write history rows directly (with chosen timestamps) and read rows back.
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';

export interface SeedCall {
  organizationId: string;
  transport?: string;
  status?: string;
  connectionStatus?: string | null;
  endedReason?: string | null;
  agentUuid?: string | null;
  agentName?: string | null;
  campaignId?: number | null;
  platformNumber?: string | null;
  customerNumber?: string | null;
  telephonyProvider?: string | null;
  callSource?: string;
  tags?: string[];
  createdAt?: string;
  startedAt?: string | null;
  endedAt?: string | null;
  durationSeconds?: number | null;
  cost?: number | null;
}

export async function seedCall(db: Db, c: SeedCall): Promise<string> {
  return db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO calls (organization_id, transport, status, connection_status, ended_reason, agent_uuid, agent_name,
                       campaign_id, platform_number, customer_number, telephony_provider, call_source, tags,
                       created_at, started_at, ended_at, duration_seconds, cost)
    VALUES (${c.organizationId}, ${c.transport ?? 'websocket'}, ${c.status ?? 'completed'},
            ${c.connectionStatus === undefined ? 'completed' : c.connectionStatus}, ${c.endedReason === undefined ? 'user_hangup' : c.endedReason},
            ${c.agentUuid ?? null}, ${c.agentName ?? null}, ${c.campaignId ?? null}, ${c.platformNumber ?? null},
            ${c.customerNumber ?? null}, ${c.telephonyProvider ?? null}, ${c.callSource ?? 'websocket'},
            ${sql.array(c.tags ?? [], 'text')}, ${c.createdAt ?? new Date().toISOString()}::timestamptz,
            ${c.startedAt ?? null}::timestamptz, ${c.endedAt === undefined ? new Date().toISOString() : c.endedAt}::timestamptz,
            ${c.durationSeconds ?? null}, ${c.cost ?? null})
    RETURNING id`);
}

export const callRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  status: z.string(),
  connection_status: z.string().nullable(),
  ended_reason: z.string().nullable(),
  transport: z.string(),
  call_source: z.string(),
  tags: z.array(z.string()),
  agent_uuid: z.string().nullable(),
  agent_name: z.string().nullable(),
  config_snapshot: z.any(),
  context_variables: z.any(),
  logs: z.any(),
  telephony_sim: z.boolean(),
  ended_at: z.string().nullable(),
  created_at: z.string(),
});

export function rowsOf(db: Db, orgId: string) {
  return db.any(sql.type(callRow)`
    SELECT id, organization_id, status, connection_status, ended_reason, transport, call_source, tags, agent_uuid,
           agent_name, config_snapshot, context_variables, logs, telephony_sim, ended_at, created_at
    FROM calls WHERE organization_id = ${orgId} ORDER BY created_at, id`);
}

export function rowById(db: Db, id: string) {
  return db.one(sql.type(callRow)`
    SELECT id, organization_id, status, connection_status, ended_reason, transport, call_source, tags, agent_uuid,
           agent_name, config_snapshot, context_variables, logs, telephony_sim, ended_at, created_at
    FROM calls WHERE id = ${id}`);
}

/** Pretend a row was created `seconds` ago. */
export async function backdate(db: Db, id: string, seconds: number): Promise<void> {
  await db.query(sql.unsafe`UPDATE calls SET created_at = created_at - make_interval(secs => ${seconds}) WHERE id = ${id}`);
}
