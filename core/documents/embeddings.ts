// Optional vector embeddings through any OpenAI-compatible `POST {EMBEDDING_BASE_URL}/embeddings` endpoint.
// Vectors are stored L2-normalised in document_chunks.embedding (real[]), so cosine similarity is a plain dot
// product. pgvector is not required: the dot product runs in SQL (vas_dot, migration 0050) over the chunks of
// the documents a query tool lists (a pgvector index would be the upgrade path).
import type { Config } from '../config.ts';

export interface EmbeddingConfig {
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Per request; default 30 s (ingestion) — retrieval passes its own remaining budget. */
  timeoutMs?: number;
}

export function embeddingConfigFrom(config: Pick<Config, 'EMBEDDING_BASE_URL' | 'EMBEDDING_API_KEY' | 'EMBEDDING_MODEL'>): EmbeddingConfig | null {
  if (!config.EMBEDDING_BASE_URL) return null;
  return { baseUrl: config.EMBEDDING_BASE_URL.replace(/\/+$/, ''), apiKey: config.EMBEDDING_API_KEY, model: config.EMBEDDING_MODEL };
}

export class EmbeddingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

/** Inputs are cut to this many characters (well below the usual 8k-token input limit). */
export const EMBED_MAX_INPUT_CHARS = 8000;

export function normalize(v: number[]): number[] {
  let sum = 0;
  for (const x of v) sum += x * x;
  const n = Math.sqrt(sum);
  return n > 0 ? v.map((x) => x / n) : v;
}

export async function embed(cfg: EmbeddingConfig, inputs: string[], signal?: AbortSignal): Promise<number[][]> {
  if (inputs.length === 0) return [];
  const timeout = AbortSignal.timeout(cfg.timeoutMs ?? 30_000);
  const res = await fetch(`${cfg.baseUrl}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
    body: JSON.stringify({ model: cfg.model, input: inputs.map((s) => s.slice(0, EMBED_MAX_INPUT_CHARS)) }),
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  }).catch((err: Error) => {
    throw new EmbeddingError(`Embedding request failed: ${err.message}`);
  });
  const text = await res.text();
  if (!res.ok) throw new EmbeddingError(`Embedding provider answered ${res.status}: ${text.slice(0, 300)}`);
  let body: { data?: { embedding?: unknown; index?: number }[] };
  try {
    body = JSON.parse(text);
  } catch {
    throw new EmbeddingError('Embedding provider returned invalid JSON');
  }
  const data = body.data;
  if (!Array.isArray(data) || data.length !== inputs.length) throw new EmbeddingError('Embedding provider returned a wrong number of vectors');
  const out: number[][] = new Array(inputs.length);
  data.forEach((d, i) => {
    const vec = d.embedding;
    if (!Array.isArray(vec) || vec.length === 0 || !vec.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new EmbeddingError('Embedding provider returned a malformed vector');
    }
    out[typeof d.index === 'number' ? d.index : i] = normalize(vec as number[]);
  });
  if (out.some((v) => !v)) throw new EmbeddingError('Embedding provider returned a wrong set of indexes');
  return out;
}

/** Postgres array literal for real[] (passed as text and cast, since unnest flattens 2-D arrays). */
export const vectorLiteral = (v: number[]) => `{${v.map((x) => (Math.fround(x)).toString()).join(',')}}`;
