// Telephony rows: configurations (credentials encrypted at rest), phone numbers, inbound bindings, and the carrier
// side of a call row. Every tenant lookup filters by organization.
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql, type Db } from '../db/pool.ts';
import { decryptJson, encryptJson, keyOf, mask, SecretUnreadable } from '../secrets.ts';
import { carrierFor } from './registry.ts';
import type { CarrierAdapter, Credentials } from './types.ts';
import { smartfloStreamUrl } from './urls.ts';

type Q = Pick<Db, 'one' | 'maybeOne' | 'any' | 'query' | 'oneFirst' | 'maybeOneFirst'>;

export const sealCredentials = (config: Config, creds: Credentials) => encryptJson(keyOf(config), creds);
/** Decrypted credentials; throws SecretUnreadable (naming `what`) when the current key cannot open them. */
export const openCredentials = (config: Config, blob: Buffer, what = 'a telephony configuration', remedy?: string) =>
  decryptJson<Credentials>(keyOf(config), blob, what, remedy);
/** Decrypted credentials, or null when the current key cannot open them (reads that show the record without them). */
export function readCredentials(config: Config, blob: Buffer): Credentials | null {
  try {
    return openCredentials(config, blob);
  } catch (err) {
    if (err instanceof SecretUnreadable) return null;
    throw err;
  }
}
/** What a response says of stored credentials: readable, unreadable with the current key, or none stored. */
export type CredentialsState = 'ok' | 'credentials_unreadable' | 'none';

/** The refusal of a configuration whose credentials the current key cannot open: names it and how to repair it. */
export const configUnreadable = (row: Pick<ConfigRow, 'id' | 'name'>) =>
  new SecretUnreadable(`telephony configuration '${row.name}' (id ${row.id})`, `send the complete credentials again with PUT /organizations/telephony-configs/${row.id}`);

/** A configuration's credentials; throws configUnreadable(row) when the current key cannot open them. */
export function configCredentials(config: Config, row: Pick<ConfigRow, 'id' | 'name' | 'credentials'>): Credentials {
  const creds = readCredentials(config, row.credentials);
  if (!creds) throw configUnreadable(row);
  return creds;
}

// ── configurations ─────────────────────────────────────────────────────────────────────────────────────────────
export const configRow = z.object({
  id: z.number(),
  organization_id: z.string(),
  name: z.string(),
  provider: z.string(),
  credentials: z.instanceof(Buffer),
  account_ref: z.string().nullable(),
  amd_enabled: z.boolean(),
  is_default_outbound: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConfigRow = z.infer<typeof configRow>;

const CONFIG_COLS = sql.fragment`id, organization_id::text, name, provider, credentials, account_ref, amd_enabled, is_default_outbound, created_at, updated_at`;

export async function getConfig(db: Q, orgId: string, id: number): Promise<ConfigRow | null> {
  return db.maybeOne(sql.type(configRow)`SELECT ${CONFIG_COLS} FROM telephony_configs WHERE id = ${id} AND organization_id = ${orgId}`);
}

export async function getConfigById(db: Q, id: number): Promise<ConfigRow | null> {
  return db.maybeOne(sql.type(configRow)`SELECT ${CONFIG_COLS} FROM telephony_configs WHERE id = ${id}`);
}

export async function listConfigs(db: Q, orgId: string, limit = 1000, offset = 0): Promise<{ rows: readonly ConfigRow[]; total: number }> {
  const rows = await db.any(sql.type(configRow)`
    SELECT ${CONFIG_COLS} FROM telephony_configs WHERE organization_id = ${orgId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`);
  const total = await db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM telephony_configs WHERE organization_id = ${orgId}`);
  return { rows, total };
}

export async function defaultConfig(db: Q, orgId: string): Promise<ConfigRow | null> {
  return db.maybeOne(sql.type(configRow)`
    SELECT ${CONFIG_COLS} FROM telephony_configs WHERE organization_id = ${orgId} AND is_default_outbound LIMIT 1`);
}

export async function insertConfig(db: Db, config: Config, c: {
  orgId: string; name: string; provider: string; creds: Credentials; accountRef: string | null; amdEnabled: boolean; isDefault: boolean;
}): Promise<ConfigRow> {
  return db.transaction(async (tx) => {
    if (c.isDefault) await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = false, updated_at = now() WHERE organization_id = ${c.orgId} AND is_default_outbound`);
    return tx.one(sql.type(configRow)`
      INSERT INTO telephony_configs (organization_id, name, provider, credentials, account_ref, amd_enabled, is_default_outbound)
      VALUES (${c.orgId}, ${c.name}, ${c.provider}, ${sql.binary(sealCredentials(config, c.creds))}, ${c.accountRef}, ${c.amdEnabled}, ${c.isDefault})
      RETURNING ${CONFIG_COLS}`);
  });
}

