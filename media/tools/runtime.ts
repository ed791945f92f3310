// Runtime tool execution for a live call: builds the LLM-facing tool specs from the config snapshot (inline tool
// objects and saved-tool UUIDs) and runs calls with their timeouts. What a tool says (a text or a stored audio
// recording) comes from its collaborator ToolVoice (spoken.ts); which message is said is picked here (random or
// in order); the session speaks or plays it while the tool runs.
import { z } from 'zod';
import type { Config } from '../../core/config.ts';
import { sql, type Db } from '../../core/db/pool.ts';
import type { Logger } from '../../core/logger.ts';
import { policyFromConfig, safeFetch, OutboundBlockedError, type OutboundPolicy } from '../../core/net/ssrf.ts';
import type { ToolSpec } from '../services/types.ts';
import { calculate } from './calculator.ts';
import { sendDtmfTool, type DtmfSender } from './dtmf.ts';
import { withHeaders, type ToolAuth } from './http-auth.ts';
import type { RecordingSource } from './recordings.ts';
import { BUILTIN_FAREWELL, texts, ToolVoice, type Spoken } from './spoken.ts';

export { BUILTIN_FAREWELL, type Spoken };

export type ToolStatus = 'success' | 'failed' | 'timeout' | 'completed';

export interface ToolOutcome {
  status: ToolStatus;
  /** what the LLM reads back */
  content: string;
  /** endCall: the farewell to say before hanging up; `reason` transferred when a transfer ends the call (no farewell) */
  endCall?: { farewell: Spoken | null; reason?: 'transferred' };
}

export interface ToolRunContext {
  db: Db;
  orgId: string;
  callId: string;
  /** 'websocket' | 'webrtc' | 'web' | 'outbound' | 'inbound' */
  transport: string;
  contextVariables: Record<string, string>;
  policy: OutboundPolicy;
  logger: Logger;
  /** search interface of core/retrieval.ts (absent: the knowledge-base tool answers that search is not available) */
  searchKnowledge?: SearchKnowledge;
  /** Phone calls: move the caller to `destination` through the carrier. Absent on web calls (provider_not_supported). */
  transfer?: CarrierTransfer;
  /**
   * Phone calls: the carrier's static answer whether it can transfer to `destination` (null = it can, else why not;
   * CarrierAdapter.transferSupport). A transfer it cannot make is refused before its transfer message is said.
   */
  transferSupport?: (destination: string) => string | null;
  /** Saved HTTP tools with a `credential_uuid`: the stored credential's headers (media/tools/http-auth.ts). */
  auth?: ToolAuth;
  /** The organization's stored audio recordings (tool messages and farewells of type 'audio'). */
  recordings?: RecordingSource;
  /** The call's keypad (sendDtmf tools): tones in-band, or the carrier's DTMF API (media/tools/dtmf.ts). */
  sendDtmf?: DtmfSender;
}

export type CarrierTransfer = (req: { destination: string; timeoutS: number; recordTransfer: boolean }) => Promise<{ ok: true } | { ok: false; error: string }>;

/** What a running tool may wait on: `spoken` resolves when the message said for this invocation has played. */
export interface ToolLive {
  spoken: Promise<void>;
}

export type SearchKnowledge = (
  db: Db,
  q: { orgId: string; documentIds: string[]; query: string; maxTokens?: number; timeoutMs: number },
) => Promise<
  | { status: 'ok'; passages: Array<{ documentId: string; content: string; score: number }> }
  | { status: 'not_ready'; pending: string[] }
  | { status: 'error'; message: string }
>;

export interface RuntimeTool {
  spec: ToolSpec;
  kind: 'function' | 'endCall' | 'transferCall' | 'query' | 'testTool' | 'calculator' | 'sendDtmf';
  /** messages said while it runs */
  messages: Spoken[];
  messagesOrder: 'random' | 'in-order';
  run(args: Record<string, unknown>, signal: AbortSignal, live?: ToolLive): Promise<ToolOutcome>;
}

const TEST_TOOL_SUCCESS = 'The action completed successfully. Tell the caller it is done and continue the conversation.';
const TEST_TOOL_FAILURE = 'The action failed. Apologize to the caller, say it could not be completed, and offer to help another way.';

