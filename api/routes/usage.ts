// Usage summary, mounted twice with the same body: GET /wallet/dashboard/usage-summary and
// GET /organizations/reports/usage-summary. `from` / `to` (ISO 8601 date or date-time; a date means 00:00 UTC)
// bound the half-open window [from, to) of call creation time. Defaults: to = now, from = to - 30 days.
// `exclude_tag` (comma-separated, repeatable) leaves out calls with any of those tags, e.g. `agent_test`.
// Field definitions: core/calls/usage.ts.
import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { usageSummary } from '../../core/calls/usage.ts';
import { HttpError } from '../../core/http-error.ts';
import { parseIsoInstant } from '../../core/iso-date.ts';
import { to422, type ValidationItem } from '../../core/validation.ts';
import type { ApiDeps } from '../deps.ts';
import { requireOrg } from '../middleware/auth.ts';

const DAY_MS = 86_400_000;
function parseInstant(items: ValidationItem[], name: string, v: unknown): Date | undefined {
  if (v === undefined || v === '') return undefined;
  const r = parseIsoInstant(String(Array.isArray(v) ? v[v.length - 1] : v));
  if (!r.ok) {
    items.push({ type: 'datetime_from_date_parsing', path: [name], msg: r.message, input: v });
    return undefined;
  }
  return r.value.date;
}

export function usageRoutes(router: Router, { db }: ApiDeps): void {
  const handler = async (ctx: ParameterizedContext) => {
    const orgId = requireOrg(ctx);
    const items: ValidationItem[] = [];
    const q = ctx.query as Record<string, unknown>;
    const from = parseInstant(items, 'from', q.from);
    const to = parseInstant(items, 'to', q.to);
    const excludeTags = (Array.isArray(q.exclude_tag) ? q.exclude_tag : q.exclude_tag === undefined ? [] : [q.exclude_tag])
      .flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean);
    if (excludeTags.length > 20 || excludeTags.some((v) => v.length > 100)) {
      items.push({ type: 'value_error', path: ['exclude_tag'], msg: 'At most 20 tags of at most 100 characters', input: q.exclude_tag });
    }
    if (items.length) throw new HttpError(422, to422(items, 'query'));
    const end = to ?? new Date();
    const start = from ?? new Date(end.getTime() - 30 * DAY_MS);
    if (start.getTime() >= end.getTime()) {
      throw new HttpError(422, to422([{ type: 'value_error', path: ['from'], msg: "'from' must be earlier than 'to'", input: q.from ?? null }], 'query'));
    }
    ctx.body = await usageSummary(db, orgId, start, end, { excludeTags });
  };
  router.get('/wallet/dashboard/usage-summary', handler);
  router.get('/organizations/reports/usage-summary', handler);
}