export async function updateConfig(db: Db, config: Config, orgId: string, id: number, c: {
  /** null: the stored credentials (and account_ref) stay as they are */
  name: string; creds: Credentials | null; accountRef: string | null; amdEnabled: boolean; isDefault: boolean;
}): Promise<ConfigRow | null> {
  return db.transaction(async (tx) => {
    if (c.isDefault) await tx.query(sql.unsafe`UPDATE telephony_configs SET is_default_outbound = false, updated_at = now() WHERE organization_id = ${orgId} AND is_default_outbound AND id <> ${id}`);
    return tx.maybeOne(sql.type(configRow)`
      UPDATE telephony_configs SET name = ${c.name},
        credentials = ${c.creds ? sql.binary(sealCredentials(config, c.creds)) : sql.fragment`credentials`},
        account_ref = ${c.creds ? c.accountRef : sql.fragment`account_ref`},
        amd_enabled = ${c.amdEnabled}, is_default_outbound = ${c.isDefault}, updated_at = now()
      WHERE id = ${id} AND organization_id = ${orgId}
      RETURNING ${CONFIG_COLS}`);
  });
}

/** Responses never carry a secret: secret fields are masked. */
export function maskedCredentials(adapter: CarrierAdapter, creds: Credentials): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(creds)) out[k] = adapter.secretFields.includes(k) ? mask(v) : v;
  return out;
}

/**
 * A configuration as responses show it. Credentials the current key cannot open (TELEPHONY_ENCRYPTION_KEY changed)
 * are left out of `config`, and `credentials_state` says so: the record stays readable, never a 500.
 */
