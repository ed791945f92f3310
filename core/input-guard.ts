// Text PostgreSQL cannot store: U+0000 (text and jsonb refuse it) and unpaired UTF-16 surrogates (not UTF-8 at
// all). One check and one answer for every entry point: the API's guard middleware (api/middleware/guard.ts) and the
// media process's own HTTP endpoints (WebRTC signaling) use these, so the answer is the same 422 everywhere.
import { preCheck } from './agent-config/issues.ts';
import type { Loc, ValidationItem } from './validation.ts';

export const UNSTORABLE_TYPE = 'string_unicode';
export const UNSTORABLE_MSG = 'Input should be a valid string without NUL characters or unpaired surrogates';

export const isStorable = (s: string): boolean => !s.includes('\u0000') && s.isWellFormed();

export type Where = 'body' | 'query' | 'path';
export interface Finding extends ValidationItem {
  where: Where;
}

/** Findings for a flat record of strings (query strings, path parameters, form or multipart fields), keys too. */
export function flatFindings(where: Where, record: Record<string, string | readonly string[] | undefined>): Finding[] {
  const out: Finding[] = [];
  for (const [key, raw] of Object.entries(record)) {
    if (!isStorable(key)) {
      out.push({ where, type: 'value_error', path: [key], msg: 'Invalid key', input: null });
      continue;
    }
    const values: readonly string[] = typeof raw === 'string' ? [raw] : (raw ?? []);
    const bad = values.find((v) => !isStorable(v));
    if (bad !== undefined) out.push({ where, type: UNSTORABLE_TYPE, path: [key] as Loc, msg: UNSTORABLE_MSG, input: bad });
  }
  return out;
}

/** Findings for a parsed JSON body: unstorable strings and keys, `__proto__` keys, nesting deeper than 64. */
export function bodyFindings(body: unknown): Finding[] {
  return body === undefined ? [] : preCheck(body).map((i) => ({ ...i, where: 'body' as const }));
}

/** The spec's 422 array for findings. */
export function unstorable422(findings: Finding[]) {
  return findings.map((f) => ({ type: f.type, loc: [f.where, ...f.path], msg: f.msg, input: f.input ?? null }));
}

/** decodeURIComponent that never throws (a malformed escape stays as written, as the routers do). */
export function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
