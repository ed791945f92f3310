// Ingestion survives a worker restart in the middle of a document (the retried activity resumes, rewrites the same
// chunk keys and ends `completed` with no duplicates), and hybrid retrieval with embeddings from a fake
// OpenAI-compatible /embeddings server (vendor protocol faked, our database and Temporal real).
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { embeddingConfigFrom, searchKnowledge } from '../../core/retrieval.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitProcessed } from './helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { until } from '../helpers/wait.ts';

const QUEUE = 'kb-restart-test';
const DIMS = 16;
/** Words of one concept share a dimension, so "reimbursement" is close to "refund" without sharing a lexeme. */
const CONCEPTS: Record<string, number> = { refund: 0, refunds: 0, reimbursement: 0, money: 0, parking: 1, garage: 1, car: 1 };

function fakeVector(text: string): number[] {
  const v = new Array(DIMS).fill(0);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const c = CONCEPTS[w];
    if (c !== undefined) v[c] += 3;
    else v[2 + ([...w].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) >>> 0, 7) % (DIMS - 2))] += 1;
  }
  return v;
}

let delayMs = 0;
let requests = 0;
const embedServer = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    requests++;
    const body = JSON.parse(raw) as { model: string; input: string[] };
    const answer = () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        object: 'list',
        model: body.model,
        data: body.input.map((s, index) => ({ object: 'embedding', index, embedding: fakeVector(s) })),
        usage: { prompt_tokens: 1, total_tokens: 1 },
      }));
    };
    if (req.url !== '/v1/embeddings') {
      res.statusCode = 404;
      res.end('{}');
    } else if (delayMs) setTimeout(answer, delayMs);
    else answer();
  });
});

let s: TestServer;
let org: { orgId: string; apiKey: string };
const workers: RunningWorker[] = [];

test.before(async () => {
  await new Promise<void>((r) => embedServer.listen(0, '127.0.0.1', r));
  const port = (embedServer.address() as AddressInfo).port;
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE, EMBEDDING_BASE_URL: `http://127.0.0.1:${port}/v1`, EMBEDDING_MODEL: 'fake-embed' } });
  org = await s.createOrg();
});
test.after.always(async () => {
  for (const w of workers) await w.close();
  await s?.close();
  embedServer.close();
});

const chunkStats = (id: string) =>
  s.db.one(sql.type(z.object({ n: z.number(), distinct_idx: z.number(), max_idx: z.number().nullable(), with_vec: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_idx, max(chunk_index) AS max_idx,
           count(embedding)::int AS with_vec
    FROM document_chunks WHERE document_id = ${id}`);

test.serial('a worker restart in the middle of a document still ends completed without duplicate chunks', async (t) => {
  const first = await startTestWorker(s, QUEUE);
  workers.push(first);
  delayMs = 250; // slow vendor: the document takes several seconds, so the restart lands mid-way
  const sections = Array.from({ length: 300 }, (_, i) => `## Section ${i}\n\nItem ${i} costs ${i + 1} euros and ships in ${(i % 5) + 1} days.`);
  const created = await s.request('POST', '/knowledge-base/create-from-text', { key: org.apiKey, body: { name: 'catalogue.md', text: sections.join('\n\n') } });
  t.is(created.status, 201);
  const id = created.body.id as string;

  // Wait until the first batch is durably written, then stop the worker under it.
  await until(async () => (await chunkStats(id)).n >= 100, { what: 'first batch written', timeoutMs: 60_000, everyMs: 100 });
  const mid = await s.request('GET', `/files/${id}`, { key: org.apiKey });
  t.is(mid.body.status, 'processing');
  await first.close();
  const atStop = (await chunkStats(id)).n;
  t.true(atStop < 300, `stopped after ${atStop} chunks`);

  delayMs = 0;
  workers.push(await startTestWorker(s, QUEUE));
  const done = await waitProcessed(s, id, org.apiKey, 90_000);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.totalChunks, 300);
  const stats = await chunkStats(id);
  t.deepEqual(stats, { n: 300, distinct_idx: 300, max_idx: 299, with_vec: 300 });
});

test.serial('hybrid retrieval: embeddings find a passage that shares no word with the query', async (t) => {
  if (!workers.some((w) => w.worker.getState() === 'RUNNING')) workers.push(await startTestWorker(s, QUEUE));
  const text = [
    '# Store guide',
    'Refunds are paid back to the original card within five days.',
    '',
    '## Visiting',
    'Use the garage under the building; the first hour is free.',
  ].join('\n\n');
  const created = await s.request('POST', '/knowledge-base/create-from-text', { key: org.apiKey, body: { name: 'guide.md', text } });
  const done = await waitProcessed(s, created.body.id, org.apiKey);
  t.is(done.status, 'completed');
  t.is((await chunkStats(done.id)).with_vec, 2);

  const opts = { orgId: org.orgId, documentIds: [done.id], query: 'reimbursement', timeoutMs: 5000 };
  const ftsOnly = await searchKnowledge(s.db, opts);
  t.deepEqual(ftsOnly, { status: 'ok', passages: [] });
  const before = requests;
  const hybrid = await searchKnowledge(s.db, { ...opts, embedding: embeddingConfigFrom(s.config) });
  t.is(requests, before + 1);
  t.is(hybrid.status, 'ok');
  if (hybrid.status === 'ok') t.regex(hybrid.passages[0]!.content, /Refunds are paid back/);

  // A provider outage degrades to full-text search instead of failing the tool call.
  const down = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [done.id], query: 'garage', timeoutMs: 5000, embedding: { baseUrl: 'http://127.0.0.1:9/v1', model: 'x' } });
  t.is(down.status, 'ok');
  if (down.status === 'ok') t.regex(down.passages[0]!.content, /garage under the building/);
});
