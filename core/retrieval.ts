// Knowledge-base retrieval for the `query` tool: search only the listed, processed documents of one organization
// and return the best passages within a token budget, inside the tool's timeout.
//
// Ranking: PostgreSQL full-text search with each document's own text-search configuration (language detected
// at ingestion), the query's lexemes OR-ed (an LLM's natural-language question rarely has every word in one
// passage), candidates picked by ts_rank and ordered by ts_rank_cd (cover density, length-normalised). When an embedding provider is
// configured (pass `embedding`), chunks are also ranked by cosine similarity (dot product of normalised
// vectors, computed in SQL) and both rankings are fused with reciprocal-rank fusion.
import { z } from 'zod';
import { sql, type Db } from './db/pool.ts';
import { estimateTokens } from './documents/chunking.ts';
import { embed, vectorLiteral, type EmbeddingConfig } from './documents/embeddings.ts';
import { UUID_RE } from './documents/records.ts';

export { embeddingConfigFrom, type EmbeddingConfig } from './documents/embeddings.ts';

export interface Passage {
  documentId: string;
  content: string;
  score: number;
}

export type SearchKnowledgeResult =
  /** `pending`: listed documents still being processed (present only when some are). */
  | { status: 'ok'; passages: Passage[]; pending?: string[] }
  | { status: 'not_ready'; pending: string[] }
  | { status: 'error'; message: string };

export interface SearchKnowledgeOptions {
  orgId: string;
  documentIds: string[];
  query: string;
  /** Budget for all passages together; default 800. */
  maxTokens?: number;
  timeoutMs: number;
  /** Maximum passages; default 5. */
  limit?: number;
  /** Enables hybrid ranking (embeddingConfigFrom(config)); null/absent = full-text only. */
  embedding?: EmbeddingConfig | null;
}

const RRF_K = 60;
/** Above this many chunks in the listed documents, very common lexemes stop acting as filters (see below). */
const LARGE_CORPUS_CHUNKS = 2000;
/** A lexeme in more than this fraction of all chunks (planner statistics) is "common". */
const COMMON_LEXEME_FREQ = 0.01;
/** Upper bound of rows ranked for one query (only reached by very unselective queries on large corpora). */
const MAX_RANKED = 1000;

function tsqueryOr(lexemes: readonly string[]): string | null {
  const uniq = [...new Set(lexemes)].filter((l) => l.length > 0).slice(0, 64);
  if (!uniq.length) return null;
  return uniq.map((l) => `'${l.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`).join(' | ');
}

const summaryRow = z.object({
  ready: z.array(z.string()),
  pending: z.array(z.string()),
  chunks: z.number(),
  lexemes: z.array(z.object({ cfg: z.string(), lexemes: z.array(z.string()) })),
});
const hitRow = z.object({ document_id: z.string(), chunk_index: z.number(), content: z.string(), score: z.number() });
type Hit = z.infer<typeof hitRow>;

// Lexeme frequencies from the planner's statistics of document_chunks.tsv (ANALYZE / autovacuum keeps them),
// refreshed every 5 minutes per pool. They act as corpus-level IDF: over many chunks, a query's common words
// ("price", "service") would match most rows, so only its rarer words select candidates while every word
// still counts in the ranking.
const commonCache = new WeakMap<Db, { at: number; freq: Map<string, number> }>();
async function lexemeFrequencies(db: Db): Promise<Map<string, number>> {
  const hit = commonCache.get(db);
  if (hit && Date.now() - hit.at < 300_000) return hit.freq;
  const row = await db.maybeOne(sql.type(z.object({ elems: z.array(z.string()).nullable(), freqs: z.array(z.number()).nullable() }))`
    SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs::float8[] AS freqs
    FROM pg_stats WHERE tablename = 'document_chunks' AND attname = 'tsv' AND schemaname = current_schema()`);
  const freq = new Map<string, number>();
  row?.elems?.forEach((e, i) => freq.set(e, row.freqs?.[i] ?? 0));
  commonCache.set(db, { at: Date.now(), freq });
  return freq;
}

function pickPassages(hits: Hit[], maxTokens: number, limit: number): Passage[] {
  const out: Passage[] = [];
  let used = 0;
  for (const h of hits) {
    if (out.length >= limit) break;
    const tokens = estimateTokens(h.content);
    if (used + tokens <= maxTokens) {
      out.push({ documentId: h.document_id, content: h.content, score: h.score });
      used += tokens;
    } else if (out.length === 0) {
      // The best passage alone is over budget: keep its beginning rather than answering nothing.
      out.push({ documentId: h.document_id, content: h.content.slice(0, maxTokens * 4), score: h.score });
      break;
    }
  }
  return out;
}