export function configView(config: Config, row: ConfigRow, numbers?: number) {
  const adapter = carrierFor(row.provider);
  const creds = readCredentials(config, row.credentials);
  return {
    id: row.id,
    name: row.name,
    provider: row.provider,
    is_default_outbound: row.is_default_outbound,
    config: {
      provider: row.provider,
      ...(adapter && creds ? maskedCredentials(adapter, creds) : {}),
      ...(row.provider === 'twilio' ? { amd_enabled: row.amd_enabled } : {}),
    },
    credentials_state: (creds ? 'ok' : 'credentials_unreadable') satisfies CredentialsState,
    ...(row.provider === 'smartflo' ? { voice_bot_wss_url: smartfloStreamUrl(config, row.id) } : {}),
    ...(adapter?.configFields?.(config, row.id) ?? {}),
    ...(numbers === undefined ? {} : { phone_numbers_count: numbers }),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

// ── phone numbers ──────────────────────────────────────────────────────────────────────────────────────────────
export const numberRow = z.object({
  id: z.number(),
  organization_id: z.string(),
  telephony_config_id: z.number(),
  address: z.string(),
  address_normalized: z.string(),
  address_type: z.string(),
  label: z.string().nullable(),
  inbound_agent_id: z.number().nullable(),
  inbound_agent_uuid: z.string().nullable(),
  inbound_agent_name: z.string().nullable(),
  inbound_assigned_at: z.string().nullable(),
  is_active: z.boolean(),
  is_default_caller_id: z.boolean(),
  extra_metadata: z.record(z.string(), z.unknown()),
  carrier_ref: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type NumberRow = z.infer<typeof numberRow>;

const NUMBER_SELECT = sql.fragment`
  SELECT n.id, n.organization_id::text, n.telephony_config_id, n.address, n.address_normalized, n.address_type, n.label,
         n.inbound_agent_id, a.uuid::text AS inbound_agent_uuid, a.name AS inbound_agent_name, n.inbound_assigned_at,
         n.is_active, n.is_default_caller_id, n.extra_metadata, n.carrier_ref, n.created_at, n.updated_at
  FROM phone_numbers n LEFT JOIN agents a ON a.id = n.inbound_agent_id AND a.status = 'active'`;

export async function getNumber(db: Q, orgId: string, configId: number, id: number): Promise<NumberRow | null> {
  return db.maybeOne(sql.type(numberRow)`${NUMBER_SELECT} WHERE n.id = ${id} AND n.organization_id = ${orgId} AND n.telephony_config_id = ${configId}`);
}

export async function listNumbers(db: Q, orgId: string, configId: number, limit: number, offset: number) {
  const rows = await db.any(sql.type(numberRow)`${NUMBER_SELECT}
    WHERE n.organization_id = ${orgId} AND n.telephony_config_id = ${configId} ORDER BY n.id LIMIT ${limit} OFFSET ${offset}`);
  const total = await db.oneFirst(sql.type(z.object({ c: z.number() }))`
    SELECT count(*)::int AS c FROM phone_numbers WHERE organization_id = ${orgId} AND telephony_config_id = ${configId}`);
  return { rows, total };
}

/** The organization's active numbers of one carrier (with their configuration), for format-tolerant lookups. */
export async function activeNumbersOfProvider(db: Q, orgId: string, provider: string) {
  return db.any(sql.type(numberRow)`${NUMBER_SELECT}
    JOIN telephony_configs c ON c.id = n.telephony_config_id
    WHERE n.organization_id = ${orgId} AND c.provider = ${provider} AND n.is_active
    ORDER BY n.id`);
}

export async function numbersOfConfig(db: Q, configId: number): Promise<readonly NumberRow[]> {
  return db.any(sql.type(numberRow)`${NUMBER_SELECT} WHERE n.telephony_config_id = ${configId} ORDER BY n.id`);
}

export function numberView(row: NumberRow, providerSync?: { ok: boolean; message: string | null }) {
  return {
    id: row.id,
    telephony_configuration_id: row.telephony_config_id,
    address: row.address,
    address_normalized: row.address_normalized,
    address_type: row.address_type,
    label: row.label,
    inbound_agent_id: row.inbound_agent_uuid ? row.inbound_agent_id : null,
    inbound_agent_uuid: row.inbound_agent_uuid,
    inbound_agent_name: row.inbound_agent_name,
    is_active: row.is_active,
    is_default_caller_id: row.is_default_caller_id,
    extra_metadata: row.extra_metadata,
    created_at: row.created_at,
    updated_at: row.updated_at,
    ...(providerSync ? { provider_sync: providerSync } : {}),
  };
}

// ── inbound bindings ───────────────────────────────────────────────────────────────────────────────────────────
export const bindingRow = z.object({
  id: z.number(),
  organization_id: z.string(),
  provider: z.string(),
  address: z.string(),
  address_normalized: z.string(),
  agent_id: z.number().nullable(),
  agent_uuid: z.string().nullable(),
  agent_name: z.string().nullable(),
  agent_snapshot: z.record(z.string(), z.unknown()),
  context_variables: z.record(z.string(), z.string()),
  credentials: z.instanceof(Buffer).nullable(),
  account_ref: z.string().nullable(),
  telephony_config_id: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type BindingRow = z.infer<typeof bindingRow>;

export const BINDING_COLS = sql.fragment`id, organization_id::text, provider, address, address_normalized, agent_id, agent_uuid::text,
  agent_name, agent_snapshot, context_variables, credentials, account_ref, telephony_config_id, created_at, updated_at`;

export async function getBinding(db: Q, orgId: string, id: number): Promise<BindingRow | null> {
  return db.maybeOne(sql.type(bindingRow)`SELECT ${BINDING_COLS} FROM inbound_bindings WHERE id = ${id} AND organization_id = ${orgId}`);
}

export function bindingView(config: Config, row: BindingRow) {
  const adapter = carrierFor(row.provider);
  const opened = row.credentials ? readCredentials(config, row.credentials) : null;
  const credentials = opened && adapter ? maskedCredentials(adapter, opened) : null;
  const state: CredentialsState = !row.credentials ? 'none' : opened ? 'ok' : 'credentials_unreadable';
  return {
    id: row.id,
    provider: row.provider,
    phone_number: row.address,
    address_normalized: row.address_normalized,
    agent_id: row.agent_uuid,
    agent_name: row.agent_name,
    agentSnapshot: row.agent_snapshot,
    contextVariables: row.context_variables,
    telephony_configuration_id: row.telephony_config_id,
    credentials,
    credentials_state: state,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

// ── the carrier side of a call ─────────────────────────────────────────────────────────────────────────────────
const callCarrierRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  telephony_provider: z.string().nullable(),
  carrier_call_id: z.string().nullable(),
  telephony_config_id: z.number().nullable(),
  carrier_credentials: z.instanceof(Buffer).nullable(),
  config_credentials: z.instanceof(Buffer).nullable(),
  platform_number: z.string().nullable(),
  customer_number: z.string().nullable(),
  status: z.string(),
  transport: z.string(),
});

export interface CallCarrier {
  callId: string;
  orgId: string;
  adapter: CarrierAdapter;
  creds: Credentials;
  carrierCallId: string | null;
  telephonyConfigId: number | null;
  platformNumber: string | null;
  customerNumber: string | null;
  status: string;
  transport: string;
}

/**
 * The adapter and decrypted credentials of a phone call (inline credentials first, else its configuration's). Throws
 * SecretUnreadable when the current key cannot open them.
 */
export async function callCarrier(db: Q, config: Config, callId: string): Promise<CallCarrier | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(callId)) return null;
  const row = await db.maybeOne(sql.type(callCarrierRow)`
    SELECT c.id::text, c.organization_id::text, c.telephony_provider, c.carrier_call_id, c.telephony_config_id,
           c.carrier_credentials, t.credentials AS config_credentials, c.platform_number, c.customer_number, c.status, c.transport
    FROM calls c LEFT JOIN telephony_configs t ON t.id = c.telephony_config_id
    WHERE c.id = ${callId}`);
  if (!row || !row.telephony_provider) return null;
  const adapter = carrierFor(row.telephony_provider);
  const blob = row.carrier_credentials ?? row.config_credentials;
  if (!adapter || !blob) return null;
  return {
    callId: row.id,
    orgId: row.organization_id,
    adapter,
    creds: openCredentials(config, blob, row.carrier_credentials ? `call ${row.id}` : `the telephony configuration of call ${row.id} (id ${row.telephony_config_id})`),
    carrierCallId: row.carrier_call_id,
    telephonyConfigId: row.telephony_config_id,
    platformNumber: row.platform_number,
    customerNumber: row.customer_number,
    status: row.status,
    transport: row.transport,
  };
}