export class ToolSet {
  private readonly byName = new Map<string, RuntimeTool>();
  private readonly invocations = new Map<string, number>();
  constructor(tools: RuntimeTool[]) {
    for (const t of tools) this.byName.set(t.spec.name, t);
  }
  get specs(): ToolSpec[] {
    return [...this.byName.values()].map((t) => t.spec);
  }
  get(name: string): RuntimeTool | undefined {
    return this.byName.get(name);
  }
  /** The message to say for this invocation (random, or entry K for invocation K, wrapping), or null. */
  pickMessage(tool: RuntimeTool): Spoken | null {
    const msgs = tool.messages;
    if (!msgs.length) return null;
    const k = this.invocations.get(tool.spec.name) ?? 0;
    this.invocations.set(tool.spec.name, k + 1);
    return tool.messagesOrder === 'in-order' ? msgs[k % msgs.length]! : msgs[Math.floor(Math.random() * msgs.length)]!;
  }
}

const savedToolRow = z.object({
  uuid: z.string(),
  function_name: z.string(),
  description: z.string(),
  category: z.string(),
  definition: z.record(z.string(), z.unknown()),
});

/** Build the call's tools. Saved tools are loaded by UUID in the call's organization (archived ones still work). */
export async function buildToolSet(ctx: ToolRunContext, entries: Array<string | Record<string, unknown>>): Promise<ToolSet> {
  const tools: RuntimeTool[] = [];
  const voice = new ToolVoice(ctx.recordings);
  const uuids = entries.filter((e): e is string => typeof e === 'string');
  const saved = uuids.length
    ? await ctx.db.any(sql.type(savedToolRow)`
        SELECT uuid::text, function_name, description, category, definition FROM tools
        WHERE organization_id = ${ctx.orgId} AND uuid = ANY(${sql.array(uuids, 'uuid')})`)
    : [];
  const savedByUuid = new Map(saved.map((r) => [r.uuid, r]));
  for (const e of entries) {
    if (typeof e === 'string') {
      const row = savedByUuid.get(e);
      if (!row) {
        ctx.logger.warn({ tool: e }, 'saved tool not found for this organization; skipped');
        continue;
      }
      const t = fromSaved(ctx, voice, row);
      if (t) tools.push(t);
    } else {
      const t = fromInline(ctx, voice, e);
      if (t) tools.push(t);
    }
  }
  // one tool per name (first wins); an end_call tool is always present
  const seen = new Set<string>();
  const unique = tools.filter((t) => (seen.has(t.spec.name) ? false : (seen.add(t.spec.name), true)));
  if (!unique.some((t) => t.kind === 'endCall')) unique.push(endCallTool('end_call', '', voice.endCallFarewells({}, false)));
  return new ToolSet(unique);
}

