// Public contract of the agent configuration module.
//
//   agentConfigSchema        zod, strict everywhere: the INPUT shape of an AgentConfig (used for OpenAPI too)
//   AgentConfig              the fully resolved config (defaults materialised, llm.model resolved, end_call present)
//   validateAgentConfig      schema + cross-field rules + catalog + saved tools + documents + inline URL SSRF
//   resolveSnapshot          call-time context variables and placeholder substitution
//   scrubCredentials         body copy without inline credentials, for stored rejected snapshots
//   loadAgent                an active saved agent of an organization
//   loadSavedTools           saved tool definitions by UUID (call-time)
//   mergePatch               PATCH deep-merge (rules 1-3 of the spec)
import { z } from 'zod';
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../db/pool.ts';
import type { AgentConfig } from './schema.ts';

export { agentConfigSchema, sanitizeFunctionName, BUILTIN_VARIABLES, RESERVED_TOOL_NAMES, INLINE_TOOL_TYPES } from './schema.ts';
export type { AgentConfig, AgentConfigInput, InlineTool, ToolEntry } from './schema.ts';
export { validateAgentConfig, savedToolRefs, recordingRefs, webhookRef, checkTemplatedUrl, seededEndCall, END_CALL_DESCRIPTION } from './validate.ts';
export type { ValidateResult, ValidateContext } from './validate.ts';
export { resolveSnapshot, scrubCredentials, substitute, contextValues, liveCallBuiltins, REDACTED } from './snapshot.ts';
export type { SnapshotOptions } from './snapshot.ts';
export { loadSavedTools, functionNameFor, toolView } from './saved-tools.ts';
export type { SavedTool, ToolDefinition } from './saved-tools.ts';
export type { ValidationItem } from '../validation.ts';
export { mergePatch } from './merge.ts';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID.test(s);

export const agentRow = z.object({
  id: z.number(),
  uuid: z.string(),
  name: z.string(),
  config: z.record(z.string(), z.unknown()),
  webhook_secret: z.string().nullable(),
  status: z.enum(['active', 'archived']),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AgentRow = z.infer<typeof agentRow>;

export interface LoadedAgent {
  id: number;
  uuid: string;
  name: string;
  config: AgentConfig;
  webhookSecret: string | null;
}

/** An active agent of the organization (null when missing, archived, another organization's, or not a UUID). */
export async function loadAgent(db: CommonQueryMethods, orgId: string, uuid: string): Promise<LoadedAgent | null> {
  if (!isUuid(uuid)) return null;
  const row = await db.maybeOne(sql.type(agentRow)`
    SELECT id, uuid::text AS uuid, name, config, webhook_secret, status, created_at, updated_at
    FROM agents WHERE uuid = ${uuid} AND organization_id = ${orgId} AND status = 'active'`);
  if (!row) return null;
  return { id: row.id, uuid: row.uuid, name: row.name, config: row.config as unknown as AgentConfig, webhookSecret: row.webhook_secret };
}
