// Turns zod issues into the error items the spec asks for:
//  - 422 arrays `{type, loc, msg, input, ctx?}` (loc starts at 'body' / 'query' / 'path')
//  - agent create/update `{loc, msg, type}`
//  - POST /call and preview `{path, message, type}` (path dot-joined)
// Type names and messages follow the common pydantic vocabulary the spec lists.
import type { z } from 'zod';

export type Loc = (string | number)[];
export interface ValidationItem {
  type: string;
  path: Loc;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

const typeNames: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  number: ['float_type', 'Input should be a valid number'],
  int: ['int_type', 'Input should be a valid integer'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['dict_type', 'Input should be a valid dictionary or object'],
  record: ['dict_type', 'Input should be a valid dictionary'],
  array: ['list_type', 'Input should be a valid list'],
  null: ['none_required', 'Input should be None'],
};

const fmt = (v: unknown) => (typeof v === 'string' ? `'${v}'` : String(v));
function expectedList(values: readonly unknown[]): string {
  const parts = values.map(fmt);
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} or ${parts[parts.length - 1]}`;
}

function convert(issue: z.core.$ZodIssue, root: unknown, basePath: Loc = []): ValidationItem[] {
  const path: Loc = [...basePath, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
  const input = valueAt(root, path);
  switch (issue.code) {
    case 'invalid_type': {
      if (input === undefined) return [{ type: 'missing', path, msg: 'Field required', input }];
      const expected = issue.expected === 'number' && (issue as { format?: string }).format?.includes('int') ? 'int' : issue.expected;
      const [type, msg] = typeNames[expected] ?? [`${expected}_type`, `Input should be a valid ${expected}`];
      return [{ type, path, msg, input }];
    }
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        type: 'extra_forbidden',
        path: [...path, key],
        msg: 'Extra inputs are not permitted',
        input: valueAt(root, [...path, key]),
      }));
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string')
        return [{ type: 'string_too_short', path, msg: `String should have at least ${min} character${min === 1 ? '' : 's'}`, input, ctx: { min_length: min } }];
      if (issue.origin === 'array' || issue.origin === 'set')
        return [{ type: 'too_short', path, msg: `List should have at least ${min} item${min === 1 ? '' : 's'} after validation, not ${Array.isArray(input) ? input.length : 0}`, input, ctx: { field_type: 'List', min_length: min, actual_length: Array.isArray(input) ? input.length : 0 } }];
      return issue.inclusive
        ? [{ type: 'greater_than_equal', path, msg: `Input should be greater than or equal to ${min}`, input, ctx: { ge: min } }]
        : [{ type: 'greater_than', path, msg: `Input should be greater than ${min}`, input, ctx: { gt: min } }];
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string')
        return [{ type: 'string_too_long', path, msg: `String should have at most ${max} character${max === 1 ? '' : 's'}`, input, ctx: { max_length: max } }];
      if (issue.origin === 'array' || issue.origin === 'set')
        return [{ type: 'too_long', path, msg: `List should have at most ${max} item${max === 1 ? '' : 's'} after validation, not ${Array.isArray(input) ? input.length : 0}`, input, ctx: { field_type: 'List', max_length: max, actual_length: Array.isArray(input) ? input.length : 0 } }];
      return issue.inclusive
        ? [{ type: 'less_than_equal', path, msg: `Input should be less than or equal to ${max}`, input, ctx: { le: max } }]
        : [{ type: 'less_than', path, msg: `Input should be less than ${max}`, input, ctx: { lt: max } }];
    }
    case 'not_multiple_of':
      return [{ type: 'multiple_of', path, msg: `Input should be a multiple of ${issue.divisor}`, input, ctx: { multiple_of: issue.divisor } }];
    case 'invalid_format': {
      if (issue.format === 'regex') {
        const pattern = (issue as { pattern?: string }).pattern ?? '';
        return [{ type: 'string_pattern_mismatch', path, msg: issue.message.startsWith('Invalid') ? `String should match pattern '${pattern}'` : issue.message, input, ctx: { pattern } }];
      }
      if (issue.format === 'uuid' || issue.format === 'guid')
        return [{ type: 'uuid_parsing', path, msg: 'Input should be a valid UUID', input }];
      if (issue.format === 'url')
        return [{ type: 'url_parsing', path, msg: 'Input should be a valid URL', input }];
      if (issue.format === 'datetime' || issue.format === 'date')
        return [{ type: 'datetime_parsing', path, msg: 'Input should be a valid datetime', input }];
      return [{ type: 'value_error', path, msg: issue.message, input }];
    }
    case 'invalid_value':
      return [{ type: 'literal_error', path, msg: `Input should be ${expectedList(issue.values)}`, input, ctx: { expected: expectedList(issue.values) } }];
    case 'invalid_union': {
      // Discriminated unions with a bad discriminator report no sub-errors: treat as a literal error.
      const nested = issue.errors.flat();
      if (nested.length > 0 && issue.errors.length === 1) return nested.flatMap((i) => convert(i, root, path));
      return [{ type: 'union_error', path, msg: issue.message || 'Input does not match any allowed shape', input }];
    }
    case 'invalid_key':
    case 'invalid_element':
      return issue.issues.flatMap((i) => convert(i, root, path));
    case 'custom': {
      const params = (issue.params ?? {}) as { type?: string; ctx?: Record<string, unknown> };
      return [{ type: params.type ?? 'value_error', path, msg: issue.message, input, ...(params.ctx ? { ctx: params.ctx } : {}) }];
    }
    default:
      return [{ type: 'value_error', path, msg: (issue as { message: string }).message, input }];
  }
}

export function zodToItems(error: z.ZodError, input: unknown): ValidationItem[] {
  return error.issues.flatMap((i) => convert(i, input));
}

/** 422 body items: `loc` begins with where the value came from ('body', 'query', 'path'). */
export function to422(items: ValidationItem[], where: 'body' | 'query' | 'path' = 'body') {
  return items.map((i) => ({ type: i.type, loc: [where, ...i.path], msg: i.msg, input: i.input ?? null, ...(i.ctx ? { ctx: i.ctx } : {}) }));
}

/** Agent create/update details: `{loc, msg, type}`. */
export function toAgentConfigDetails(items: ValidationItem[]) {
  return items.map((i) => ({ loc: i.path, msg: i.msg, type: i.type }));
}

/** POST /call and preview details: `{path, message, type}` with a dot-joined path. */
export function toCallDetails(items: ValidationItem[]) {
  return items.map((i) => ({ path: i.path.join('.'), message: i.msg, type: i.type }));
}
