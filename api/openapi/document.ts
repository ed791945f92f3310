// OpenAPI 3.1 document generated from the same zod schemas the API validates with (z.toJSONSchema, input side),
// served WITHOUT an API key at GET /api/v1/openapi.json, plus a self-contained HTML reference at GET /api/v1/docs
// (no external scripts: the page renders the JSON itself).
import type Router from '@koa/router';
import { z } from 'zod';
import { agentConfigSchema, inlineToolSchema } from '../../core/agent-config/schema.ts';
import { toolCreateSchema, toolDefinitionSchema, toolUpdateSchema } from '../../core/agent-config/saved-tools.ts';
import type { ApiDeps } from '../deps.ts';
import { err, ok, page, pageOf } from './parts.ts';

type Json = Record<string, unknown>;

function schemaOf(s: z.ZodType): Json {
  const js = z.toJSONSchema(s, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
  delete js.$schema;
  return js;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Path items other route modules may add (registerOpenApiPaths) before the document is first served. */
const extraPaths: Record<string, Json> = {};
export function registerOpenApiPaths(paths: Record<string, Json>): void {
  for (const [p, item] of Object.entries(paths)) extraPaths[p] = { ...(extraPaths[p] ?? {}), ...item };
}

const uuidParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });

let cached: Json | null = null;

export function openApiDocument(baseUrl?: string): Json {
  if (!cached) cached = build();
  return baseUrl ? { ...cached, servers: [{ url: baseUrl }] } : cached;
}

