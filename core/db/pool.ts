// One slonik pool per process. Rows are validated by the zod schema given to sql.type(...)
// through a result-parser interceptor (slonik validates nothing without one).
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  createPool,
  createTypeParserPreset,
  SchemaValidationError,
  sql,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';

export { sql };
export type Db = DatabasePool;

const resultParser: Interceptor = {
  name: 'result-parser',
  transformRowAsync: async (ctx, query, row) => {
    const parser = ctx.resultParser;
    if (!parser) return row;
    const result = await parser['~standard'].validate(row);
    if (result.issues) {
      throw new SchemaValidationError(query, row, result.issues);
    }
    return result.value as QueryResultRow;
  },
};

/** timestamptz / timestamp → ISO 8601 string; int8 → number; numeric → number. */
const typeParsers = [
  ...createTypeParserPreset().filter((p) => !['timestamptz', 'timestamp', 'int8', 'numeric', 'date'].includes(p.name)),
  { name: 'timestamptz', parse: (v: string) => new Date(v).toISOString() },
  { name: 'timestamp', parse: (v: string) => new Date(`${v}Z`).toISOString() },
  { name: 'date', parse: (v: string) => v },
  { name: 'int8', parse: (v: string) => Number.parseInt(v, 10) },
  { name: 'numeric', parse: (v: string) => Number.parseFloat(v) },
];

export async function createDb(url: string, opts: { maximumPoolSize?: number; connectionTimeout?: number } = {}): Promise<Db> {
  return createPool(url, {
    interceptors: [resultParser],
    typeParsers,
    maximumPoolSize: opts.maximumPoolSize ?? 10,
    statementTimeout: 30_000,
    idleTimeout: 10_000,
    connectionTimeout: opts.connectionTimeout ?? 10_000,
  });
}

/** Error codes of a database that is away (restarting, crash recovery, shut down, connection lost or refused). */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

/**
 * True when `err` (or its cause) says the database could not be reached or dropped the connection — a transient
 * condition worth a retry (answered 503 by the api), not a bug in the request.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e && depth < 5; depth++) {
    if (e instanceof ConnectionError || e instanceof BackendTerminatedError || e instanceof BackendTerminatedUnexpectedlyError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    // pg's own error for a socket closed under it, outside a slonik query (slonik wraps that one): no code
    if (e instanceof Error && /^Connection terminated( unexpectedly)?$/.test(e.message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
