// Saved tools (spec "Saved tool"): the definition schemas, the function-name rule, and the loader the call
// pipeline uses to fetch definitions referenced by UUID from an agent config.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../db/pool.ts';
import { headersSchema, messagesOrder, sanitizeFunctionName, TRANSFER_DESTINATION } from './schema.ts';

export const TOOL_CATEGORIES = ['function', 'endCall', 'transferCall', 'calculator', 'query', 'native', 'integration'] as const;
export const RESERVED_CATEGORIES = ['native', 'integration'] as const;
export const DEFINITION_TYPES = ['function', 'endCall', 'transferCall', 'calculator', 'query'] as const;
export type DefinitionType = (typeof DEFINITION_TYPES)[number];

const messageType = z.enum(['none', 'custom', 'audio']).default('none');
const recordingId = z.string().min(1).max(200);

/** `function` config. `url` may be '' at create time (placeholder tool); non-empty must be http(s)://. */
export const functionConfig = z
  .object({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    url: z.string().max(2048).regex(/^$|^https?:\/\//i, 'url must be empty or start with http:// or https://'),
    headers: headersSchema.default(() => ({})),
    credential_uuid: z.string().min(1).max(200).optional(),
    parameters: z
      .array(
        z.object({
          name: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'Parameter names may contain only letters, digits, _ and -'),
          type: z.enum(['string', 'number', 'boolean']),
          description: z.string().max(2000).default(''),
          required: z.boolean().default(false),
        }),
      )
      .max(100)
      .default(() => []),
    timeout_ms: z.number().int().min(1000).max(30000).default(5000),
    customMessages: z.array(z.string().max(1000)).max(5).default(() => []),
    customMessagesOrder: messagesOrder.default('random'),
    customMessageType: z.enum(['none', 'text', 'audio']).default('none'),
    customMessageRecordingId: recordingId.optional(),
  })
  .superRefine((c, ctx) => {
    const names = new Set<string>();
    c.parameters.forEach((p, i) => {
      if (names.has(p.name)) ctx.addIssue({ code: 'custom', path: ['parameters', i, 'name'], message: `Duplicate parameter name '${p.name}'` });
      names.add(p.name);
    });
    if (c.customMessageType === 'text' && c.customMessages.filter((m) => m.trim()).length === 0)
      ctx.addIssue({ code: 'custom', path: ['customMessages'], message: "customMessageType 'text' needs at least one non-blank customMessages entry" });
    if (c.customMessageType === 'audio' && !c.customMessageRecordingId)
      ctx.addIssue({ code: 'custom', path: ['customMessageRecordingId'], message: "customMessageType 'audio' needs customMessageRecordingId", params: { type: 'missing' } });
  })
  .transform((c) => {
    // Only the selected mode's payload is stored.
    const { customMessageRecordingId, customMessages, ...rest } = c;
    if (c.customMessageType === 'text') return { ...rest, customMessages: customMessages.filter((m) => m.trim()) };
    if (c.customMessageType === 'audio') return { ...rest, customMessages: [] as string[], customMessageRecordingId };
    return { ...rest, customMessages: [] as string[] };
  });

export const endCallConfig = z
  .object({ messageType, customMessage: z.string().max(1000).optional(), audioRecordingId: recordingId.optional() })
  .superRefine((c, ctx) => {
    if (c.messageType === 'custom' && !c.customMessage?.trim())
      ctx.addIssue({ code: 'custom', path: ['customMessage'], message: "messageType 'custom' needs a non-blank customMessage", params: { type: 'missing' } });
    if (c.messageType === 'audio' && !c.audioRecordingId)
      ctx.addIssue({ code: 'custom', path: ['audioRecordingId'], message: "messageType 'audio' needs audioRecordingId", params: { type: 'missing' } });
  })
  .transform((c) => (c.messageType === 'custom' ? { messageType: c.messageType, customMessage: c.customMessage } : c.messageType === 'audio' ? { messageType: c.messageType, audioRecordingId: c.audioRecordingId } : { messageType: c.messageType }));

/** `destination` may be '' at create time only. */
export const transferCallConfig = z
  .object({
    destination: z.string().regex(new RegExp(`^$|${TRANSFER_DESTINATION.source}`), 'destination must be an E.164 number (+14155550100) or a SIP endpoint (PJSIP/123, SIP/123, sip:user@host)'),
    messageType,
    customMessage: z.string().max(1000).optional(),
    audioRecordingId: recordingId.optional(),
    timeout: z.number().int().min(5).max(120).default(30),
    recordTransfer: z.boolean().default(true),
  })
  .superRefine((c, ctx) => {
    if (c.messageType === 'custom' && !c.customMessage?.trim())
      ctx.addIssue({ code: 'custom', path: ['customMessage'], message: "messageType 'custom' needs a non-blank customMessage", params: { type: 'missing' } });
    if (c.messageType === 'audio' && !c.audioRecordingId)
      ctx.addIssue({ code: 'custom', path: ['audioRecordingId'], message: "messageType 'audio' needs audioRecordingId", params: { type: 'missing' } });
  });

