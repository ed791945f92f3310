// validateAgentConfig: schema → model catalog → cross-field rules needing the catalog → checks needing the
// database and the network (saved tools, knowledge-base documents, inline function URLs) → end_call seeding.
import { z } from 'zod';
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../db/pool.ts';
import type { ValidationItem } from '../validation.ts';
import { checkUrlResolved, explainRefusal, type OutboundPolicy } from '../net/ssrf.ts';
import { catalog, effectiveModel, findModel, speechLanguages } from '../catalog.ts';
import { agentConfigSchema, END_CALL_DESCRIPTION, sanitizeFunctionName, type AgentConfig, type InlineTool } from './schema.ts';

export { END_CALL_DESCRIPTION };
import { issuesToItems, preCheck } from './issues.ts';
import { incompleteDefinition, type ToolDefinition } from './saved-tools.ts';
import { agentRecordingRefs, referenceProblems } from '../recordings/store.ts';

export type ValidateResult =
  | { ok: true; config: AgentConfig }
  | { ok: false; kind: 'schema'; items: ValidationItem[] }
  | { ok: false; kind: 'model'; message: string; path: (string | number)[] };

export interface ValidateContext {
  /** A pool or a transaction connection (PATCH validates inside its row-locked transaction). */
  db: CommonQueryMethods;
  orgId: string;
  policy: OutboundPolicy;
  /**
   * true: models are NOT checked against the catalog (a stored config whose model has since left the catalog is
   * still usable; POST /call with agentId). Language support is then checked only for models the catalog knows.
   */
  partialModelCheck?: boolean;
  /**
   * Saved tool UUIDs the agent already references (its stored config). These stay usable after the tool is
   * archived (spec: "agents referencing it keep working"); only newly adding an archived tool is refused.
   */
  referencedTools?: readonly unknown[];
  /**
   * Audio recording ids the stored config already plays (`recordingRefs(stored)`): they stay usable after the
   * recording is archived; only a new reference to an archived recording is refused.
   */
  referencedRecordings?: readonly string[];
  /**
   * The webhook URL the stored config already has (`webhookRef(stored)`): accepted when it was saved, it is not
   * judged again (the send-time guard still is); a new or changed URL is.
   */
  referencedWebhook?: string | null;
}

/** The audio recordings a stored config's inline tools play, for `ValidateContext.referencedRecordings`. */
export function recordingRefs(config: unknown): string[] {
  return agentRecordingRefs(config).map((r) => r.id);
}

/** The saved-tool references (UUID strings) of a stored config's `tools`, for `ValidateContext.referencedTools`. */
export function savedToolRefs(config: unknown): string[] {
  const tools = config && typeof config === 'object' ? (config as { tools?: unknown }).tools : undefined;
  return Array.isArray(tools) ? tools.filter((t): t is string => typeof t === 'string') : [];
}

/** The webhook URL of a stored config, for `ValidateContext.referencedWebhook`. */
export function webhookRef(config: unknown): string | null {
  const w = config && typeof config === 'object' ? (config as { webhook?: unknown }).webhook : undefined;
  if (typeof w === 'string') return w;
  const url = w && typeof w === 'object' ? (w as { url?: unknown }).url : undefined;
  return typeof url === 'string' ? url : null;
}

export function seededEndCall(): InlineTool {
  return {
    type: 'endCall',
    name: 'end_call',
    description: END_CALL_DESCRIPTION,
    config: { messageType: 'custom', customMessages: ['Goodbye!'], audioRecordingId: null },
  };
}

const savedToolRow = z.object({
  uuid: z.string(),
  function_name: z.string(),
  category: z.string(),
  status: z.string(),
  definition: z.record(z.string(), z.unknown()),
});

/** Replace `{{var}}` and `{param}` placeholders with a neutral token so the rest of the URL can be checked. */
function neutralise(url: string): string {
  return url.replace(/\{\{\s*[^{}]*?\s*\}\}/g, 'x').replace(/\{[^{}]*\}/g, 'x');
}