function str(v: unknown, d = ''): string {
  return typeof v === 'string' ? v : d;
}
function strs(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
function order(v: unknown): 'random' | 'in-order' {
  return v === 'in-order' ? 'in-order' : 'random';
}
function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function fromInline(ctx: ToolRunContext, voice: ToolVoice, e: Record<string, unknown>): RuntimeTool | null {
  const type = str(e.type);
  const config = obj(e.config);
  const description = str(e.description);
  switch (type) {
    case 'function': {
      const server = obj(config.server);
      const params = config.parameters && typeof config.parameters === 'object' ? (config.parameters as Record<string, unknown>) : null;
      return functionTool(ctx, {
        name: str(e.name),
        description,
        method: str(server.method, 'POST').toUpperCase(),
        url: str(server.url),
        headers: obj(server.headers) as Record<string, string>,
        timeoutMs: typeof server.timeout_ms === 'number' ? server.timeout_ms : 10_000,
        parameters: params ?? { type: 'object', properties: {} },
        async: config.async === true,
        messages: texts(strs(config.messages)),
        messagesOrder: order(config.messagesOrder),
      });
    }
    case 'endCall':
      return endCallTool(str(e.name) || 'end_call', description, voice.endCallFarewells(config, true));
    case 'transferCall':
      return transferTool(ctx, str(e.name), description, transferSettings(voice, config, true));
    case 'query': {
      const kbs = Array.isArray(config.knowledgeBases) ? config.knowledgeBases.map(obj) : [];
      return queryTool(ctx, str(e.name), description, kbs, texts(strs(config.messages)), order(config.messagesOrder), typeof config.timeout === 'number' ? config.timeout : 5);
    }
    case 'testTool':
      return testTool(str(e.name), description, config);
    case 'sendDtmf':
      return sendDtmfTool(ctx, str(e.name) || 'send_dtmf', description);
    default:
      ctx.logger.warn({ type }, 'unknown inline tool type; skipped');
      return null;
  }
}

function fromSaved(ctx: ToolRunContext, voice: ToolVoice, row: z.infer<typeof savedToolRow>): RuntimeTool | null {
  const def = row.definition;
  const config = obj(def.config);
  const type = str(def.type, row.category);
  switch (type) {
    case 'function': {
      const parameters = Array.isArray(config.parameters) ? config.parameters.map(obj) : [];
      const properties: Record<string, unknown> = {};
      const required: string[] = [];
      for (const p of parameters) {
        const name = str(p.name);
        if (!name) continue;
        properties[name] = { type: ['string', 'number', 'boolean'].includes(str(p.type)) ? str(p.type) : 'string', description: str(p.description) };
        if (p.required === true) required.push(name);
      }
      return functionTool(ctx, {
        name: row.function_name,
        description: row.description,
        method: str(config.method, 'POST').toUpperCase(),
        url: str(config.url),
        headers: obj(config.headers) as Record<string, string>,
        credentialUuid: str(config.credential_uuid) || null,
        timeoutMs: typeof config.timeout_ms === 'number' ? config.timeout_ms : 5000,
        parameters: { type: 'object', properties, required },
        async: false,
        messages: voice.functionMessages(config),
        messagesOrder: order(config.customMessagesOrder),
      });
    }
    case 'endCall':
      return endCallTool(row.function_name, row.description, voice.endCallFarewells(config, false));
    case 'transferCall':
      return transferTool(ctx, row.function_name, row.description, transferSettings(voice, config, false));
    case 'calculator':
      return calculatorTool(row.description);
    case 'query': {
      const groups = Array.isArray(config.groups) ? config.groups.map(obj) : [];
      return queryTool(ctx, row.function_name, row.description, groups, texts(strs(config.messages)), order(config.messagesOrder), typeof config.timeout === 'number' ? config.timeout : 5);
    }
    default:
      ctx.logger.warn({ type, tool: row.uuid }, 'saved tool type not runnable; skipped');
      return null;
  }
}

/** `{param}` → URL-encoded argument (consumed); `{{var}}` → context variable. */
export function substituteUrl(url: string, args: Record<string, unknown>, vars: Record<string, string>): { url: string; used: Set<string> } {
  const used = new Set<string>();
  let out = url.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_m, v: string) => vars[v] ?? '');
  out = out.replace(/\{([A-Za-z0-9_]+)\}/g, (m, p: string) => {
    if (!(p in args)) return m;
    used.add(p);
    return encodeURIComponent(String(args[p]));
  });
  return { url: out, used };
}

export function substituteVars(s: string, vars: Record<string, string>): string {
  return s.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_m, v: string) => vars[v] ?? '');
}

function functionTool(
  ctx: ToolRunContext,
  t: {
    name: string;
    description: string;
    method: string;
    url: string;
    headers: Record<string, string>;
    /** saved tools: the stored credential sent on every request */
    credentialUuid?: string | null;
    timeoutMs: number;
    parameters: Record<string, unknown>;
    async: boolean;
    messages: Spoken[];
    messagesOrder: 'random' | 'in-order';
  },
): RuntimeTool {
  const request = async (args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome> => {
    if (!t.url) return { status: 'failed', content: 'This tool has no URL configured.' };
    const { url, used } = substituteUrl(t.url, args, ctx.contextVariables);
    const rest = Object.fromEntries(Object.entries(args).filter(([k]) => !used.has(k)));
    let headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(t.headers)) if (typeof v === 'string') headers[k] = substituteVars(v, ctx.contextVariables);
    if (t.credentialUuid) {
      const auth = ctx.auth ? await ctx.auth(t.credentialUuid) : { error: 'This tool uses a stored credential, which this call cannot read; the request was not sent.' };
      if ('error' in auth) return { status: 'failed', content: auth.error };
      headers = withHeaders(headers, auth.headers);
    }
    let target = url;
    let body: string | undefined;
    if (t.method === 'GET' || t.method === 'DELETE') {
      const u = new URL(url);
      for (const [k, v] of Object.entries(rest)) u.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
      target = u.toString();
    } else {
      body = JSON.stringify(args);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
    }
    try {
      const res = await safeFetch(target, { method: t.method, headers, body, redirect: 'manual', policy: ctx.policy, timeoutMs: t.timeoutMs, signal });
      const text = (await res.text()).slice(0, 4000);
      if (res.status >= 200 && res.status < 300) return { status: 'success', content: text || `HTTP ${res.status}` };
      return { status: 'failed', content: `The request failed with HTTP ${res.status}: ${text.slice(0, 1000)}` };
    } catch (err) {
      const e = err as Error & { cause?: unknown };
      if (e.name === 'TimeoutError' || (e.name === 'AbortError' && !signal.aborted)) return { status: 'timeout', content: `The request timed out after ${t.timeoutMs} ms.` };
      const blocked = err instanceof OutboundBlockedError || e.cause instanceof OutboundBlockedError;
      const msg = blocked ? ((e.cause as Error | undefined)?.message ?? e.message) : e.message;
      return { status: 'failed', content: `The request could not be made: ${msg}` };
    }
  };
  return {
    spec: { name: t.name, description: t.description, parameters: t.parameters },
    kind: 'function',
    messages: t.messages,
    messagesOrder: t.messagesOrder,
    async run(args, signal) {
      if (t.async) {
        void request(args, new AbortController().signal).then(
          (r) => ctx.logger.info({ tool: t.name, status: r.status }, 'async tool finished'),
          (err: unknown) => ctx.logger.warn({ tool: t.name, err }, 'async tool failed'),
        );
        return { status: 'completed', content: 'The request was sent; its result will not be reported back.' };
      }
      return request(args, signal);
    },
  };
}

