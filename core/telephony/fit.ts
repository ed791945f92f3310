// Can an agent run on a carrier? What a carrier cannot do for an agent is refused wherever the two meet (POST /call
// outbound and inbound, a number's inbound agent, an inbound binding's agent, a campaign's create and start, a PATCH
// of an agent attached to a number or binding or used by an unfinished campaign, a PUT of a saved transfer tool such
// an agent references), each with a 400 naming the carrier and what it cannot do:
//  - a transfer the carrier cannot make (`CarrierAdapter.transferSupport`: Exotel none, Smartflo no SIP URI, the
//    dial-out carriers no host-less extension);
//  - `recordInProviderConsole` where the carrier cannot record the call of that direction (Smartflo, Exotel inbound).
// `recordTransfer` is not refused: it defaults to true, so a refusal would break every transfer tool on Smartflo;
// where the carrier cannot record the transferred leg the call's logs say so (media/transports/carriers/phone-call.ts).
// An agent saved alone meets no carrier: it may name any destination the schema accepts (the spec's `PJSIP/123`).
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';
import { carrierFor } from './registry.ts';
import type { CarrierAdapter } from './types.ts';

type Q = Pick<Db, 'any'>;
export type Direction = 'outbound' | 'inbound';
export interface FitProblem {
  /** Where in the agent config (tools.N.config.destination, recordInProviderConsole). */
  path: (string | number)[];
  msg: string;
  input: unknown;
}

export interface TransferUse {
  path: (string | number)[];
  destination: string;
}

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The transfer destinations of an agent config: its inline transferCall tools and the saved ones it references. */
export async function transferUses(db: Q, orgId: string, config: unknown): Promise<TransferUse[]> {
  const tools = Array.isArray(rec(config).tools) ? (rec(config).tools as unknown[]) : [];
  const out: TransferUse[] = [];
  const saved = new Map<string, number[]>();
  tools.forEach((t, i) => {
    if (typeof t === 'string') saved.set(t.toLowerCase(), [...(saved.get(t.toLowerCase()) ?? []), i]);
    else if (rec(t).type === 'transferCall') {
      const d = rec(rec(t).config).destination;
      if (typeof d === 'string' && d.trim()) out.push({ path: ['tools', i, 'config', 'destination'], destination: d });
    }
  });
  const ids = [...saved.keys()].filter((u) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(u));
  if (ids.length) {
    const rows = await db.any(sql.type(z.object({ uuid: z.string(), destination: z.string().nullable() }))`
      SELECT uuid::text, definition->'config'->>'destination' AS destination FROM tools
      WHERE organization_id = ${orgId} AND category = 'transferCall' AND uuid = ANY(${sql.array(ids, 'uuid')})`);
    for (const r of rows) {
      if (!r.destination?.trim()) continue;
      for (const i of saved.get(r.uuid) ?? []) out.push({ path: ['tools', i], destination: r.destination });
    }
  }
  return out.sort((a, b) => Number(a.path[1]) - Number(b.path[1]));
}

/** What `adapter` cannot do for an agent config on calls of `direction` (empty: it can run there). */
export function carrierProblems(adapter: CarrierAdapter, direction: Direction, config: unknown, transfers: TransferUse[]): FitProblem[] {
  const out: FitProblem[] = [];
  for (const t of transfers) {
    const why = adapter.transferSupport(t.destination);
    if (why) out.push({ path: t.path, msg: why, input: t.destination });
  }
  if (rec(config).recordInProviderConsole === true) {
    const why = adapter.recordingSupport(direction === 'outbound' ? 'outbound_call' : 'inbound_call');
    if (why) out.push({ path: ['recordInProviderConsole'], msg: `recordInProviderConsole cannot be honoured on ${direction} calls: ${why}`, input: true });
  }
  return out;
}

/** carrierProblems with the agent's saved transfer tools looked up. */
export async function agentCarrierProblems(db: Q, orgId: string, adapter: CarrierAdapter, direction: Direction, config: unknown): Promise<FitProblem[]> {
  return carrierProblems(adapter, direction, config, await transferUses(db, orgId, config));
}

/** One line of a 400 string detail: every problem with its place in the config. */
export const problemsText = (problems: FitProblem[]) => problems.map((p) => `${p.path.join('.')}: ${p.msg}`).join('; ');

/** Where a saved agent meets a carrier: numbers and bindings answering with it, campaigns not finished dialling with it. */
export interface CarrierUse {
  adapter: CarrierAdapter;
  direction: Direction;
  /** e.g. "answers +14155550100 (telephony configuration 'Main')" */
  where: string;
}

export async function agentCarrierUses(db: Q, orgId: string, agent: { id: number; uuid: string }): Promise<CarrierUse[]> {
  const numbers = await db.any(sql.type(z.object({ address: z.string(), provider: z.string(), config: z.string() }))`
    SELECT n.address_normalized AS address, c.provider, c.name AS config FROM phone_numbers n JOIN telephony_configs c ON c.id = n.telephony_config_id
    WHERE n.organization_id = ${orgId} AND n.inbound_agent_id = ${agent.id} AND n.is_active ORDER BY n.id`);
  const bindings = await db.any(sql.type(z.object({ id: z.number(), address: z.string(), provider: z.string() }))`
    SELECT id, address_normalized AS address, provider FROM inbound_bindings WHERE organization_id = ${orgId} AND agent_uuid = ${agent.uuid} ORDER BY id`);
  const campaigns = await db.any(sql.type(z.object({ id: z.number(), name: z.string(), state: z.string(), provider: z.string() }))`
    SELECT k.id, k.name, k.state, c.provider FROM campaigns k JOIN telephony_configs c ON c.id = k.telephony_configuration_id
    WHERE k.organization_id = ${orgId} AND k.agent_id = ${agent.id} AND k.state NOT IN ('completed', 'failed') ORDER BY k.id`);
  const out: CarrierUse[] = [];
  const push = (provider: string, direction: Direction, where: string) => {
    const adapter = carrierFor(provider);
    if (adapter) out.push({ adapter, direction, where });
  };
  for (const n of numbers) push(n.provider, 'inbound', `answers ${n.address} (telephony configuration '${n.config}')`);
  for (const b of bindings) push(b.provider, 'inbound', `answers ${b.address} (inbound binding ${b.id})`);
  for (const c of campaigns) push(c.provider, 'outbound', `dials for campaign ${c.id} '${c.name}' (${c.state})`);
  return out;
}

/** Every problem of a saved agent's (new) config with every carrier it meets, each saying where it meets it. */
export async function agentUseProblems(db: Q, orgId: string, agent: { id: number; uuid: string }, config: unknown): Promise<FitProblem[]> {
  const uses = await agentCarrierUses(db, orgId, agent);
  if (!uses.length) return [];
  const transfers = await transferUses(db, orgId, config);
  const out: FitProblem[] = [];
  for (const u of uses) for (const p of carrierProblems(u.adapter, u.direction, config, transfers)) out.push({ ...p, msg: `${p.msg} (the agent ${u.where})` });
  return out;
}
