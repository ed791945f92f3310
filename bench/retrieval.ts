// bench/retrieval: the knowledge base at 1,000 documents / 50,000 chunks. Generates 1,000 Markdown documents of 50
// sections each (English sentences over a Zipf-distributed vocabulary plus rare product names), ingests them
// through the real ingestion code (storage → extraction → chunking → language detection → indexed inserts;
// the activity body, without the Temporal round trip), then measures searchKnowledge latency:
//   - typical: a query tool listing 5 documents (250 chunks) — target p95 <= 30 ms
//   - wide:    a tool listing all 1,000 documents (50,000 chunks, GIN index) — reported, same target
// and ingestion throughput (documents/s, chunks/s).
//
//   node_modules/.bin/tsx bench/retrieval.ts        (or: npm run bench -- retrieval)
//   DOCS=200 QUERIES=200 node_modules/.bin/tsx bench/retrieval.ts
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { loadConfig } from '../core/config.ts';
import { createDb, sql } from '../core/db/pool.ts';
import { createLogger } from '../core/logger.ts';
import { createOrganization } from '../core/orgs.ts';
import { createStorage } from '../core/storage/index.ts';
import { documentKey } from '../core/documents/records.ts';
import { searchKnowledge } from '../core/retrieval.ts';
import { ingestOneDocument } from '../activities/ingestion.ts';
import { startScratchDatabase } from '../scripts/infra.ts';
import { pct } from './_stats.ts';

const DOCS = Number(process.env.DOCS ?? 1000);
const SECTIONS = Number(process.env.SECTIONS ?? 50);
const QUERIES = Number(process.env.QUERIES ?? 500);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 6);
const TARGET_P95_MS = 30;
const log = (m: string) => process.stdout.write(`${m}\n`);

// Deterministic PRNG (mulberry32) so every run measures the same corpus.
let seed = 0x5eed;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(a: readonly T[]) => a[Math.floor(rand() * a.length)]!;
const zipf = <T>(a: readonly T[]) => a[Math.min(a.length - 1, Math.floor(a.length * rand() ** 2.5))]!;

const NOUNS = 'account address appointment battery bicycle booking budget cable card charger clinic coffee contract customer delivery deposit device discount doctor engine fee filter form garage guarantee helmet hotel insurance invoice kettle ladder laptop licence machine manager meeting member menu message motor nurse order package parking password patient payment phone plan policy price printer product receipt refund repair report reservation room router schedule screen seat service shipment shop size stock store subscription supplier table ticket timetable tool train transfer update vehicle voucher wallet warranty window'.split(' ');
const VERBS = 'accepts books cancels changes charges checks collects confirms covers delivers includes installs keeps lists offers opens orders pays protects receives refunds renews repairs replaces reserves returns schedules sends ships stores supports tracks updates'.split(' ');
const ADJS = 'annual available basic broken cheap daily digital early electric express extra free fresh full green heavy large late local main monthly new online open original paid personal premium private quick regular safe second small special standard spare weekly'.split(' ');
const PREPS = 'after before during for from in on under with within'.split(' ');
const SYL = 'ka lo mi ne ru sa te vo zu ba di fe go hi ju'.split(' ');
const RARE = Array.from({ length: 3000 }, () => Array.from({ length: 3 }, () => pick(SYL)).join('') + pick(['x', 'n', 'r', 'l']));

const sentence = () => {
  const s = `The ${zipf(ADJS)} ${zipf(NOUNS)} ${pick(VERBS)} the ${zipf(NOUNS)} ${pick(PREPS)} ${rand() < 0.5 ? zipf(RARE) : `${Math.floor(rand() * 90) + 2} days`}.`;
  return s;
};
function document(i: number): string {
  const parts = [`# Handbook ${i}`];
  for (let s = 0; s < SECTIONS; s++) {
    parts.push(`## ${zipf(ADJS)} ${zipf(NOUNS)} ${s}`);
    parts.push(Array.from({ length: 6 + Math.floor(rand() * 4) }, sentence).join(' '));
  }
  return parts.join('\n\n');
}
const query = () => {
  const words = [zipf(NOUNS), pick(VERBS), zipf(ADJS)];
  if (rand() < 0.6) words.push(zipf(RARE));
  return `What does the ${words.join(' ')} mean for my ${zipf(NOUNS)}?`;
};

