// Post-call analysis (AgentConfig `analysis`): the config block, the check of the structured-data JSON Schema at
// save, the verdict schemas of the two success rubrics, the validation of every answer, and the prompt.
//
// Schemas are checked with ajv (JSON Schema draft 2020-12) against a meta-schema of the subset every provider can
// constrain its output to: an object schema; `type` one of string, number, integer, boolean, array, object;
// `enum` (strings, numbers, booleans); `description`; `properties`, `required`, `items`,
// `additionalProperties: false`. At most 50 properties in all, at most 3 nested levels of objects and arrays
// (the root object is the first), property names of letters, digits, `_` and `-`. The schema is then compiled by
// ajv in strict mode, which is also what validates each answer before it is stored.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { LLM_PROVIDERS } from '../catalog.ts';
import { transcriptAsText, type TranscriptEntry } from '../summary.ts';

export const MAX_SCHEMA_PROPERTIES = 50;
export const MAX_SCHEMA_DEPTH = 3;
export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
export const PROPERTY_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SCALAR_TYPES = ['string', 'number', 'integer', 'boolean'];

type Json = Record<string, unknown>;
type Path = (string | number)[];
export interface SchemaProblem {
  path: Path;
  message: string;
}

/** Meta-schema of the subset: one definition per nesting level, so the depth limit is a plain enum of types. */
function metaSchema(): Json {
  const defs: Json = {};
  for (let level = 1; level <= MAX_SCHEMA_DEPTH + 1; level++) {
    const container = level <= MAX_SCHEMA_DEPTH;
    const next = { $ref: `#/$defs/level${level + 1}` };
    defs[`level${level}`] = {
      type: 'object',
      properties: {
        type: { enum: container ? [...SCALAR_TYPES, 'array', 'object'] : SCALAR_TYPES },
        description: { type: 'string', maxLength: 1000 },
        enum: { type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: { type: ['string', 'number', 'boolean'] } },
        ...(container
          ? {
              properties: { type: 'object', propertyNames: { pattern: PROPERTY_NAME.source }, additionalProperties: next },
              required: { type: 'array', uniqueItems: true, items: { type: 'string' } },
              additionalProperties: { const: false },
              items: next,
            }
          : {}),
      },
      additionalProperties: false,
      anyOf: [{ required: ['type'] }, { required: ['enum'] }],
      allOf: [
        {
          if: { required: ['type'], properties: { type: { const: 'object' } } },
          then: { required: ['properties'] },
          else: { properties: { properties: false, required: false, additionalProperties: false } },
        },
        { if: { required: ['type'], properties: { type: { const: 'array' } } }, then: { required: ['items'] }, else: { properties: { items: false } } },
      ],
    };
  }
  return {
    $schema: SCHEMA_DIALECT,
    $defs: defs,
    allOf: [{ $ref: '#/$defs/level1' }, { type: 'object', required: ['type'], properties: { type: { const: 'object' } } }],
  };
}

/** Compiles the agents' schemas and validates answers: strict, so a schema ajv finds dubious is refused. */
const ajv = new Ajv2020({ allErrors: true, strict: true });
// The meta-schema uses `required` inside anyOf/if branches, which ajv's strict mode flags as a likely mistake.
const checkSubset = new Ajv2020({ allErrors: true, strict: false }).compile(metaSchema());

