// JSON Schema reshaping for LlmService.completeWithSchema: each vendor's constrained-output mechanism wants the
// caller's schema in its own dialect, and the answer comes back in the caller's shape.
//  - OpenAI strict Structured Outputs: every object lists all its properties in `required` and sets
//    `additionalProperties: false`; a property the caller left optional becomes nullable instead
//    (`type: [t, 'null']`, `null` added to an `enum`), and those nulls are dropped from the answer again.
//  - Gemini `responseSchema` (an OpenAPI 3.0 Schema subset): upper-case type names, no `additionalProperties` or
//    `$schema`, `propertyOrdering` so the answer keeps the caller's order.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function nullable(node: Json): Json {
  const out: Json = { ...node };
  if (typeof out.type === 'string') out.type = [out.type, 'null'];
  else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

/** The caller's schema in OpenAI's strict form (the input is not changed). */
export function strictJsonSchema(schema: Json): Json {
  const walk = (node: unknown): Json => {
    if (!isObject(node)) return {};
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) if (k !== '$schema') out[k] = v;
    if (isObject(node.properties)) {
      const required = new Set(Array.isArray(node.required) ? (node.required as unknown[]) : []);
      const props: Json = {};
      for (const [name, sub] of Object.entries(node.properties)) props[name] = required.has(name) ? walk(sub) : nullable(walk(sub));
      out.properties = props;
      out.required = Object.keys(props);
      out.additionalProperties = false;
    } else if (node.type === 'object') {
      out.properties = {};
      out.required = [];
      out.additionalProperties = false;
    }
    if (isObject(node.items)) out.items = walk(node.items);
    return out;
  };
  return walk(schema);
}

/** An answer to strictJsonSchema(schema) back in the caller's shape: nulls of optional properties removed. */
export function dropNullOptionals(value: unknown, schema: Json): unknown {
  if (Array.isArray(value)) return isObject(schema.items) ? value.map((v) => dropNullOptionals(v, schema.items as Json)) : value;
  if (!isObject(value) || !isObject(schema.properties)) return value;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : []);
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    const sub = (schema.properties as Json)[k];
    if (v === null && !required.has(k)) continue;
    out[k] = isObject(sub) ? dropNullOptionals(v, sub) : v;
  }
  return out;
}

/** The caller's schema as a Gemini responseSchema. */
export function geminiResponseSchema(schema: Json): Json {
  const walk = (node: unknown): Json => {
    if (!isObject(node)) return {};
    const out: Json = {};
    if (typeof node.type === 'string') out.type = node.type.toUpperCase();
    else if (Array.isArray(node.enum)) out.type = typeof node.enum[0] === 'number' ? 'NUMBER' : typeof node.enum[0] === 'boolean' ? 'BOOLEAN' : 'STRING';
    if (typeof node.description === 'string') out.description = node.description;
    if (Array.isArray(node.enum)) {
      // Gemini enums are string-only: other enum types are left to the caller's validation.
      if (node.enum.every((e) => typeof e === 'string')) out.enum = node.enum;
    }
    if (isObject(node.properties)) {
      out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, walk(v)]));
      out.propertyOrdering = Object.keys(node.properties);
      if (Array.isArray(node.required) && node.required.length) out.required = node.required;
    }
    if (isObject(node.items)) out.items = walk(node.items);
    return out;
  };
  return walk(schema);
}

/** JSON text → value; `undefined` when it is not JSON. Tolerates a Markdown code fence around it. */
export function parseJsonAnswer(text: string): unknown {
  const t = text.trim().replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/i, '$1').trim();
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return undefined;
  }
}