const scratch = await startScratchDatabase({ prefix: 'vas-bench-retrieval-' });
const dir = scratch.dir;
let exitCode = 0;
try {
  const db = await createDb(scratch.url, { maximumPoolSize: CONCURRENCY + 4 });
  const config = loadConfig({ DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'silent', SIGNING_SECRET: 'bench-signing-secret-0123456789' });
  const storage = createStorage(config);
  const logger = createLogger({ level: 'silent', name: 'bench' });
  const org = await createOrganization(db, { name: 'bench', balanceUsd: 0 });

  // ---- ingest ------------------------------------------------------------------------------------------------
  log(`ingesting ${DOCS} documents x ${SECTIONS} sections (concurrency ${CONCURRENCY}) ...`);
  const ids: string[] = [];
  let bytes = 0;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < DOCS) {
      const i = next++;
      const id = randomUUID();
      const key = documentKey(org.id, id, `handbook-${i}.md`);
      const text = Buffer.from(document(i));
      bytes += text.length;
      await storage.put(key, text);
      await db.query(sql.unsafe`
        INSERT INTO documents (id, organization_id, name, original_name, bytes, mime_type, storage_key)
        VALUES (${id}, ${org.id}, ${`handbook-${i}.md`}, ${`handbook-${i}.md`}, ${text.length}, 'text/markdown', ${key})`);
      const r = await ingestOneDocument({ config, db, logger, storage }, id);
      if (r.status !== 'completed') throw new Error(`document ${i} not completed: ${JSON.stringify(r)}`);
      ids.push(id);
    }
  }));
  const ingestS = (performance.now() - t0) / 1000;
  const stats = await db.one(sql.type(z.object({ chunks: z.number(), configs: z.string() }))`
    SELECT count(*)::int AS chunks, string_agg(DISTINCT ts_config::text, ',') AS configs FROM document_chunks`);
  await db.query(sql.unsafe`VACUUM ANALYZE document_chunks`);
  await db.query(sql.unsafe`VACUUM ANALYZE documents`);
  log(`ingested ${DOCS} documents, ${stats.chunks} chunks, ${(bytes / 1e6).toFixed(1)} MB in ${ingestS.toFixed(1)} s: ` +
    `${(DOCS / ingestS).toFixed(1)} documents/s, ${Math.round(stats.chunks / ingestS)} chunks/s (text search configs: ${stats.configs})`);

  // ---- query -------------------------------------------------------------------------------------------------
  async function measure(label: string, docSet: () => string[]) {
    const times: number[] = [];
    let hits = 0;
    for (let i = 0; i < QUERIES + 20; i++) {
      const documentIds = docSet();
      const q = query();
      const t = performance.now();
      const r = await searchKnowledge(db, { orgId: org.id, documentIds, query: q, timeoutMs: 5000 });
      const ms = performance.now() - t;
      if (r.status !== 'ok') throw new Error(`${label}: ${JSON.stringify(r)}`);
      if (i >= 20) {
        times.push(ms);
        if (r.passages.length) hits++;
      }
    }
    const p50 = pct(times, 50);
    const p95 = pct(times, 95);
    log(`${label}: ${QUERIES} queries, p50 ${p50.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms, p99 ${pct(times, 99).toFixed(2)} ms, ` +
      `${Math.round((hits / QUERIES) * 100)}% with passages  [target p95 <= ${TARGET_P95_MS} ms: ${p95 <= TARGET_P95_MS ? 'PASS' : 'FAIL'}]`);
    return p95;
  }
  log(`load average before queries: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`);
  const five = () => Array.from({ length: 5 }, () => pick(ids));
  const p95typical = await measure('typical (5 documents, ~250 chunks)', five);
  log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`);
  const p95wide = await measure(`wide (all ${DOCS} documents, ${stats.chunks} chunks)`, () => ids);
  if (p95typical > TARGET_P95_MS || p95wide > TARGET_P95_MS) exitCode = 1;
  await db.end();
} catch (err) {
  process.stderr.write(`${(err as Error).stack}\n`);
  exitCode = 1;
} finally {
  await scratch.stop();
}
process.exit(exitCode);
