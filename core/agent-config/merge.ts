// PATCH deep-merge (spec "PATCH deep-merge rules" 1-3):
//  1. objects at the same key merge recursively; untouched nested keys are preserved;
//  2. any list, scalar or null replaces the stored value wholesale (lists are never element-merged);
//  3. `contextVariables` (top level) replaces wholesale even though it is an object.
// The JSON Schema of `analysis.structuredData.schema` is a value too: a PATCH that sends one replaces the stored
// schema wholesale (merging two schemas' `properties` could never remove a field).
const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const WHOLESALE_TOP_LEVEL = new Set(['contextVariables']);
const WHOLESALE_PATHS = ['analysis.structuredData.schema'];

function merge(base: unknown, patch: unknown, path: string): unknown {
  if (!isPlainObject(patch) || !isPlainObject(base) || WHOLESALE_PATHS.includes(path)) return patch;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (k === '__proto__') continue;
    out[k] = Object.hasOwn(base, k) ? merge(base[k], v, `${path}.${k}`) : v;
  }
  return out;
}

export function mergePatch(stored: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...stored };
  for (const [k, v] of Object.entries(patch)) {
    if (k === '__proto__') continue;
    out[k] = WHOLESALE_TOP_LEVEL.has(k) || !Object.hasOwn(stored, k) ? v : merge(stored[k], v, k);
  }
  return out;
}
