// The knowledge-base upload flow (presigned URL → PUT → process-document), create-from-text, the 100 MB and
// 30-minute limits of the presigned URL, the key/organization checks, and retrieval semantics for the query
// tool (searchKnowledge: not-ready documents, mixed readiness, token budget, language-aware search).
import test from 'ava';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { searchKnowledge } from '../../core/retrieval.ts';
import { verifyLocalUpload } from '../../core/storage/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitProcessed } from './helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const QUEUE = 'kb-presigned-test';
const MB100 = 100 * 1024 * 1024;
let s: TestServer;
let worker: RunningWorker;
let org: { orgId: string; apiKey: string };
let other: { orgId: string; apiKey: string };

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE } });
  worker = await startTestWorker(s, QUEUE);
  org = await s.createOrg({ name: 'KB' });
  other = await s.createOrg({ name: 'Other' });
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
});

async function uploadUrl(filename: string, mime: string, key = org.apiKey) {
  const r = await s.request('POST', '/knowledge-base/upload-url', { key, body: { filename, mime_type: mime } });
  if (r.status !== 200) throw new Error(`upload-url: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { upload_url: string; document_uuid: string; s3_key: string };
}

async function fromText(text: string, extra: Record<string, unknown> = {}, key = org.apiKey) {
  const r = await s.request('POST', '/knowledge-base/create-from-text', { key, body: { text, ...extra } });
  if (r.status !== 201) throw new Error(`create-from-text: ${r.status} ${JSON.stringify(r.body)}`);
  return waitProcessed(s, r.body.id, key);
}

test('presigned upload → PUT → process-document → completed and searchable', async (t) => {
  const u = await uploadUrl('Opening Guide.md', 'text/markdown');
  t.is(u.s3_key, `documents/${org.orgId}/${u.document_uuid}/Opening_Guide.md`);
  const url = new URL(u.upload_url);
  t.is(url.searchParams.get('max'), String(MB100));
  const expires = Number(url.searchParams.get('expires'));
  const now = Math.floor(Date.now() / 1000);
  t.true(expires >= now + 1790 && expires <= now + 1810, `expires in ${expires - now} s`);

  const text = '# Opening hours\n\nThe bakery opens at seven on weekdays.\n\n# Delivery\n\nWe deliver bread within ten kilometres.\n';
  const wrongType = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: text });
  t.is(wrongType.status, 403);
  const put = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/markdown' }, body: text });
  t.is(put.status, 200);

  const body = { document_uuid: u.document_uuid, s3_key: u.s3_key, retrieval_mode: 'chunked' };
  const r = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body });
  t.is(r.status, 201);
  t.is(r.body.id, u.document_uuid);
  t.is(r.body.status, 'pending');
  t.is(r.body.bytes, Buffer.byteLength(text));
  const done = await waitProcessed(s, u.document_uuid, org.apiKey);
  t.is(done.status, 'completed');
  t.is(done.totalChunks, 2);

  // A retried call is idempotent.
  const again = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body });
  t.is(again.status, 200);
  t.is(again.body.id, u.document_uuid);
  t.is(again.body.status, 'completed');

  const hit = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [u.document_uuid], query: 'Do you deliver bread?', timeoutMs: 5000 });
  t.is(hit.status, 'ok');
  if (hit.status === 'ok') t.regex(hit.passages[0]!.content, /^Delivery\nWe deliver bread/);
});

test('the presigned URL expires after 30 minutes and refuses more than 100 MB', async (t) => {
  const u = await uploadUrl('big.txt', 'text/plain');
  const url = new URL(u.upload_url);
  const q = Object.fromEntries(url.searchParams);
  t.true(verifyLocalUpload(s.config, u.s3_key, q, 'text/plain', Date.now() + 29 * 60_000).ok);
  t.deepEqual(verifyLocalUpload(s.config, u.s3_key, q, 'text/plain', Date.now() + 31 * 60_000), { ok: false, status: 403, detail: 'Upload URL expired' });
  const forged = new URL(u.upload_url);
  forged.searchParams.set('max', String(2 * MB100));
  t.is((await fetch(forged, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x' })).status, 403);

  // Declared too large: refused before reading.
  const declared = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: Buffer.alloc(MB100 + 1, 'a') });
  t.is(declared.status, 413);
  // Streamed without a length: cut off at 100 MB + 1 byte.
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= MB100 + 1) return this.push(null);
      const piece = sent + chunk.length > MB100 + 1 ? chunk.subarray(0, MB100 + 1 - sent) : chunk;
      sent += piece.length;
      this.push(piece);
    },
  });
  const streamed = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: stream as never, duplex: 'half' } as RequestInit).then((r) => r.status, () => 'connection closed');
  t.true(streamed === 413 || streamed === 'connection closed', String(streamed));
  t.false(await s.storage.exists(u.s3_key));
  const r = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: u.document_uuid, s3_key: u.s3_key } });
  t.is(r.status, 404);
});

test('knowledge-base validation and organization checks', async (t) => {
  const bad = await s.request('POST', '/knowledge-base/upload-url', { key: org.apiKey, body: { filename: 'a.txt' } });
  t.is(bad.status, 422);
  t.is(bad.body.detail[0].type, 'missing');
  t.deepEqual(bad.body.detail[0].loc, ['body', 'mime_type']);
  const badExt = await s.request('POST', '/knowledge-base/upload-url', { key: org.apiKey, body: { filename: 'a.exe', mime_type: 'application/x-msdownload' } });
  t.deepEqual([badExt.status, badExt.body.detail], [400, "Unsupported file type '.exe'. Allowed: .pdf, .docx, .doc, .txt, .json, .md, .csv"]);

  const mine = await uploadUrl('notes.txt', 'text/plain');
  await fetch(mine.upload_url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'private notes' });
  // Another organization cannot process (or learn about) this object.
  const cross = await s.request('POST', '/knowledge-base/process-document', { key: other.apiKey, body: { document_uuid: mine.document_uuid, s3_key: mine.s3_key } });
  t.is(cross.status, 400);
  const mismatch = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: crypto.randomUUID(), s3_key: mine.s3_key } });
  t.is(mismatch.status, 400);
  const traversal = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: mine.document_uuid, s3_key: `documents/${org.orgId}/../x` } });
  t.is(traversal.status, 400);
  const badMode = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: mine.document_uuid, s3_key: mine.s3_key, retrieval_mode: 'smart' } });
  t.is(badMode.status, 422);
  t.deepEqual(badMode.body.detail[0].loc, ['body', 'retrieval_mode']);
  const n = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents WHERE id = ${mine.document_uuid}`);
  t.is(n, 0);

  const emptyText = await s.request('POST', '/knowledge-base/create-from-text', { key: org.apiKey, body: { text: '   ' } });
  t.is(emptyText.status, 422);
});

