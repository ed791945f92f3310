// The one pagination helper every list endpoint uses.
import { z } from 'zod';

const intParam = (def: number, min: number, max?: number) => {
  let n = z.coerce.number({ error: 'Input should be a valid integer' }).int().min(min);
  if (max !== undefined) n = n.max(max);
  return z.preprocess((v) => (v === undefined || v === '' ? def : v), n);
};

export function paginationQuery(maxPerPage = 100) {
  return z.object({ page: intParam(1, 1), per_page: intParam(50, 1, maxPerPage) });
}
export type Page = { page: number; per_page: number };

export function pageWindow(p: Page) {
  return { limit: p.per_page, offset: (p.page - 1) * p.per_page };
}

export function envelope<T>(items: readonly T[], total: number, p: Page) {
  return {
    items,
    total,
    page: p.page,
    perPage: p.per_page,
    totalPages: total === 0 ? 0 : Math.ceil(total / p.per_page),
  };
}
