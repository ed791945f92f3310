// Inbound bindings: the stored agent snapshot (contextVariables baked in; placeholders left for call time so that
// built-ins such as {{current_time}} resolve fresh per call) and the (organization, provider, number) upsert.
import type { Config } from '../config.ts';
import { validateAgentConfig, type AgentConfig } from '../agent-config/index.ts';
import { sql, type Db } from '../db/pool.ts';
import { policyFromConfig } from '../net/ssrf.ts';
import { bindingRow, BINDING_COLS, sealCredentials, type BindingRow } from './store.ts';
import type { Credentials } from './types.ts';

export type Baked = { ok: true; snapshot: AgentConfig } | { ok: false; status: 400 | 422; message: string };

/**
 * The config a binding stores: contextVariables = the agent's saved defaults overlaid with the given non-blank
 * values, validated again (limits of contextVariables, models against the catalog: a binding persists a config).
 */
export async function bakeBindingSnapshot(
  deps: { db: Db; config: Config },
  orgId: string,
  agent: Record<string, unknown>,
  contextVariables: Record<string, string> | null,
): Promise<Baked> {
  const saved = (agent.contextVariables ?? {}) as Record<string, string>;
  const merged: Record<string, string> = { ...saved };
  for (const [k, v] of Object.entries(contextVariables ?? {})) if (v.trim().length > 0) merged[k] = v;
  const checked = await validateAgentConfig({ ...agent, contextVariables: merged }, { db: deps.db, orgId, policy: policyFromConfig(deps.config) });
  if (!checked.ok) {
    if (checked.kind === 'model') return { ok: false, status: 422, message: checked.message };
    return { ok: false, status: 400, message: `Agent configuration is invalid: ${checked.items.map((i) => `${['agent', ...i.path].join('.')}: ${i.msg}`).join('; ')}` };
  }
  return { ok: true, snapshot: checked.config };
}

/** Last-write-wins upsert keyed by (organization, provider, canonical number). */
export async function upsertBinding(db: Db, config: Config, b: {
  orgId: string; provider: string; address: string; addressNormalized: string;
  agent: { id: number | null; uuid: string | null; name: string };
  snapshot: AgentConfig; contextVariables: Record<string, string>;
  credentials: Credentials | null; accountRef: string | null; telephonyConfigId: number | null;
}): Promise<BindingRow> {
  const creds = b.credentials ? sql.binary(sealCredentials(config, b.credentials)) : null;
  return db.one(sql.type(bindingRow)`
    INSERT INTO inbound_bindings (organization_id, provider, address, address_normalized, agent_id, agent_uuid, agent_name,
                                  agent_snapshot, context_variables, credentials, account_ref, telephony_config_id)
    VALUES (${b.orgId}, ${b.provider}, ${b.address}, ${b.addressNormalized}, ${b.agent.id}, ${b.agent.uuid}, ${b.agent.name},
            ${sql.jsonb(b.snapshot as never)}, ${sql.jsonb(b.contextVariables as never)}, ${creds}, ${b.accountRef}, ${b.telephonyConfigId})
    ON CONFLICT (organization_id, provider, address_normalized) DO UPDATE SET
      address = EXCLUDED.address, agent_id = EXCLUDED.agent_id, agent_uuid = EXCLUDED.agent_uuid, agent_name = EXCLUDED.agent_name,
      agent_snapshot = EXCLUDED.agent_snapshot, context_variables = EXCLUDED.context_variables, credentials = EXCLUDED.credentials,
      account_ref = EXCLUDED.account_ref, telephony_config_id = EXCLUDED.telephony_config_id, updated_at = now()
    RETURNING ${BINDING_COLS}`);
}
