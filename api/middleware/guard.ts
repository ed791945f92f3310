// The one input guard: text PostgreSQL cannot store (U+0000 in text/jsonb, unpaired UTF-16 surrogates, which the
// driver would send as invalid UTF-8) is refused before any route runs, naming the field, on every endpoint. It
// checks the query string (loc ['query', key]), the matched route's path parameters (['path', param]), JSON and
// form bodies (['body', ...path], parsed by body.ts) and multipart fields and file names (multipart.ts calls
// assertStorable). Headers need no check: Node's parser refuses NUL/CR/LF and decodes the rest as latin1.
// The answer takes the shape the spec gives the route family's validation errors: 422 `[{type, loc, msg, input}]`
// by default; 400 `{error: 'invalid_agent_config', details}` on agent create/update; 400 `{error: 'Agent
// configuration validation failed', details}` on preview-snapshot. POST /call and test-call record every rejected
// call as a call row, so the guard leaves the answer to the route (`ctx.state.unstorable` / `refusedBody`).
import type { Middleware, ParameterizedContext } from 'koa';
import type Router from '@koa/router';
import { HttpError } from '../../core/http-error.ts';
import { bodyFindings, flatFindings, safeDecode, unstorable422, type Finding } from '../../core/input-guard.ts';
import { toAgentConfigDetails, toCallDetails, type ValidationItem } from '../../core/validation.ts';

type Family = 'call' | 'test-call' | 'preview' | 'agent-config' | 'default';

/** The route families whose validation errors the spec shapes differently from the 422 array. */
function familyOf(method: string, route: string | undefined): Family {
  if (method === 'POST' && route === '/api/v1/call') return 'call';
  if (method === 'POST' && route === '/api/v1/agents/:agent_uuid/test-call') return 'test-call';
  if (method === 'POST' && route === '/api/v1/agents/preview-snapshot') return 'preview';
  if ((method === 'POST' && route === '/api/v1/agents') || (method === 'PATCH' && route === '/api/v1/agents/:agent_uuid')) return 'agent-config';
  return 'default';
}

function refusal(family: Family, findings: Finding[]): HttpError {
  const bodyOnly = findings.every((f) => f.where === 'body');
  if (family === 'agent-config' && bodyOnly) return new HttpError(400, { error: 'invalid_agent_config', details: toAgentConfigDetails(findings) });
  if ((family === 'preview' || family === 'call') && bodyOnly)
    return new HttpError(400, { error: 'Agent configuration validation failed', details: toCallDetails(findings) });
  return new HttpError(422, unstorable422(findings));
}

/**
 * The route that serves the request among all routers (pattern and decoded params): where patterns overlap (the
 * carrier hooks' `/telephony/:carrier/...` and `/telephony/inbound/bindings/:id`), the one with more literal segments.
 */
function matchRoute(routers: Router[], path: string, method: string): { route: string; params: Record<string, string> } | null {
  let best: { layer: Router['stack'][number]; literals: number } | null = null;
  for (const router of routers) {
    for (const layer of router.match(path, method).pathAndMethod) {
      if (layer.methods.length === 0 || typeof layer.path !== 'string') continue;
      const literals = layer.path.split('/').filter((seg) => seg && !seg.startsWith(':')).length;
      if (!best || literals > best.literals) best = { layer, literals };
    }
  }
  if (!best) return null;
  const { layer } = best;
  const captures = layer.captures(path);
  const params: Record<string, string> = {};
  layer.paramNames.forEach((k, i) => {
    const raw = captures[i];
    if (raw !== undefined) params[String(k.name)] = safeDecode(raw);
  });
  return { route: layer.path as string, params };
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
    findings.push(...bodyFindings(body));
    if (ctx.state.form) findings.push(...flatFindings('body', ctx.state.form));
    if (findings.length > 0) {
      const family = familyOf(ctx.method, matched?.route);
      if (family === 'call' && findings.every((f) => f.where === 'body')) {
        ctx.state.unstorable = findings.map(({ where: _w, ...item }) => item);
      } else if (family === 'test-call' && findings.every((f) => f.where === 'body')) {
        // a refused test call is recorded as a rejected call row too: the route answers this refusal after writing it
        ctx.state.refusedBody = refusal('default', findings);
      } else {
        throw refusal(family, findings);
      }
    }
    await next();
  };
}

/** For parsers that run inside a route (multipart): refuse unstorable fields with the same 422 answer. */
export function assertStorable(ctx: ParameterizedContext, fields: Record<string, string | readonly string[] | undefined>): void {
  const findings = flatFindings('body', fields);
  if (findings.length > 0) throw refusal(familyOf(ctx.method, (ctx as { _matchedRoute?: string })._matchedRoute), findings);
}

declare module 'koa' {
  interface DefaultState {
    /** Set by the input guard on POST /call: the unstorable body values the route must reject (and record). */
    unstorable?: ValidationItem[];
    /** Set by the input guard on POST /agents/{uuid}/test-call: the refusal the route answers after recording it. */
    refusedBody?: HttpError;
  }
}
