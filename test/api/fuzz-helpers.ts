// Shared by the guard test and the outside fuzz: the documented operations read from the served OpenAPI document,
// request arbitraries derived from their schemas (fast-check), and a fingerprint of every table's rows.
import fc from 'fast-check';
import { z } from 'zod';
import { sql, type Db } from '../../core/db/pool.ts';

type Json = Record<string, any>;

export interface Operation {
  method: string;
  /** The documented path under /api/v1, with {param} placeholders. */
  path: string;
  pathParams: string[];
  query: Array<{ name: string; schema: Json }>;
  contentTypes: string[];
  bodySchema: Json | null;
  /** Served without an API key (`security: []`). */
  public: boolean;
}

export function documentedOperations(doc: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params: Json[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => resolve(doc, p));
      const content: Json = op.requestBody?.content ?? {};
      const json = content['application/json']?.schema ?? content['application/x-www-form-urlencoded']?.schema ?? null;
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: resolve(doc, p.schema ?? {}) })),
        contentTypes: Object.keys(content),
        bodySchema: json ? resolve(doc, json) : null,
        public: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return ops;
}

function resolve(doc: Json, node: Json): Json {
  let cur = node;
  for (let i = 0; i < 10 && cur && typeof cur.$ref === 'string'; i++) {
    cur = (cur.$ref as string).replace(/^#\//, '').split('/').reduce((o: Json, k) => o?.[k], doc);
  }
  return cur ?? {};
}

/** Text that PostgreSQL cannot store, and text that is merely odd (and must be stored or refused cleanly). */
export const unstorableText = fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\ud83d', '\u0000\ud800');
const oddText = fc.oneof(
  fc.constantFrom('', ' ', '\ud83d\ude00', 'é', '\u202e', '\ufeff', '%00', '%ED%A0%80', '../..', "'; DROP TABLE calls; --", '{{x}}', '__proto__', 'null', '-1', '1e309', 'NaN'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constant('x'.repeat(70_000)),
);
export const anyText = fc.oneof({ weight: 6, arbitrary: oddText }, { weight: 1, arbitrary: unstorableText });

const scalar = fc.oneof(
  anyText,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(2 ** 63, -(2 ** 53) - 1, 1e308, 0.1),
);
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(anyText, tie('value'), { maxKeys: 4 }),
})).value;

/** A value for `schema`: usually of the documented shape (so requests get past the first checks), sometimes not. */
export function valueFor(doc: Json, schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  if (depth > 4) return scalar;
  const alts: fc.Arbitrary<unknown>[] = [];
  if (Array.isArray(s.enum)) alts.push(fc.constantFrom(...(s.enum as unknown[])));
  const variants = (s.oneOf ?? s.anyOf) as Json[] | undefined;
  if (variants) alts.push(fc.oneof(...variants.map((v) => valueFor(doc, v, depth + 1))));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'object' || s.properties) {
    const props = Object.entries<Json>(s.properties ?? {});
    const known = fc.record(Object.fromEntries(props.map(([k, v]) => [k, valueFor(doc, v, depth + 1)])), { requiredKeys: [] });
    alts.push(fc.tuple(known, fc.dictionary(anyText, anyJson, { maxKeys: 2 })).map(([a, b]) => (Math.random() < 0.8 ? a : { ...b, ...a })));
  } else if (type === 'array') {
    alts.push(fc.array(valueFor(doc, s.items ?? {}, depth + 1), { maxLength: 3 }));
  } else if (type === 'string') {
    alts.push(fc.oneof(anyText, fc.uuid(), fc.constantFrom('2026-01-01T00:00:00Z', '+14155550100', 'https://example.com/x')));
  } else if (type === 'integer' || type === 'number') {
    alts.push(fc.oneof(fc.integer({ min: -5, max: 200 }), fc.integer(), fc.double()));
  } else if (type === 'boolean') {
    alts.push(fc.boolean());
  }
  if (alts.length === 0) return anyJson;
  return fc.oneof({ weight: 5, arbitrary: fc.oneof(...alts) }, { weight: 1, arbitrary: anyJson });
}

/** Tables whose rows record traffic rather than data: a refused request may count against the rate limit. */
const TRAFFIC_TABLES = new Set(['rate_limit_windows', 'media_nodes', 'schema_migrations']);

/** One md5 per table over all its rows (ordered): equal fingerprints mean no row was added, changed or removed. */
export async function tableFingerprint(db: Db): Promise<Record<string, string>> {
  const tables = await db.anyFirst(sql.type(z.object({ t: z.string() }))`
    SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`);
  const out: Record<string, string> = {};
  for (const t of tables) {
    if (TRAFFIC_TABLES.has(t)) continue;
    out[t] = await db.oneFirst(sql.type(z.object({ h: z.string() }))`
      SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) || ':' || count(*) AS h FROM ${sql.identifier([t])} r`);
  }
  return out;
}
