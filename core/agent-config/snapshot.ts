// Call-time materialisation of a validated config: context variables merged (saved < call-time non-blank <
// built-ins) and `{{name}}` placeholders substituted in every spoken or sent string. Also the credential scrubber
// for stored rejected-request snapshots.
import { DateTime } from 'luxon';
import type { AgentConfig, ToolEntry } from './schema.ts';

export interface SnapshotOptions {
  savedVariables?: Record<string, string>;
  callVariables?: Record<string, string> | null;
  /**
   * The number built-ins. A live call passes liveCallBuiltins(call) (strings, '' on web calls); absent/null — a
   * preview, which is no call — leaves `{{user_number}}`/`{{agent_number}}` literal.
   */
  builtins: { userNumber?: string | null; agentNumber?: string | null };
  now?: Date;
}

/**
 * The one rule for `{{user_number}}` / `{{agent_number}}` on a live call, used by the api (the snapshot frozen on
 * the call row) and by media (the prompt and tool variables at connect time): the caller's and the agent's phone
 * numbers when the call has a direction (telephony); a web call (WebSocket, WebRTC, test call) has no phone leg, so
 * both are the empty string — in the system prompt, greeting, idle messages and tool strings alike. Previews pass
 * no built-ins and keep them literal. Callers cannot set them through contextVariables.
 */
export function liveCallBuiltins(call: { customerNumber?: string | null; platformNumber?: string | null }): { userNumber: string; agentNumber: string } {
  return { userNumber: call.customerNumber ?? '', agentNumber: call.platformNumber ?? '' };
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(vars, name) ? vars[name]! : whole));
}

/**
 * The variables visible to placeholders. Built-ins: current_time (HH:mm, 24 h) and current_date (yyyy-MM-dd) in
 * the config's timezone; user_number / agent_number when given (see liveCallBuiltins).
 */
export function contextValues(config: Pick<AgentConfig, 'timezone' | 'contextVariables'>, opts: SnapshotOptions): { merged: Record<string, string>; all: Record<string, string> } {
  const merged: Record<string, string> = { ...config.contextVariables, ...(opts.savedVariables ?? {}) };
  for (const [k, v] of Object.entries(opts.callVariables ?? {})) {
    if (typeof v === 'string' && v.trim().length > 0) merged[k] = v;
  }
  const now = DateTime.fromJSDate(opts.now ?? new Date()).setZone(config.timezone);
  const builtins: Record<string, string> = { current_time: now.toFormat('HH:mm'), current_date: now.toFormat('yyyy-MM-dd') };
  if (typeof opts.builtins.userNumber === 'string') builtins.user_number = opts.builtins.userNumber;
  if (typeof opts.builtins.agentNumber === 'string') builtins.agent_number = opts.builtins.agentNumber;
  for (const k of ['current_time', 'current_date', 'user_number', 'agent_number']) delete merged[k];
  return { merged, all: { ...merged, ...builtins } };
}

function substituteTool(tool: ToolEntry, vars: Record<string, string>): ToolEntry {
  if (typeof tool === 'string') return tool;
  const s = (t: string) => substitute(t, vars);
  const messages = (l: string[]) => l.map(s);
  switch (tool.type) {
    case 'function':
      return {
        ...tool,
        config: {
          ...tool.config,
          server: {
            ...tool.config.server,
            url: s(tool.config.server.url),
            headers: Object.fromEntries(Object.entries(tool.config.server.headers).map(([k, v]) => [k, s(v)])),
          },
          messages: messages(tool.config.messages),
        },
      };
    case 'endCall':
      return { ...tool, config: { ...tool.config, customMessages: messages(tool.config.customMessages) } };
    case 'transferCall':
      return { ...tool, config: { ...tool.config, customMessage: tool.config.customMessage === null ? null : s(tool.config.customMessage) } };
    case 'query':
      return { ...tool, config: { ...tool.config, messages: messages(tool.config.messages) } };
    case 'testTool':
      return { ...tool, config: { ...tool.config, responseText: s(tool.config.responseText), messages: messages(tool.config.messages) } };
    case 'sendDtmf':
      return tool;
  }
}

/**
 * The config a call runs with: contextVariables = saved defaults overlaid with call-time non-blank values, and
 * placeholders substituted in systemPrompt, greeting.firstMessages, userIdleMessages, voicemailMessage and tools (function
 * url/headers/messages, endCall messages, transfer message, query/test messages and responseText).
 * Unknown placeholders stay literal.
 */
export function resolveSnapshot(config: AgentConfig, opts: SnapshotOptions): AgentConfig {
  const { merged, all } = contextValues(config, opts);
  const s = (t: string) => substitute(t, all);
  return {
    ...config,
    systemPrompt: s(config.systemPrompt),
    greeting: { ...config.greeting, firstMessages: config.greeting.firstMessages.map(s) },
    userIdleMessages: config.userIdleMessages.map(s),
    voicemailMessage: config.voicemailMessage === null ? null : s(config.voicemailMessage),
    tools: config.tools.map((t) => substituteTool(t, all)),
    contextVariables: merged,
  };
}

const SECRET_HEADER = /auth|token|secret|key|cookie|password|passwd|signature|credential|session/i;
export const REDACTED = '[REDACTED]';

/**
 * Copy of a request body safe to store: `auth` anywhere under `callConfig` (inline carrier credentials) removed, `webhookSecret`
 * removed at any depth, and inside every `headers` object the values of secret-looking headers (names containing
 * auth, token, secret, key, cookie, password, signature, credential, session) replaced by '[REDACTED]'.
 */
export function scrubCredentials(body: unknown): unknown {
  const walk = (v: unknown, key: string | null, inCallConfig: boolean, depth: number): unknown => {
    if (depth > 64 || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, null, inCallConfig, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
      if (k === 'webhookSecret' || k === '__proto__') continue;
      if (inCallConfig && k === 'auth') continue;
      if (key === 'headers' && SECRET_HEADER.test(k)) {
        out[k] = REDACTED;
        continue;
      }
      out[k] = walk(val, k, inCallConfig || (depth === 0 && k === 'callConfig'), depth + 1);
    }
    return out;
  };
  return walk(body, null, false, 0);
}