async function search(db: Db, opts: SearchKnowledgeOptions, deadline: number): Promise<SearchKnowledgeResult> {
  const ids = [...new Set(opts.documentIds.filter((id) => UUID_RE.test(id)).map((id) => id.toLowerCase()))];
  if (!ids.length) return { status: 'error', message: 'No knowledge-base documents are configured for this tool' };
  const query = opts.query.trim().slice(0, 2000);
  if (!query) return { status: 'error', message: 'The search query is empty' };
  const limit = Math.max(1, Math.min(opts.limit ?? 5, 50));
  const maxTokens = Math.max(1, opts.maxTokens ?? 800);

  // One round trip, one row: ready and pending ids, the ready chunk count, and the query's lexemes once per
  // text-search configuration among the ready documents.
  const summary = await db.one(sql.type(summaryRow)`
    WITH d AS (
      SELECT id, status, ts_config, total_chunks FROM documents
      WHERE organization_id = ${opts.orgId} AND id = ANY(${sql.array(ids, 'uuid')}) AND deleted_at IS NULL
    ), agg AS (
      SELECT coalesce(array_agg(id::text) FILTER (WHERE status = 'completed'), '{}') AS ready,
             coalesce(array_agg(id::text) FILTER (WHERE status IN ('pending', 'processing')), '{}') AS pending,
             coalesce(sum(total_chunks) FILTER (WHERE status = 'completed'), 0)::int AS chunks,
             coalesce(array_agg(DISTINCT ts_config::text) FILTER (WHERE status = 'completed'), '{}') AS configs
      FROM d
    )
    SELECT ready, pending, chunks,
           coalesce((SELECT json_agg(json_build_object('cfg', c, 'lexemes', tsvector_to_array(to_tsvector(c::regconfig, ${query}))))
                     FROM unnest(agg.configs) AS c), '[]'::json) AS lexemes
    FROM agg`);
  const { ready: readyIds, pending } = summary;
  if (!readyIds.length) {
    if (pending.length) return { status: 'not_ready', pending };
    return { status: 'error', message: 'None of the referenced documents are available (missing, deleted or failed to process)' };
  }
  const freq = summary.chunks > LARGE_CORPUS_CHUNKS ? await lexemeFrequencies(db) : null;
  const parts = summary.lexemes.flatMap((l) => {
    const rank = tsqueryOr(l.lexemes);
    if (!rank) return [];
    const rare = freq ? l.lexemes.filter((x) => (freq.get(x) ?? 0) < COMMON_LEXEME_FREQ) : l.lexemes;
    return [{ cfg: l.cfg, rank, rare: tsqueryOr(rare.length ? rare : l.lexemes)! }];
  });
  const pruned = parts.some((p) => p.rare !== p.rank);

  // The query embedding is fetched outside the transaction; a provider failure falls back to full-text only.
  let queryVector: number[] | null = null;
  if (opts.embedding) {
    const remaining = deadline - Date.now();
    if (remaining > 50) {
      queryVector = await embed({ ...opts.embedding, timeoutMs: remaining - 25 }, [query]).then((v) => v[0] ?? null, () => null);
    }
  }

  const candidates = Math.max(limit * 4, 20);
  const { fts, vec } = await db.transaction(async (tx) => {
    const ms = Math.max(1, Math.floor(deadline - Date.now()));
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', ${String(ms)}, true)`);
    // Two-step ranking: ts_rank (term frequency; much cheaper) picks the candidates among at most MAX_RANKED
    // matches, ts_rank_cd (cover density: query words close together) orders those candidates.
    const byConfig = (fn: 'ts_rank' | 'ts_rank_cd') => {
      const f = sql.identifier([fn]);
      return parts.length === 1
        ? sql.fragment`${f}(tsv, ${parts[0]!.rank}::tsquery, 1)`
        : sql.fragment`CASE ${sql.join(parts.map((p) => sql.fragment`WHEN ts_config = ${p.cfg}::regconfig THEN ${f}(tsv, ${p.rank}::tsquery, 1)`), sql.fragment` `)} ELSE 0 END`;
    };
    const runFts = (which: 'rare' | 'rank') => {
      const cond = sql.join(parts.map((p) => sql.fragment`(ts_config = ${p.cfg}::regconfig AND tsv @@ ${p[which]}::tsquery)`), sql.fragment` OR `);
      return tx.any(sql.type(hitRow)`
        SELECT document_id::text AS document_id, chunk_index, content, (${byConfig('ts_rank_cd')})::float8 AS score
        FROM (
          SELECT document_id, chunk_index, content, tsv, ts_config
          FROM (
            SELECT document_id, chunk_index, content, tsv, ts_config FROM document_chunks
            WHERE organization_id = ${opts.orgId} AND document_id = ANY(${sql.array(readyIds, 'uuid')}) AND (${cond})
            LIMIT ${MAX_RANKED}
          ) AS matched
          ORDER BY ${byConfig('ts_rank')} DESC
          LIMIT ${candidates}
        ) AS c
        ORDER BY score DESC, document_id, chunk_index`);
    };
    let ftsHits: readonly Hit[] = [];
    if (parts.length) {
      // Rare words select first; when they find too little (or do not occur at all), every word selects.
      if (pruned) ftsHits = await runFts('rare');
      if (ftsHits.length < limit) {
        const seen = new Set(ftsHits.map((h) => `${h.document_id}:${h.chunk_index}`));
        const more = (await runFts('rank')).filter((h) => !seen.has(`${h.document_id}:${h.chunk_index}`));
        ftsHits = [...ftsHits, ...more];
      }
    }
    let vecHits: readonly Hit[] = [];
    if (queryVector) {
      vecHits = await tx.any(sql.type(hitRow)`
        SELECT document_id::text AS document_id, chunk_index, content, vas_dot(embedding, ${vectorLiteral(queryVector)}::real[]) AS score
        FROM document_chunks
        WHERE organization_id = ${opts.orgId} AND document_id = ANY(${sql.array(readyIds, 'uuid')}) AND embedding IS NOT NULL
        ORDER BY score DESC NULLS LAST, document_id, chunk_index
        LIMIT ${candidates}`);
    }
    return { fts: ftsHits, vec: vecHits };
  });

  let ranked: Hit[];
  if (!vec.length) {
    ranked = [...fts];
  } else {
    const fused = new Map<string, Hit>();
    const add = (list: readonly Hit[]) =>
      list.forEach((h, rank) => {
        const key = `${h.document_id}:${h.chunk_index}`;
        const prev = fused.get(key);
        const s = 1 / (RRF_K + rank + 1);
        fused.set(key, prev ? { ...prev, score: prev.score + s } : { ...h, score: s });
      });
    add(fts);
    add(vec);
    ranked = [...fused.values()].sort((a, b) => b.score - a.score || a.document_id.localeCompare(b.document_id) || a.chunk_index - b.chunk_index);
  }
  const passages = pickPassages(ranked, maxTokens, limit);
  return pending.length ? { status: 'ok', passages, pending } : { status: 'ok', passages };
}