test('create-from-text; full_document mode; not-ready and mixed readiness; token budget', async (t) => {
  const long = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: the warranty covers parts and labour for machine model ${i} during two years.`).join('\n\n');
  const doc = await fromText(long, { name: 'Warranty' });
  t.is(doc.status, 'completed');
  t.is(doc.name, 'Warranty');
  t.is(doc.originalName, 'Warranty.txt');
  t.true(doc.totalChunks > 1);
  const full = await fromText('Our refund window is fourteen days from delivery.', { name: 'refunds.md', retrieval_mode: 'full_document' });
  t.is(full.retrievalMode, 'full_document');
  t.is(full.totalChunks, 1);

  const budget = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [doc.id], query: 'warranty labour', timeoutMs: 5000, maxTokens: 100 });
  t.is(budget.status, 'ok');
  if (budget.status === 'ok') {
    t.true(budget.passages.length >= 1);
    t.true(budget.passages.reduce((n, p) => n + Math.ceil(p.content.length / 4), 0) <= 100);
    t.true(budget.passages.every((p, i, a) => i === 0 || a[i - 1]!.score >= p.score));
  }
  const limited = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [doc.id], query: 'warranty', timeoutMs: 5000, maxTokens: 100_000, limit: 2 });
  t.is(limited.status === 'ok' && limited.passages.length, 2);

  // A registered document whose processing has not finished.
  const pendingId = crypto.randomUUID();
  await s.db.query(sql.unsafe`
    INSERT INTO documents (id, organization_id, name, original_name, status, storage_key)
    VALUES (${pendingId}, ${org.orgId}, 'later.txt', 'later.txt', 'processing', ${`documents/${org.orgId}/${pendingId}/later.txt`})`);
  t.deepEqual(await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [pendingId], query: 'anything', timeoutMs: 5000 }), { status: 'not_ready', pending: [pendingId] });
  const mixed = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [pendingId, full.id], query: 'How long is the refund window?', timeoutMs: 5000 });
  t.is(mixed.status, 'ok');
  if (mixed.status === 'ok') {
    t.deepEqual(mixed.pending, [pendingId]);
    t.is(mixed.passages[0]!.content, 'Our refund window is fourteen days from delivery.');
  }
  const nothing = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [full.id], query: 'submarine', timeoutMs: 5000 });
  t.deepEqual(nothing, { status: 'ok', passages: [] });
  const missing = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [crypto.randomUUID()], query: 'x', timeoutMs: 5000 });
  t.is(missing.status, 'error');
});

test('language-aware full-text search: a German document is stemmed as German', async (t) => {
  const doc = await fromText(
    'Unsere Öffnungszeiten: Die Praxis ist montags bis freitags von acht bis achtzehn Uhr geöffnet. ' +
      'Termine können telefonisch oder über die Webseite vereinbart werden. Neue Patienten bringen bitte ihre Versicherungskarte mit.',
    { name: 'praxis' },
  );
  t.is(doc.status, 'completed');
  const cfg = await s.db.oneFirst(sql.type(z.object({ ts_config: z.string() }))`SELECT ts_config::text AS ts_config FROM documents WHERE id = ${doc.id}`);
  t.is(cfg, 'german');
  // "Termin" only matches "Termine" through German stemming.
  const r = await searchKnowledge(s.db, { orgId: org.orgId, documentIds: [doc.id], query: 'Wie bekomme ich einen Termin?', timeoutMs: 5000 });
  t.is(r.status, 'ok');
  if (r.status === 'ok') t.is(r.passages.length, 1);
});