function build(): Json {
  const agentEnvelope = {
    type: 'object',
    properties: {
      uuid: { type: 'string', format: 'uuid' },
      status: { enum: ['active', 'archived'] },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
      config: ref('AgentConfig'),
    },
    required: ['uuid', 'status', 'createdAt', 'updatedAt', 'config'],
  };
  const configSchema = schemaOf(agentConfigSchema);
  const webhookSecret = { type: ['string', 'null'], minLength: 1, maxLength: 512, description: 'Write-only HMAC key for webhook signatures (X-Service-Signature); never returned.' };
  const agentCreate = { ...configSchema, properties: { ...(configSchema.properties as Json), webhookSecret } };
  const agentPatch = { ...configSchema, required: [], properties: { ...(configSchema.properties as Json), webhookSecret }, description: 'Any subset of AgentConfig plus optional webhookSecret (deep-merged; see the operation description).' };
  const invalidAgentConfig = ok(
    {
      type: 'object',
      properties: {
        detail: {
          type: 'object',
          properties: {
            error: { const: 'invalid_agent_config' },
            details: { type: 'array', items: { type: 'object', properties: { loc: { type: 'array', items: { type: ['string', 'integer'] } }, msg: { type: 'string' }, type: { type: 'string' } } } },
          },
        },
      },
    },
    "Invalid config: {error: 'invalid_agent_config', details: [{loc, msg, type}]}; or 'No organization selected'",
  );
  const toolRecord = {
    type: 'object',
    properties: {
      tool_uuid: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      function_name: { type: 'string', description: 'The name the LLM sees.' },
      description: { type: 'string' },
      category: { type: 'string' },
      icon: { type: 'string' },
      icon_color: { type: 'string' },
      definition: ref('SavedToolDefinition'),
      status: { enum: ['active', 'archived'] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
  };
  const paths: Record<string, Json> = {
    '/agents': {
      post: { tags: ['Agents'], summary: 'Create an agent', requestBody: { required: true, content: { 'application/json': { schema: agentCreate } } }, responses: { 201: ok(agentEnvelope, 'Agent envelope (resolved config)'), 400: invalidAgentConfig, 401: err('Missing or invalid API key') } },
      get: {
        tags: ['Agents'],
        summary: 'List agents (archived hidden unless asked)',
        parameters: [...page, { name: 'status', in: 'query', schema: { enum: ['active', 'archived', 'all'], default: 'active' } }, { name: 'include_archived', in: 'query', schema: { enum: ['true', 'false'] } }, { name: 'name', in: 'query', schema: { type: 'string' } }],
        responses: { 200: ok(pageOf(agentEnvelope)), 422: err('Invalid query parameters') },
      },
    },
    '/agents/{agent_uuid}': {
      parameters: [uuidParam('agent_uuid')],
      get: { tags: ['Agents'], summary: 'Get an agent', responses: { 200: ok(agentEnvelope), 404: err("'Agent not found'") } },
      patch: {
        tags: ['Agents'],
        summary: 'Deep-merge update',
        description: 'Objects merge recursively; lists, scalars and null replace; contextVariables replaces wholesale; the merged result is re-validated under a row lock; webhookSecret is written directly and never returned.',
        requestBody: { required: true, content: { 'application/json': { schema: agentPatch } } },
        responses: { 200: ok(agentEnvelope), 400: invalidAgentConfig, 404: err("'Agent not found'") },
      },
      delete: { tags: ['Agents'], summary: 'Archive an agent', responses: { 200: ok(agentEnvelope), 404: err("'Agent not found'") } },
    },
    '/agents/{agent_uuid}/duplicate': {
      parameters: [uuidParam('agent_uuid')],
      post: { tags: ['Agents'], summary: 'Duplicate an agent', requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string', maxLength: 120 } } } } } }, responses: { 201: ok(agentEnvelope), 404: err("'Agent not found'") } },
    },
    '/agents/preview-snapshot': {
      post: {
        tags: ['Agents'],
        summary: 'Preview the resolved config a call would run with',
        description: 'Context variables are merged (saved < call-time non-blank < built-ins) and placeholders substituted. {{user_number}} and {{agent_number}} stay literal here (a preview is not a call); on a web call they are the empty string, on a telephony call the phone numbers.',
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', properties: { agentId: { type: 'string', format: 'uuid' }, agent: ref('AgentConfig'), contextVariables: { type: 'object', additionalProperties: { type: 'string' } } }, additionalProperties: false } } } },
        responses: {
          200: ok({ type: 'object', properties: { snapshot: ref('AgentConfig') } }),
          400: err("{error: 'Agent configuration validation failed', details: [{path, message, type}]} or \"Must provide either 'agentId' or 'agent'.\""),
          404: err("'Agent not found'"),
          422: err('Off-catalog model (string detail naming model and provider)'),
        },
      },
    },
    '/agents/models/available': { get: { tags: ['Catalog'], summary: 'Model catalog: providers, models, defaults, languages per speech model, restricted voices', responses: { 200: ok({ type: 'object' }) } } },
    '/user/configurations/providers': { get: { tags: ['Catalog'], summary: 'Providers and whether each can run on this install (credentials set and adapter present)', responses: { 200: ok({ type: 'object', properties: { providers: { type: 'array', items: { type: 'object', properties: { family: { enum: ['llm', 'stt', 'tts'] }, provider: { type: 'string' }, label: { type: 'string' }, credentialEnv: { type: ['string', 'null'], description: 'Config variable holding the credential; null when none is needed' }, credentialsConfigured: { type: 'boolean', description: 'Same as configured' }, configured: { type: 'boolean', description: 'The credential variables are set' }, adapter: { type: 'boolean', description: 'This install has an adapter for the provider' }, available: { type: 'boolean', description: 'configured and adapter: a call on it can run here' } } } } } }) } } },
    '/tools': {
      post: { tags: ['Tools'], summary: 'Create a saved tool', requestBody: { required: true, content: { 'application/json': { schema: ref('SavedToolCreate') } } }, responses: { 200: ok(toolRecord), 400: err("'No organization selected for the user', \"Invalid category '...'. Must be one of: ...\", category/definition mismatch, \"Credential '...' not found\" (definition.config.credential_uuid must name a stored credential of the organization)"), 422: err('Definition failed validation (array)') } },
      get: { tags: ['Tools'], summary: 'List saved tools', parameters: [...page, { name: 'category', in: 'query', schema: { enum: ['function', 'endCall', 'transferCall', 'calculator', 'query', 'native', 'integration'] } }, { name: 'status', in: 'query', schema: { enum: ['active', 'archived', 'all'], default: 'active' } }], responses: { 200: ok(pageOf(toolRecord)) } },
    },
    '/tools/{tool_uuid}': {
      parameters: [uuidParam('tool_uuid')],
      get: { tags: ['Tools'], summary: 'Get a saved tool', responses: { 200: ok(toolRecord), 404: err("'Tool not found'") } },
      put: { tags: ['Tools'], summary: 'Update a saved tool (complete definitions only)', requestBody: { required: true, content: { 'application/json': { schema: ref('SavedToolUpdate') } } }, responses: { 200: ok(toolRecord), 400: err("Incomplete definition, category change, unknown credential_uuid"), 404: err("'Tool not found'"), 422: err('Validation failed (array)') } },
      delete: { tags: ['Tools'], summary: 'Archive a saved tool', responses: { 200: ok({ type: 'object', properties: { status: { const: 'archived' }, tool_uuid: { type: 'string', format: 'uuid' } } }), 404: err("'Tool not found'") } },
    },
    '/tools/{tool_uuid}/unarchive': { parameters: [uuidParam('tool_uuid')], post: { tags: ['Tools'], summary: 'Restore an archived tool', responses: { 200: ok(toolRecord), 404: err("'Tool not found'") } } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Voice Agent Calling Service',
      version: '1.0.0',
      description: 'HTTP + JSON API for building and running conversational voice agents. Every request carries `X-API-Key`. Errors are `{detail: ...}`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ apiKey: [] }],
    paths: { ...paths, ...extraPaths },
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas: {
        AgentConfig: configSchema,
        InlineTool: schemaOf(inlineToolSchema),
        SavedToolCreate: schemaOf(toolCreateSchema),
        SavedToolUpdate: schemaOf(toolUpdateSchema),
        SavedToolDefinition: schemaOf(toolDefinitionSchema),
      },
    },
  };
}

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>API reference</title>
<style>
body{font:14px/1.5 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}
header{background:#0f172a;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{max-width:1100px;margin:0 auto;padding:16px 24px}
.op{border:1px solid #d0d7de;border-radius:6px;margin:8px 0}
.op>summary{cursor:pointer;padding:8px 12px;display:flex;gap:12px;align-items:center}
.m{font-weight:700;text-transform:uppercase;width:64px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 0}
.get{background:#0969da}.post{background:#1a7f37}.put{background:#9a6700}.patch{background:#8250df}.delete{background:#cf222e}
.body{padding:8px 16px;border-top:1px solid #d0d7de}
code,pre{font-family:ui-monospace,monospace;font-size:12px}pre{background:#f6f8fa;padding:8px;overflow:auto;border-radius:4px}
.schema details{margin-left:16px}.schema summary{cursor:pointer}.t{color:#6e7781}.req{color:#cf222e}
h2{border-bottom:1px solid #d0d7de;padding-bottom:4px}
</style></head><body><header><h1 id="title">API reference</h1><div id="desc"></div></header><main id="app">Loading…</main>
<script>
const esc=s=>String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
let doc;
function resolve(s){if(s&&s.$ref){const n=s.$ref.split('/').pop();return [doc.components.schemas[n],n]}return [s,null]}
function typeOf(s){if(!s)return 'any';if(s.$ref)return s.$ref.split('/').pop();if(s.enum)return s.enum.map(v=>JSON.stringify(v)).join(' | ');if(s.const!==undefined)return JSON.stringify(s.const);
 if(s.anyOf||s.oneOf)return (s.anyOf||s.oneOf).map(typeOf).join(' | ');if(s.type==='array')return typeOf(s.items)+'[]';return Array.isArray(s.type)?s.type.join(' | '):(s.type||'object')}
function facts(s){const f=[];for(const k of ['minimum','maximum','exclusiveMinimum','exclusiveMaximum','multipleOf','minLength','maxLength','minItems','maxItems','pattern','format'])if(s&&s[k]!==undefined)f.push(k+'='+s[k]);
 if(s&&s.default!==undefined)f.push('default='+JSON.stringify(s.default));return f.length?' <span class="t">('+esc(f.join(', '))+')</span>':''}
function render(s,depth,seen){const [r,name]=resolve(s);if(!r)return '';if(depth>12)return '';if(name&&seen.has(name))return '<div class="t">see '+esc(name)+'</div>';const seen2=new Set(seen);if(name)seen2.add(name);
 let h='';const alts=r.anyOf||r.oneOf;if(alts){alts.forEach((a,i)=>{h+='<details><summary>variant '+(i+1)+': '+esc(typeOf(a))+'</summary>'+render(a,depth+1,seen2)+'</details>'});return h}
 if(r.type==='array'&&r.items)return render(r.items,depth+1,seen2);
 const props=r.properties||{};const req=new Set(r.required||[]);
 for(const [k,v] of Object.entries(props)){const inner=render(v,depth+1,seen2);const line='<code>'+esc(k)+'</code>'+(req.has(k)?' <span class="req">required</span>':'')+' <span class="t">'+esc(typeOf(v))+'</span>'+facts(resolve(v)[0]||v)+(v.description?' — '+esc(v.description):'');
  h+=inner?'<details><summary>'+line+'</summary>'+inner+'</details>':'<div style="margin-left:16px">'+line+'</div>'}
 if(r.additionalProperties&&typeof r.additionalProperties==='object')h+='<div style="margin-left:16px"><code>{key}</code> <span class="t">'+esc(typeOf(r.additionalProperties))+'</span>'+facts(r.additionalProperties)+'</div>';
 return h}
function op(path,method,o){let h='<details class="op"><summary><span class="m '+method+'">'+method+'</span><code>'+esc(path)+'</code> '+esc(o.summary||'')+'</summary><div class="body">';
 if(o.description)h+='<p>'+esc(o.description)+'</p>';
 const params=(o.parameters||[]);if(params.length)h+='<h4>Parameters</h4>'+params.map(p=>'<div><code>'+esc(p.name)+'</code> <span class="t">'+esc(p.in)+' · '+esc(typeOf(p.schema))+'</span>'+facts(p.schema)+'</div>').join('');
 const rb=o.requestBody&&o.requestBody.content&&o.requestBody.content['application/json'];if(rb)h+='<h4>Request body</h4><div class="schema">'+render(rb.schema,0,new Set())+'</div>';
 h+='<h4>Responses</h4>';for(const [code,r] of Object.entries(o.responses||{})){h+='<div><b>'+esc(code)+'</b> '+esc(r.description||'')+'</div>'}
 return h+'</div></details>'}
fetch('openapi.json').then(r=>r.ok()).then(d=>{doc=d;document.getElementById('title').textContent=d.info.title+' '+d.info.version;document.getElementById('desc').textContent=d.info.description||'';
 const byTag={};for(const [p,item] of Object.entries(d.paths)){const common=item.parameters||[];for(const m of ['get','post','put','patch','delete']){const o=item[m];if(!o)continue;const t=(o.tags||['Other'])[0];(byTag[t]=byTag[t]||[]).push(op(p,m,{...o,parameters:[...common,...(o.parameters||[])]}))}}
 let h='';for(const [t,ops] of Object.entries(byTag))h+='<h2>'+esc(t)+'</h2>'+ops.join('');
 h+='<h2>Schemas</h2>';for(const n of Object.keys(d.components.schemas))h+='<details class="op"><summary><code>'+esc(n)+'</code></summary><div class="body schema">'+render({$ref:'#/components/schemas/'+n},0,new Set())+'</div></details>';
 h+='<p class="t">Raw document: <a href="openapi.json">openapi.json</a></p>';document.getElementById('app').innerHTML=h}).catch(e=>{document.getElementById('app').textContent='Failed to load openapi.json: '+e});
</script></body></html>`;

/** Public module (no API key): GET /api/v1/openapi.json and GET /api/v1/docs. */
export function openApiRoutes(router: Router, deps: ApiDeps): void {
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument(deps.config.baseUrl);
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'");
    ctx.body = DOCS_HTML;
  });
}