export async function searchKnowledge(db: Db, opts: SearchKnowledgeOptions): Promise<SearchKnowledgeResult> {
  const timeoutMs = Math.max(1, opts.timeoutMs);
  const deadline = Date.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<SearchKnowledgeResult>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'error', message: `Knowledge base search timed out after ${timeoutMs} ms` }), timeoutMs);
  });
  const work = search(db, opts, deadline).catch((err: unknown): SearchKnowledgeResult => {
    const code = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { cause?: { code?: string } }).cause?.code;
    if (code === '57014' || /statement timeout/i.test(String((err as Error).message))) {
      return { status: 'error', message: `Knowledge base search timed out after ${timeoutMs} ms` };
    }
    return { status: 'error', message: `Knowledge base search failed: ${(err as Error).message}` };
  });
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** The ids (as given) that are not live documents of this organization (bad UUIDs, other orgs, deleted). */
export async function checkDocumentReferences(db: Db, orgId: string, ids: readonly string[]): Promise<string[]> {
  const valid = [...new Set(ids.filter((id) => UUID_RE.test(id)).map((id) => id.toLowerCase()))];
  const found = valid.length
    ? new Set(await db.anyFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id::text AS id FROM documents
        WHERE organization_id = ${orgId} AND id = ANY(${sql.array(valid, 'uuid')}) AND deleted_at IS NULL`))
    : new Set<string>();
  return ids.filter((id) => !(UUID_RE.test(id) && found.has(id.toLowerCase())));
}
