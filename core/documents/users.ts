// Who uses a document: active agents whose inline query tools list it (`tools[].config.knowledgeBases[].documentIds`),
// saved query tools (`definition.config.groups[].documentIds`, archived ones too: agents referencing them keep
// running them) and inbound bindings of inline agents (their snapshot is the agent). A document any of them names
// cannot be deleted (DELETE /files answers 409 naming them): an agent whose query tool lists a missing document no
// longer validates, so its calls would be refused.
import { z } from 'zod';
import { sql, type Db } from '../db/pool.ts';

type Q = Pick<Db, 'any'>;

export interface DocumentUsers {
  agents: Array<{ uuid: string; name: string }>;
  tools: Array<{ uuid: string; name: string; status: string }>;
  bindings: Array<{ id: number; address: string }>;
}

/** The document ids a JSON array of knowledge-base groups lists (`[{documentIds: [...]}, ...]`), lowercased. */
const idsOfGroups = (groups: ReturnType<typeof sql.fragment>) => sql.fragment`
  SELECT lower(d) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${groups}) = 'array' THEN ${groups} ELSE '[]'::jsonb END) g
  CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(g->'documentIds') = 'array' THEN g->'documentIds' ELSE '[]'::jsonb END) d`;

/** An agent config (jsonb expression) whose inline query tools list `id`. */
const configUses = (config: ReturnType<typeof sql.fragment>, id: string) => sql.fragment`EXISTS (
  SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${config}->'tools') = 'array' THEN ${config}->'tools' ELSE '[]'::jsonb END) t
  WHERE jsonb_typeof(t) = 'object' AND t->>'type' = 'query' AND ${id} IN (${idsOfGroups(sql.fragment`t->'config'->'knowledgeBases'`)}))`;

export async function documentUsers(db: Q, orgId: string, documentId: string): Promise<DocumentUsers> {
  const id = documentId.toLowerCase();
  const [agents, tools, bindings] = await Promise.all([
    db.any(sql.type(z.object({ uuid: z.string(), name: z.string() }))`
      SELECT uuid::text, name FROM agents
      WHERE organization_id = ${orgId} AND status = 'active' AND ${configUses(sql.fragment`config`, id)}
      ORDER BY created_at, id`),
    db.any(sql.type(z.object({ uuid: z.string(), name: z.string(), status: z.string() }))`
      SELECT uuid::text, name, status FROM tools
      WHERE organization_id = ${orgId} AND definition->>'type' = 'query'
        AND ${id} IN (${idsOfGroups(sql.fragment`definition->'config'->'groups'`)})
      ORDER BY created_at, id`),
    db.any(sql.type(z.object({ id: z.number(), address: z.string() }))`
      SELECT id, address FROM inbound_bindings
      WHERE organization_id = ${orgId} AND agent_uuid IS NULL AND ${configUses(sql.fragment`agent_snapshot`, id)}
      ORDER BY id`),
  ]);
  return { agents: [...agents], tools: [...tools], bindings: [...bindings] };
}

export const documentInUse = (u: DocumentUsers) => u.agents.length + u.tools.length + u.bindings.length > 0;

/** The 409 detail: every user by name and id, and what to do. */
export function documentInUseMessage(name: string, u: DocumentUsers): string {
  const parts: string[] = [];
  if (u.agents.length) parts.push(`agent${u.agents.length > 1 ? 's' : ''} ${u.agents.map((a) => `'${a.name}' (${a.uuid})`).join(', ')}`);
  if (u.tools.length) parts.push(`saved tool${u.tools.length > 1 ? 's' : ''} ${u.tools.map((t) => `'${t.name}' (${t.uuid}${t.status === 'archived' ? ', archived' : ''})`).join(', ')}`);
  if (u.bindings.length) parts.push(`inbound binding${u.bindings.length > 1 ? 's' : ''} ${u.bindings.map((b) => `${b.id} (${b.address})`).join(', ')}`);
  return `Document '${name}' is used by the query tools of ${parts.join(' and ')}; remove it from their knowledge bases first.`;
}
