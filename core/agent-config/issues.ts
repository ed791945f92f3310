// Zod issues → ValidationItems with exact paths. Unions are resolved to the branch the input was aimed at:
// a tool entry that is an object reports its inline-tool errors (not "expected string"); an unknown `type`
// reports a literal error at `...type`.
import { z } from 'zod';
import { zodToItems, type Loc, type ValidationItem } from '../validation.ts';
import { INT_MESSAGE } from './schema.ts';

type Issue = z.core.$ZodIssue;

function isRootTypeMismatch(branch: Issue[]): boolean {
  return branch.length === 1 && branch[0]!.code === 'invalid_type' && branch[0]!.path.length === 0;
}

/** Flatten union issues into plain issues with absolute paths. */
function flatten(issue: Issue, base: PropertyKey[]): Issue[] {
  const path = [...base, ...issue.path];
  if (issue.code === 'invalid_type' && issue.message === INT_MESSAGE)
    return [{ code: 'custom', path, message: INT_MESSAGE, params: { type: 'int_type' }, input: undefined } as unknown as Issue];
  if (issue.code !== 'invalid_union') return [{ ...issue, path } as Issue];
  const u = issue as Issue & { errors: Issue[][]; note?: string; discriminator?: string; options?: unknown[] };
  if (u.errors.length === 0 && u.note === 'No matching discriminator') {
    return [{ code: 'invalid_value', values: (u.options ?? []) as z.core.util.Primitive[], path, message: u.message, input: undefined } as unknown as Issue];
  }
  const candidates = u.errors.filter((b) => !isRootTypeMismatch(b));
  if (candidates.length === 1) return candidates[0]!.flatMap((i) => flatten(i, path));
  if (candidates.length === 0) {
    const expected = [...new Set(u.errors.map((b) => (b[0] as { expected?: string } | undefined)?.expected).filter(Boolean))];
    const isToolEntry = path.length === 2 && path[0] === 'tools';
    const message = isToolEntry ? 'Input should be a saved tool UUID string or an inline tool object' : `Input should be ${expected.join(' or ')}`;
    return [{ code: 'custom', path, message, params: { type: 'union_error' }, input: undefined } as unknown as Issue];
  }
  // Several branches plausible: report the one with the fewest issues.
  const best = [...candidates].sort((a, b) => a.length - b.length)[0]!;
  return best.flatMap((i) => flatten(i, path));
}

export function issuesToItems(error: z.ZodError, input: unknown, basePath: Loc = []): ValidationItem[] {
  const flat = error.issues.flatMap((i) => flatten(i, basePath));
  // An absent enum/literal value (e.g. a missing `provider` or tool `type`) is a missing field, not a bad literal.
  return zodToItems(new z.ZodError(flat), input).map((item) =>
    item.type === 'literal_error' && item.input === undefined ? { type: 'missing', path: item.path, msg: 'Field required', input: undefined } : item,
  );
}

const MAX_DEPTH = 64;

/**
 * Values the database cannot store or that break object semantics are refused up front, with their path:
 * strings with NUL characters or unpaired surrogates (jsonb rejects both), `__proto__` keys, nesting deeper than 64.
 */
export function preCheck(input: unknown, basePath: Loc = []): ValidationItem[] {
  const items: ValidationItem[] = [];
  const stack: Array<{ value: unknown; path: Loc; depth: number }> = [{ value: input, path: basePath, depth: 0 }];
  const badString = (s: string) => s.includes('\u0000') || !s.isWellFormed();
  while (stack.length > 0 && items.length < 50) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (badString(value)) items.push({ type: 'string_unicode', path, msg: 'Input should be a valid string without NUL characters or unpaired surrogates', input: value });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH) {
      items.push({ type: 'value_error', path, msg: `Nesting deeper than ${MAX_DEPTH} levels is not allowed`, input: null });
      continue;
    }
    if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push({ value: v, path: [...path, i], depth: depth + 1 }));
      continue;
    }
    for (const [k, v] of Object.entries(value)) {
      if (k === '__proto__' || badString(k)) {
        items.push({ type: 'value_error', path: [...path, k], msg: 'Invalid key', input: null });
        continue;
      }
      stack.push({ value: v, path: [...path, k], depth: depth + 1 });
    }
  }
  return items;
}