const pointer = (p: string): Path => (p ? p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')) : []);
const DEPTH_MESSAGE = `Objects and arrays may be nested at most ${MAX_SCHEMA_DEPTH} levels deep (the root object is the first)`;
const allowedKeywords = 'type, enum, description, properties, required, items and additionalProperties (false)';

function describe(e: ErrorObject, schema: unknown): SchemaProblem | null {
  const path = pointer(e.instancePath);
  const key = path[path.length - 1];
  switch (e.keyword) {
    case 'if':
    case 'allOf':
      return null;
    case 'required':
      if (e.schemaPath.includes('/anyOf/')) return null;
      if (e.params.missingProperty === 'properties') return { path, message: "An object schema needs 'properties'" };
      if (e.params.missingProperty === 'items') return { path, message: "An array schema needs 'items'" };
      return { path: [...path, e.params.missingProperty as string], message: 'Field required' };
    case 'anyOf':
      return { path, message: "Each schema needs a 'type' or an 'enum'" };
    case 'additionalProperties':
      if (['properties', 'items', 'required', 'additionalProperties'].includes(e.params.additionalProperty as string))
        return { path: [...path, e.params.additionalProperty as string], message: DEPTH_MESSAGE };
      return { path: [...path, e.params.additionalProperty as string], message: `Keyword '${String(e.params.additionalProperty)}' is not allowed here; allowed: ${allowedKeywords}` };
    case 'false schema':
      return { path, message: key === 'items' ? "'items' is only allowed when type is 'array'" : `'${String(key)}' is only allowed when type is 'object'` };
    case 'propertyNames':
      return null;
    case 'pattern':
      return { path: e.propertyName !== undefined ? [...path, e.propertyName] : path, message: 'Property names must be 1-64 letters, digits, _ or -' };
    case 'enum':
      if (key === 'type') {
        const value = valueAt(schema, path);
        if (value === 'object' || value === 'array') return { path, message: DEPTH_MESSAGE };
        return { path, message: `type must be one of: ${[...SCALAR_TYPES, 'array', 'object'].join(', ')}` };
      }
      return { path, message: e.message ?? 'invalid value' };
    case 'const':
      if (key === 'type') return { path, message: "The schema must be of type 'object'" };
      if (key === 'additionalProperties') return { path, message: 'additionalProperties may only be false' };
      return { path, message: e.message ?? 'invalid value' };
    default:
      return { path, message: e.message ? `${e.message.charAt(0).toUpperCase()}${e.message.slice(1)}` : 'invalid' };
  }
}

function valueAt(root: unknown, path: Path): unknown {
  let cur = root;
  for (const k of path) cur = cur !== null && typeof cur === 'object' ? (cur as Json)[k as string] : undefined;
  return cur;
}

/** What is wrong with a structured-data schema (empty when it is usable), each with its path inside the schema. */
export function structuredSchemaProblems(schema: unknown): SchemaProblem[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [{ path: [], message: 'The schema must be a JSON Schema object' }];
  const { $schema, ...rest } = schema as Json;
  if ($schema !== undefined && $schema !== SCHEMA_DIALECT) return [{ path: ['$schema'], message: `Only JSON Schema draft 2020-12 ('${SCHEMA_DIALECT}') is supported` }];
  if (!checkSubset(rest)) {
    const seen = new Set<string>();
    const out: SchemaProblem[] = [];
    for (const e of checkSubset.errors ?? []) {
      const p = describe(e, rest);
      const id = p && `${p.path.join('/')}|${p.message}`;
      if (p && !seen.has(id!)) {
        seen.add(id!);
        out.push(p);
      }
    }
    return out.length ? out : [{ path: [], message: 'The schema is not a supported JSON Schema' }];
  }
  const out: SchemaProblem[] = [];
  let count = 0;
  const walk = (node: Json, path: Path) => {
    if (Array.isArray(node.enum) && typeof node.type === 'string') {
      const ofType = ajv.compile({ type: node.type });
      node.enum.forEach((v, i) => {
        if (!ofType(v)) out.push({ path: [...path, 'enum', i], message: `Enum value ${JSON.stringify(v)} is not of type '${String(node.type)}'` });
      });
    }
    if (node.properties && typeof node.properties === 'object') {
      const props = node.properties as Json;
      count += Object.keys(props).length;
      ((node.required as string[] | undefined) ?? []).forEach((name, i) => {
        if (!Object.hasOwn(props, name)) out.push({ path: [...path, 'required', i], message: `Required property '${name}' is not defined in properties` });
      });
      for (const [k, v] of Object.entries(props)) walk(v as Json, [...path, 'properties', k]);
    }
    if (node.items && typeof node.items === 'object') walk(node.items as Json, [...path, 'items']);
  };
  walk(rest, []);
  if (count > MAX_SCHEMA_PROPERTIES) out.push({ path: [], message: `At most ${MAX_SCHEMA_PROPERTIES} properties are allowed in all, got ${count}` });
  if (out.length) return out;
  try {
    ajv.compile(rest);
  } catch (err) {
    return [{ path: [], message: `The schema does not compile: ${(err as Error).message}` }];
  }
  return [];
}

// ---------------------------------------------------------------- the config block
const prompt = z.string().max(5000).nullable().default(null);

export const structuredDataSchema = z.strictObject({
  schema: z.record(z.string(), z.unknown()).superRefine((s, ctx) => {
    for (const p of structuredSchemaProblems(s)) ctx.addIssue({ code: 'custom', path: p.path, message: p.message, params: { type: 'value_error' } });
  }),
  prompt,
});

export const SUCCESS_RUBRICS = ['pass_fail', 'score_1_10'] as const;
export type SuccessRubric = (typeof SUCCESS_RUBRICS)[number];

export const analysisSchema = z.strictObject({
  /** Fields to extract from the call, by the agent's own JSON Schema. */
  structuredData: structuredDataSchema.nullable().default(null),
  /** A verdict on whether the call achieved its goal. */
  successEvaluation: z.strictObject({ rubric: z.enum(SUCCESS_RUBRICS), prompt }).nullable().default(null),
  /** null: the agent's own llm provider and model; model null: the provider's default model. */
  llm: z.strictObject({ provider: z.enum(LLM_PROVIDERS), model: z.string().min(1).max(200).nullable().default(null) }).nullable().default(null),
});
export type AnalysisConfig = z.output<typeof analysisSchema>;

/** The analysis block of a (snapshot) config when it asks for anything; null otherwise. */
export function analysisOf(config: unknown): AnalysisConfig | null {
  const a = (config as { analysis?: unknown } | null)?.analysis;
  const parsed = analysisSchema.safeParse(a);
  if (!parsed.success || (!parsed.data.structuredData && !parsed.data.successEvaluation)) return null;
  return parsed.data;
}

// ---------------------------------------------------------------- verdicts and answers
export const VERDICT_SCHEMAS: Record<SuccessRubric, Json> = {
  pass_fail: {
    type: 'object',
    // reason first: a model that writes its reason before the verdict judges better (and the grammar keeps the order)
    properties: {
      reason: { type: 'string', description: 'one sentence: what happened against the goal' },
      passed: { type: 'boolean', description: 'true when the call achieved its goal' },
    },
    required: ['passed', 'reason'],
    additionalProperties: false,
  },
  score_1_10: {
    type: 'object',
    properties: {
      reason: { type: 'string', description: 'one sentence: what happened against the goal' },
      score: { type: 'integer', minimum: 1, maximum: 10, description: '1 = failed completely, 10 = fully achieved' },
    },
    required: ['score', 'reason'],
    additionalProperties: false,
  },
};

/** A score of at least this counts as a success (`success=true` on GET /calls) under `score_1_10`. */
export const PASSING_SCORE = 6;

/** The verdict as the success filter sees it: passed, or score ≥ PASSING_SCORE; null without a verdict. */
export function successOf(verdict: unknown): boolean | null {
  if (!verdict || typeof verdict !== 'object') return null;
  const v = verdict as { passed?: unknown; score?: unknown };
  if (typeof v.passed === 'boolean') return v.passed;
  if (typeof v.score === 'number') return v.score >= PASSING_SCORE;
  return null;
}

/** The one schema the LLM answers: the structured data and the verdict side by side. */
export function answerSchema(a: AnalysisConfig): Json {
  const properties: Json = {};
  if (a.structuredData) {
    const { $schema: _dialect, ...schema } = a.structuredData.schema;
    properties.structuredData = schema;
  }
  if (a.successEvaluation) properties.successEvaluation = VERDICT_SCHEMAS[a.successEvaluation.rubric];
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

const compiled = new Map<string, ValidateFunction>();
function validatorFor(schema: Json): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(schema);
    if (compiled.size >= 200) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, v);
  }
  return v;
}

