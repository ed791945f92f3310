// Parse request parts with zod; failures become the spec's 422 array (all failures together).
import type { z } from 'zod';
import { HttpError } from '../core/http-error.ts';
import { to422, zodToItems } from '../core/validation.ts';

export function parseOr422<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' | 'path' = 'body'): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new HttpError(422, to422(zodToItems(result.error, value), where));
  return result.data;
}
