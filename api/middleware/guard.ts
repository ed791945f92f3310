// The one input guard: text PostgreSQL cannot store (U+0000 in text/jsonb, unpaired UTF-16 surrogates, which
// the driver would send as invalid UTF-8) is refused before any route runs, naming the field, on every endpoint.
//
// It sees every way text enters the API:
//  - the query string (keys and values)                    → loc ['query', <key>]
//  - path parameters of the route the request matches      → loc ['path', <param>]
//  - JSON bodies, form-encoded bodies (carrier callbacks)   → loc ['body', ...path]  (parsed by body.ts)
//  - multipart text fields and file names                  → loc ['body', <field>]  (multipart.ts calls assertStorable)
// Headers need no check: Node's HTTP parser refuses NUL/CR/LF in them and decodes the rest as latin1, which
// can never produce a NUL or a lone surrogate.
//
// The answer takes the shape the spec gives the route family's validation errors:
//  - default: 422 `[{type, loc, msg, input}]` (the spec's schema-validation array)
//  - agent create/update: 400 `{error: 'invalid_agent_config', details: [{loc, msg, type}]}`
//  - preview-snapshot: 400 `{error: 'Agent configuration validation failed', details: [{path, message, type}]}`
//  - POST /call: the spec makes every rejected call a call row, so the guard leaves the answer (and the row) to the
//    route: the findings are in `ctx.state.unstorable` and the route answers 400 in its own shape first thing.
import type { Middleware, ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import { HttpError } from '../../core/http-error.ts';
import { preCheck } from '../../core/agent-config/issues.ts';
import { toAgentConfigDetails, toCallDetails, type Loc, type ValidationItem } from '../../core/validation.ts';

export const UNSTORABLE_TYPE = 'string_unicode';
export const UNSTORABLE_MSG = 'Input should be a valid string without NUL characters or unpaired surrogates';

export const isStorable = (s: string): boolean => !s.includes('\u0000') && s.isWellFormed();

type Where = 'body' | 'query' | 'path';
interface Finding extends ValidationItem {
  where: Where;
}

function stringItem(where: Where, path: Loc, value: string): Finding {
  return { where, type: UNSTORABLE_TYPE, path, msg: UNSTORABLE_MSG, input: value };
}

/** Findings for a flat record of strings (query strings, form fields, multipart fields). Keys are checked too. */
function flatFindings(where: Where, record: Record<string, string | string[] | undefined>): Finding[] {
  const out: Finding[] = [];
  for (const [key, raw] of Object.entries(record)) {
    if (!isStorable(key)) {
      out.push({ where, type: 'value_error', path: [key], msg: 'Invalid key', input: null });
      continue;
    }
    const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
    values.forEach((v, i) => {
      if (!isStorable(v)) out.push(stringItem(where, Array.isArray(raw) ? [key, i] : [key], v));
    });
  }
  return out;
}

type Family = 'call' | 'preview' | 'agent-config' | 'default';

/** The route families whose validation errors the spec shapes differently from the 422 array. */
function familyOf(method: string, route: string | undefined): Family {
  if (method === 'POST' && route === '/api/v1/call') return 'call';
  if (method === 'POST' && route === '/api/v1/agents/preview-snapshot') return 'preview';
  if ((method === 'POST' && route === '/api/v1/agents') || (method === 'PATCH' && route === '/api/v1/agents/:agent_uuid')) return 'agent-config';
  return 'default';
}

function refusal(family: Family, findings: Finding[]): HttpError {
  const bodyOnly = findings.every((f) => f.where === 'body');
  if (family === 'agent-config' && bodyOnly) return new HttpError(400, { error: 'invalid_agent_config', details: toAgentConfigDetails(findings) });
  if ((family === 'preview' || family === 'call') && bodyOnly)
    return new HttpError(400, { error: 'Agent configuration validation failed', details: toCallDetails(findings) });
  return new HttpError(422, findings.map((f) => ({ type: f.type, loc: [f.where, ...f.path], msg: f.msg, input: f.input ?? null })));
}

/** The matched route (pattern and decoded params) among the given routers, if any. */
function matchRoute(routers: Router[], path: string, method: string): { route: string; params: Record<string, string> } | null {
  for (const router of routers) {
    const m = router.match(path, method);
    const layer = m.pathAndMethod.find((l) => l.methods.length > 0 && typeof l.path === 'string');
    if (!layer) continue;
    const captures = layer.captures(path);
    const params: Record<string, string> = {};
    layer.paramNames.forEach((k, i) => {
      const raw = captures[i];
      if (raw === undefined) return;
      try {
        params[String(k.name)] = decodeURIComponent(raw);
      } catch {
        params[String(k.name)] = raw; // the router hands the route the raw text too: nothing unstorable in it
      }
    });
    return { route: layer.path as string, params };
  }
  return null;
}

/**
 * The guard middleware, for `router.use()` on every router (after the body parser, body.ts, so the parsed JSON/form
 * body is there; after the API key check). `routers` name the path parameters and pick the error shape.
 */
export function inputGuard(routers: () => Router[]): Middleware {
  return async (ctx, next) => {
    const matched = matchRoute(routers(), ctx.path, ctx.method);
    const findings: Finding[] = [];
    findings.push(...flatFindings('query', ctx.query as Record<string, string | string[] | undefined>));
    if (matched) findings.push(...flatFindings('path', matched.params));
    const body = (ctx.request as { body?: unknown }).body;
    if (body !== undefined) findings.push(...preCheck(body).map((i) => ({ ...i, where: 'body' as const })));
    if (ctx.state.form) findings.push(...flatFindings('body', ctx.state.form));
    if (findings.length > 0) {
      const family = familyOf(ctx.method, matched?.route);
      if (family === 'call' && findings.every((f) => f.where === 'body')) {
        ctx.state.unstorable = findings.map(({ where: _w, ...item }) => item);
      } else {
        throw refusal(family, findings);
      }
    }
    await next();
  };
}

/** For parsers that run inside a route (multipart): refuse unstorable fields with the same 422 answer. */
export function assertStorable(ctx: ParameterizedContext, fields: Record<string, string | string[] | undefined>): void {
  const findings = flatFindings('body', fields);
  if (findings.length > 0) throw refusal(familyOf(ctx.method, (ctx as { _matchedRoute?: string })._matchedRoute), findings);
}

declare module 'koa' {
  interface DefaultState {
    /** Set by the input guard on POST /call: the unstorable body values the route must reject (and record). */
    unstorable?: ValidationItem[];
  }
}
