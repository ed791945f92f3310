// Building blocks of the OpenAPI path modules beside this one: JSON Schema fragments, the `{detail}` error body, the
// pagination parameters and envelope every list endpoint shares.
export const str = { type: 'string' };
export const int = { type: 'integer' };
export const num = { type: 'number' };
export const bool = { type: 'boolean' };
export const ts = { type: 'string', format: 'date-time' };
export const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
export const json = (schema: unknown) => ({ 'application/json': { schema } });
export const ok = (schema: unknown, description = 'OK') => ({ description, content: json(schema) });
export const errorBody = { type: 'object', properties: { detail: {} }, required: ['detail'] };
export const err = (description: string) => ({ description, content: json(errorBody) });
export const body = (schema: unknown) => ({ required: true, content: json(schema) });
/** `page` and `per_page` query parameters (the pagination envelope's) */
export const page = [
  { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
  { name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
];
/** The pagination envelope of a list of `item` */
export const pageOf = (item: unknown) => ({
  type: 'object',
  properties: { items: { type: 'array', items: item }, total: int, page: int, perPage: int, totalPages: int },
  required: ['items', 'total', 'page', 'perPage', 'totalPages'],
});