/** endCall: one of `farewells` (never empty, see ToolVoice.endCallFarewells) is said before the hang-up. */
function endCallTool(name: string, description: string, farewells: Spoken[]): RuntimeTool {
  return {
    spec: {
      name,
      description: description || 'End the call. Use it when the conversation is complete or the caller wants to hang up.',
      parameters: { type: 'object', properties: {} },
    },
    kind: 'endCall',
    messages: [],
    messagesOrder: 'random',
    async run() {
      const farewell = farewells[Math.floor(Math.random() * farewells.length)]!;
      return { status: 'success', content: 'The call is ending.', endCall: { farewell } };
    },
  };
}

interface TransferSettings {
  destination: string;
  message: Spoken | null;
  timeoutS: number;
  recordTransfer: boolean;
}

/** transferCall config (saved: messageType none/custom/audio; inline: customMessage). */
function transferSettings(voice: ToolVoice, config: Record<string, unknown>, inline: boolean): TransferSettings {
  const message = voice.transferMessage(config, inline);
  const timeout = typeof config.timeout === 'number' && Number.isFinite(config.timeout) ? Math.round(config.timeout) : 30;
  return { destination: str(config.destination).trim(), message, timeoutS: timeout, recordTransfer: config.recordTransfer !== false };
}

function transferTool(ctx: ToolRunContext, name: string, description: string, t: TransferSettings): RuntimeTool {
  const refuse = (reason: string) => ({
    status: 'failed' as const,
    content: JSON.stringify({ error: 'provider_not_supported', message: `${reason} Tell the caller you cannot transfer them and keep helping.` }),
  });
  // the carrier's own limit (Exotel: no transfer; Smartflo: no SIP URI; the others: no host-less extension), known
  // before the call starts: the tool then says nothing and refuses, and the call goes on
  const unsupported = t.destination && ctx.transferSupport ? ctx.transferSupport(t.destination) : null;
  return {
    spec: { name, description: description || `Transfer the caller to ${t.destination || 'a human agent'}.`, parameters: { type: 'object', properties: {} } },
    kind: 'transferCall',
    messages: ctx.transfer && t.destination && t.message && !unsupported ? [t.message] : [],
    messagesOrder: 'random',
    async run(_args, _signal, live) {
      const web = ['websocket', 'webrtc', 'web'].includes(ctx.transport);
      if (web) return refuse('Call transfer is not possible on a web call.');
      if (!ctx.transfer) return refuse('Carrier transfer is not configured for this call.');
      if (!t.destination) return { status: 'failed', content: 'This transfer tool has no destination configured. Tell the caller you cannot transfer them and keep helping.' };
      if (unsupported) {
        ctx.logger.warn({ tool: name, destination: t.destination, reason: unsupported }, 'transfer refused: the carrier cannot make it');
        return refuse(`${unsupported}.`);
      }
      await live?.spoken; // the caller hears the whole transfer message first
      const r = await ctx.transfer({ destination: t.destination, timeoutS: t.timeoutS, recordTransfer: t.recordTransfer });
      if (!r.ok) {
        ctx.logger.warn({ tool: name, error: r.error }, 'carrier transfer failed');
        return { status: 'failed', content: `The transfer failed: ${r.error}. Tell the caller you could not transfer them and keep helping.` };
      }
      return { status: 'success', content: `The call was transferred to ${t.destination}.`, endCall: { farewell: null, reason: 'transferred' } };
    },
  };
}

