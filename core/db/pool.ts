// One slonik pool per process. Rows are validated by the zod schema given to sql.type(...)
// through a result-parser interceptor (slonik validates nothing without one).
import {
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