/** The host part of an http(s) URL contains a placeholder: the target is only known at call time. */
export function hostHasPlaceholder(url: string): boolean {
  const m = /^https?:\/\/([^/?#]*)/i.exec(url);
  return !!m && /[{}]/.test(m[1] ?? '');
}

/** SSRF check of a user-supplied URL with placeholders; null = OK. */
export async function checkTemplatedUrl(url: string, policy: OutboundPolicy): Promise<string | null> {
  const concrete = neutralise(url);
  try {
    new URL(concrete);
  } catch {
    return 'URL is not valid';
  }
  if (hostHasPlaceholder(url)) return null; // re-checked at connect time once the variables are known
  return checkUrlResolved(concrete, policy);
}

export async function validateAgentConfig(input: unknown, ctx: ValidateContext): Promise<ValidateResult> {
  const pre = preCheck(input);
  if (pre.length > 0) return { ok: false, kind: 'schema', items: pre };
  const parsed = agentConfigSchema.safeParse(input);
  if (!parsed.success) return { ok: false, kind: 'schema', items: issuesToItems(parsed.error, input) };
  const c = parsed.data;

  // ---- models against the catalog
  const llmModel = c.llm.model ?? catalog.llm[c.llm.provider].defaultModel;
  if (!ctx.partialModelCheck) {
    if (!findModel('llm', c.llm.provider, llmModel))
      return { ok: false, kind: 'model', path: ['llm', 'model'], message: `Model '${llmModel}' is not available for llm provider '${c.llm.provider}'. See GET /agents/models/available.` };
    for (const family of ['stt', 'tts'] as const) {
      const block = c[family];
      if (block.model !== null && !findModel(family, block.provider, block.model))
        return { ok: false, kind: 'model', path: [family, 'model'], message: `Model '${block.model}' is not available for ${family} provider '${block.provider}'. See GET /agents/models/available.` };
    }
  }

  // ---- the analysis model (null: the agent's own); a null model is the provider's default, materialised
  let analysis = c.analysis;
  if (analysis?.llm) {
    const { provider } = analysis.llm;
    const model = analysis.llm.model ?? catalog.llm[provider].defaultModel;
    if (!ctx.partialModelCheck && !findModel('llm', provider, model))
      return { ok: false, kind: 'model', path: ['analysis', 'llm', 'model'], message: `Model '${model}' is not available for llm provider '${provider}'. See GET /agents/models/available.` };
    analysis = { ...analysis, llm: { provider, model } };
  }

  const items: ValidationItem[] = [];

  // ---- languages supported by both speech models
  for (const family of ['stt', 'tts'] as const) {
    const block = c[family];
    const supported = speechLanguages(family, block.provider, block.model);
    if (!supported) continue; // unknown model under partialModelCheck
    const missing = c.languages.filter((l) => !(supported as string[]).includes(l));
    if (missing.length > 0) {
      const model = effectiveModel(family, block.provider, block.model);
      items.push({
        type: 'value_error',
        path: ['languages'],
        msg: `Language${missing.length > 1 ? 's' : ''} ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not supported by ${family} model '${model}' (${block.provider}); supported: ${supported.join(', ')}`,
        input: c.languages,
      });
    }
  }

  // ---- anthropic temperature is clamped to its 0..1 range on save
  const temperatureMax = catalog.llm[c.llm.provider].temperatureMax;
  const llm = { ...c.llm, model: llmModel, temperature: Math.min(c.llm.temperature, temperatureMax) };

  // ---- tools: saved references, documents, URLs
  const savedIds = c.tools.filter((t): t is string => typeof t === 'string');
  const savedById = new Map<string, z.infer<typeof savedToolRow>>();
  if (savedIds.length > 0) {
    const ids = [...new Set(savedIds)];
    const rows = await ctx.db.any(sql.type(savedToolRow)`
      SELECT uuid::text AS uuid, function_name, category, status, definition FROM tools
      WHERE organization_id = ${ctx.orgId} AND uuid = ANY(${sql.array(ids, 'uuid')})`);
    for (const r of rows) savedById.set(r.uuid, r);
  }
  // Function names the LLM sees must be unique across inline tools and saved references (inline-only duplicates
  // were already reported by the schema); the later entry is reported.
  const names = new Map<string, number>();
  const alreadyReferenced = new Set((ctx.referencedTools ?? []).filter((t): t is string => typeof t === 'string').map((t) => t.toLowerCase()));
  c.tools.forEach((t, i) => {
    let fn: string;
    if (typeof t === 'string') {
      const row = savedById.get(t);
      if (!row) {
        items.push({ type: 'value_error', path: ['tools', i], msg: `Saved tool '${t}' not found`, input: t });
        return;
      }
      if (row.status !== 'active' && !alreadyReferenced.has(t.toLowerCase())) {
        items.push({ type: 'value_error', path: ['tools', i], msg: `Saved tool '${t}' is archived`, input: t });
        return;
      }
      const incomplete = incompleteDefinition(row.definition as unknown as ToolDefinition);
      if (incomplete) {
        items.push({ type: 'value_error', path: ['tools', i], msg: `Saved tool '${t}' cannot be used yet. ${incomplete}`, input: t });
        return;
      }
      fn = row.function_name;
    } else {
      fn = sanitizeFunctionName(t.name);
    }
    const prev = names.get(fn);
    if (prev !== undefined) {
      items.push({
        type: 'value_error',
        path: typeof t === 'string' ? ['tools', i] : ['tools', i, 'name'],
        msg: `Duplicate tool name '${fn}': tools.${prev} has the same name after sanitization`,
        input: typeof t === 'string' ? t : t.name,
      });
    } else names.set(fn, i);
  });

  // Documents of inline query tools: held FOR KEY SHARE until the caller's transaction ends (agent create/PATCH), so
  // a concurrent DELETE /files waits and then sees the agent using them (409).
  const docRefs: Array<{ id: string; path: (string | number)[] }> = [];
  const urlChecks: Array<Promise<ValidationItem | null>> = [];
  c.tools.forEach((t, i) => {
    if (typeof t === 'string') return;
    if (t.type === 'query') {
      t.config.knowledgeBases.forEach((kb, k) => kb.documentIds.forEach((d, j) => docRefs.push({ id: d.toLowerCase(), path: ['tools', i, 'config', 'knowledgeBases', k, 'documentIds', j] })));
    }
    if (t.type === 'function') {
      const url = t.config.server.url;
      urlChecks.push(
        checkTemplatedUrl(url, ctx.policy).then((reason) =>
          reason ? { type: 'value_error', path: ['tools', i, 'config', 'server', 'url'], msg: `server.url is not allowed: ${explainRefusal(reason)}`, input: url } : null,
        ),
      );
    }
  });
  // Lifecycle webhooks go through the same guard when they are sent (core/webhook.ts): a URL it would refuse is
  // refused now, with why, instead of being saved and never delivered. Host names are resolved (checkUrlResolved):
  // one resolving to a private address is refused too; one that does not resolve yet is accepted and judged again
  // when the event is sent.
  if (c.webhook && c.webhook.url !== ctx.referencedWebhook) {
    const url = c.webhook.url;
    urlChecks.push(
      checkUrlResolved(url, ctx.policy).then((reason) =>
        reason ? { type: 'value_error', path: ['webhook', 'url'], msg: `webhook.url is not allowed: ${explainRefusal(reason)}`, input: url } : null,
      ),
    );
  }
  if (docRefs.length > 0) {
    const ids = [...new Set(docRefs.map((d) => d.id))];
    const found = new Set(
      await ctx.db.anyFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id::text AS id FROM documents WHERE organization_id = ${ctx.orgId} AND deleted_at IS NULL AND id = ANY(${sql.array(ids, 'uuid')})
        FOR KEY SHARE`),
    );
    for (const d of docRefs) if (!found.has(d.id)) items.push({ type: 'value_error', path: d.path, msg: `Document '${d.id}' not found`, input: d.id });
  }
  for (const r of await Promise.all(urlChecks)) if (r) items.push(r);
  for (const p of await referenceProblems(ctx.db, ctx.orgId, agentRecordingRefs(c), ctx.referencedRecordings))
    items.push({ type: 'value_error', path: p.path, msg: p.msg, input: p.id });

  if (items.length > 0) return { ok: false, kind: 'schema', items };

  // ---- an end_call tool is always present
  const hasEndCall = c.tools.some((t) => (typeof t === 'string' ? savedById.get(t)?.category === 'endCall' : t.type === 'endCall'));
  const tools = hasEndCall ? c.tools : [...c.tools, seededEndCall()];

  return { ok: true, config: { ...c, llm, tools, analysis } };
}