function calculatorTool(description: string): RuntimeTool {
  return {
    spec: {
      name: 'safe_calculator',
      description: description || 'Evaluate an arithmetic expression exactly (e.g. "(12.5 * 3) + 7%"). Use it for any calculation.',
      parameters: { type: 'object', properties: { expression: { type: 'string', description: 'The expression to evaluate' } }, required: ['expression'] },
    },
    kind: 'calculator',
    messages: [],
    messagesOrder: 'random',
    async run(args) {
      const r = calculate(String(args.expression ?? ''));
      return r.ok ? { status: 'success', content: r.result } : { status: 'failed', content: `Could not evaluate: ${r.error}` };
    },
  };
}

function queryTool(
  ctx: ToolRunContext,
  name: string,
  description: string,
  groups: Array<Record<string, unknown>>,
  messages: Spoken[],
  messagesOrder: 'random' | 'in-order',
  timeoutS: number,
): RuntimeTool {
  const names = groups.map((g) => str(g.name)).filter(Boolean);
  const kbDesc = groups.map((g) => `${str(g.name)}: ${str(g.description)}`).join('; ');
  const properties: Record<string, unknown> = { query: { type: 'string', description: 'What to look up, as a full question' } };
  if (names.length > 1) properties.knowledge_base = { type: 'string', enum: names, description: 'Which knowledge base to search' };
  return {
    spec: {
      name: name || 'retrieve_from_knowledge_base',
      description: `${description || 'Search the knowledge base for facts needed to answer the caller.'} Knowledge bases: ${kbDesc}`,
      parameters: { type: 'object', properties, required: ['query'] },
    },
    kind: 'query',
    messages,
    messagesOrder,
    async run(args) {
      const query = String(args.query ?? '').trim();
      if (!query) return { status: 'failed', content: 'A query is required.' };
      const chosen = typeof args.knowledge_base === 'string' ? groups.filter((g) => str(g.name) === args.knowledge_base) : groups;
      const documentIds = [...new Set((chosen.length ? chosen : groups).flatMap((g) => strs(g.documentIds)))];
      if (!documentIds.length) return { status: 'failed', content: 'No documents are attached to this knowledge base.' };
      const search = ctx.searchKnowledge;
      if (!search) return { status: 'failed', content: 'Knowledge-base search is not available on this server.' };
      const timeoutMs = timeoutS * 1000;
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
      const r = await Promise.race([search(ctx.db, { orgId: ctx.orgId, documentIds, query, maxTokens: 1200, timeoutMs }), timer]);
      if (r === 'timeout') return { status: 'timeout', content: `The knowledge-base search timed out after ${timeoutS} s.` };
      if (r.status === 'not_ready') return { status: 'failed', content: 'The documents are still being processed; no answer is available yet.' };
      if (r.status === 'error') return { status: 'failed', content: `The knowledge-base search failed: ${r.message}` };
      if (!r.passages.length) return { status: 'success', content: 'No relevant passages were found.' };
      return { status: 'success', content: r.passages.map((p, i) => `[${i + 1}] ${p.content}`).join('\n\n') };
    },
  };
}

function testTool(name: string, description: string, config: Record<string, unknown>): RuntimeTool {
  const delayS = typeof config.delaySeconds === 'number' ? config.delaySeconds : 6;
  const outcome = config.outcome === 'failure' ? 'failure' : 'success';
  const responseText = str(config.responseText).trim();
  return {
    spec: { name, description: description || 'A simulated tool for testing.', parameters: { type: 'object', properties: {}, additionalProperties: true } },
    kind: 'testTool',
    messages: texts(strs(config.messages)),
    messagesOrder: order(config.messagesOrder),
    async run(_args, signal) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delayS * 1000);
        signal.addEventListener('abort', () => {
          clearTimeout(t);
          resolve();
        });
      });
      return outcome === 'success'
        ? { status: 'success', content: responseText || TEST_TOOL_SUCCESS }
        : { status: 'failed', content: responseText || TEST_TOOL_FAILURE };
    },
  };
}

export function outboundPolicy(config: Config): OutboundPolicy {
  return policyFromConfig(config);
}