export const queryConfig = z.object({
  groups: z
    .array(z.object({ name: z.string().min(1).max(200), description: z.string().min(1).max(2000), documentIds: z.array(z.guid('documentIds entries must be document UUIDs')).min(1).max(100) }))
    .max(20),
  messages: z.array(z.string().max(1000)).max(5).transform((l) => l.filter((m) => m.trim())).default(() => []),
  messagesOrder: messagesOrder.default('random'),
  timeout: z.number().int().min(1).max(30).default(5),
});

const def = <T extends string, C extends z.ZodType>(type: T, config: C) =>
  z.object({ schema_version: z.literal(1).default(1), type: z.literal(type), config });

export const toolDefinitionSchema = z.discriminatedUnion('type', [
  def('function', functionConfig),
  def('endCall', endCallConfig.prefault({})),
  def('transferCall', transferCallConfig),
  def('calculator', z.object({}).strip().default(() => ({}))),
  def('query', queryConfig),
]);
export type ToolDefinition = z.output<typeof toolDefinitionSchema>;

export const toolCreateSchema = z.object({
  name: z.string().min(1).max(255).refine((s) => s.trim().length > 0, { message: 'name must not be blank' }),
  description: z.string().max(5000).default(''),
  category: z.string().optional(),
  icon: z.string().min(1).max(50).default('globe'),
  icon_color: z.string().max(7).regex(/^#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$/, 'icon_color must be a hex colour like #3B82F6').default('#3B82F6'),
  definition: toolDefinitionSchema,
});

/** PUT body: any subset; category may be sent but must equal the stored one. */
export const toolUpdateSchema = z.object({
  name: toolCreateSchema.shape.name.optional(),
  description: z.string().max(5000).optional(),
  category: z.string().optional(),
  icon: z.string().min(1).max(50).optional(),
  icon_color: z.string().max(7).regex(/^#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$/, 'icon_color must be a hex colour like #3B82F6').optional(),
  definition: toolDefinitionSchema.optional(),
});

/** Definitions a PUT must not leave incomplete; null when complete, else the 400 detail. */
export function incompleteDefinition(d: ToolDefinition): string | null {
  if (d.type === 'function' && d.config.url === '') return 'Incomplete tool definition: a function tool needs a url';
  if (d.type === 'transferCall' && d.config.destination === '') return 'Incomplete tool definition: a transferCall tool needs a destination';
  if (d.type === 'query' && d.config.groups.length === 0) return 'Incomplete tool definition: a query tool needs at least one group';
  return null;
}

/**
 * The name the LLM sees: lowercased, every run of other characters turned into '_'. A name without English
 * letters/digits, or longer than 64 characters, gets a short unique suffix (`_` + 6 hex), keeping it ≤ 64.
 */
export function functionNameFor(name: string, suffix: () => string = () => randomBytes(3).toString('hex')): string {
  const base = sanitizeFunctionName(name);
  if (!/[a-z0-9]/.test(base)) return `tool_${suffix()}`;
  if (base.length > 64) return `${base.slice(0, 57)}_${suffix()}`;
  return base;
}

export const savedToolRow = z.object({
  uuid: z.string(),
  organization_id: z.string(),
  name: z.string(),
  function_name: z.string(),
  description: z.string(),
  category: z.string(),
  icon: z.string(),
  icon_color: z.string(),
  definition: z.record(z.string(), z.unknown()),
  status: z.enum(['active', 'archived']),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SavedToolRow = z.infer<typeof savedToolRow>;

export interface SavedTool {
  uuid: string;
  name: string;
  /** The function name the LLM sees. */
  functionName: string;
  description: string;
  category: DefinitionType;
  status: 'active' | 'archived';
  definition: ToolDefinition;
}

/**
 * Saved tool definitions by UUID, in the order asked, for one organization (missing ones are simply absent;
 * archived ones are returned with their status so a running call can decide).
 */
export async function loadSavedTools(db: CommonQueryMethods, orgId: string, uuids: readonly string[]): Promise<SavedTool[]> {
  const ids = [...new Set(uuids.map((u) => u.toLowerCase()).filter((u) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(u)))];
  if (ids.length === 0) return [];
  const rows = await db.any(sql.type(savedToolRow)`
    SELECT uuid::text AS uuid, organization_id::text AS organization_id, name, function_name, description, category, icon, icon_color,
           definition, status, created_at, updated_at
    FROM tools WHERE organization_id = ${orgId} AND uuid = ANY(${sql.array(ids, 'uuid')})`);
  const byId = new Map(rows.map((r) => [r.uuid, r]));
  const out: SavedTool[] = [];
  for (const id of ids) {
    const r = byId.get(id);
    if (!r) continue;
    out.push({
      uuid: r.uuid,
      name: r.name,
      functionName: r.function_name,
      description: r.description,
      category: r.category as DefinitionType,
      status: r.status,
      definition: r.definition as unknown as ToolDefinition,
    });
  }
  return out;
}

/** API shape of a saved tool (create/list/get). */
export function toolView(r: SavedToolRow) {
  return {
    tool_uuid: r.uuid,
    name: r.name,
    function_name: r.function_name,
    description: r.description,
    category: r.category,
    icon: r.icon,
    icon_color: r.icon_color,
    definition: r.definition,
    status: r.status,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