export type AnswerCheck =
  | { ok: true; structuredData: unknown; successEvaluation: unknown }
  | { ok: false; error: string };

/** Validates an answer against the agent's schema and the rubric's; the error names each failing path. */
export function checkAnswer(a: AnalysisConfig, value: unknown): AnswerCheck {
  if (value === undefined) return { ok: false, error: 'the answer is not JSON' };
  const schema = answerSchema(a);
  const validate = validatorFor(schema);
  if (validate(value)) {
    const v = value as { structuredData?: unknown; successEvaluation?: unknown };
    return { ok: true, structuredData: a.structuredData ? v.structuredData : null, successEvaluation: a.successEvaluation ? v.successEvaluation : null };
  }
  const errors = (validate.errors ?? []).slice(0, 10).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}${e.keyword === 'enum' ? ` (${(e.params.allowedValues as unknown[]).map((x) => JSON.stringify(x)).join(', ')})` : ''}`);
  return { ok: false, error: `the answer does not match the schema: ${errors.join('; ')}` };
}

// ---------------------------------------------------------------- the prompt
export const ANALYSIS_SYSTEM_PROMPT =
  'You analyse a phone call between an AI voice agent and a caller. Read the transcript and answer in the requested JSON shape, ' +
  'using only what the call says.';

export function analysisMessages(
  a: AnalysisConfig,
  call: { transcript: readonly TranscriptEntry[]; durationSeconds: number | null; endedReason: string | null; agentPrompt: string },
  limits: { transcriptChars: number; agentPromptChars: number },
): { system: string; user: string } {
  const parts = [ANALYSIS_SYSTEM_PROMPT];
  if (a.structuredData) {
    parts.push(
      '`structuredData`: extract the fields of its schema from the call. Leave out (or null) a field the call does not tell; do not guess.' +
        (a.structuredData.prompt ? `\nInstructions: ${a.structuredData.prompt}` : ''),
    );
  }
  if (a.successEvaluation) {
    const scale = a.successEvaluation.rubric === 'pass_fail'
      ? '`passed` true when the agent achieved the goal of the call, false otherwise'
      : '`score` from 1 (the goal was not achieved at all) to 10 (fully achieved)';
    const criteria = a.successEvaluation.prompt ?? "the goal of the call, as the agent's instructions below describe it";
    parts.push(`\`successEvaluation\`: judge the call by ${criteria}. Give ${scale}, and a one-sentence \`reason\`.`);
  }
  if (call.agentPrompt.trim()) {
    const p = call.agentPrompt.length > limits.agentPromptChars ? `${call.agentPrompt.slice(0, limits.agentPromptChars)} [...]` : call.agentPrompt;
    parts.push(`The agent's instructions were:\n"""\n${p}\n"""`);
  }
  const user =
    `Call length: ${Math.round(call.durationSeconds ?? 0)} seconds. Ended because: ${call.endedReason ?? 'unknown'}.\n` +
    `Transcript:\n${transcriptAsText(call.transcript, limits.transcriptChars)}`;
  return { system: parts.join('\n\n'), user };
}

/** Asked after an answer that did not validate (the one retry). */
export function retryMessage(error: string): string {
  return `Your previous answer was not accepted: ${error}. Answer again, exactly in the requested shape.`;
}
