// POST /files end to end on the real Temporal dev server: real PDF/DOCX/CSV/Markdown files reach `completed`
// with the chunk counts their structure gives, broken files reach `failed` with a readable error, every 400
// string of the spec, the 5 MB limit, the 500 on a storage failure, soft delete and cross-organization isolation.
import test from 'ava';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { checkDocumentReferences, searchKnowledge } from '../../core/retrieval.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { buildDocx, buildPdf, upload, waitProcessed } from './helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { tempDir } from '../helpers/tmp.ts';

const QUEUE = 'kb-files-test';
let s: TestServer;
let worker: RunningWorker;
let orgA: { orgId: string; apiKey: string };
let orgB: { orgId: string; apiKey: string };

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE } });
  worker = await startTestWorker(s, QUEUE);
  orgA = await s.createOrg({ name: 'A' });
  orgB = await s.createOrg({ name: 'B' });
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
});

const chunkRows = (id: string) =>
  s.db.any(sql.type(z.object({ chunk_index: z.number(), content: z.string(), heading: z.string().nullable() }))`
    SELECT chunk_index, content, heading FROM document_chunks WHERE document_id = ${id} ORDER BY chunk_index`);
const documentCount = (orgId: string) => s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents WHERE organization_id = ${orgId}`);

async function ingest(filename: string, data: Buffer | string, key = orgA.apiKey, retrievalMode?: string) {
  const parts = [{ name: 'file', value: data, filename }];
  if (retrievalMode) parts.unshift({ name: 'retrievalMode', value: retrievalMode } as never);
  const r = await upload(s, parts, key);
  if (r.status !== 201) throw new Error(`upload ${filename}: ${r.status} ${JSON.stringify(r.body)}`);
  return { created: r.body, done: await waitProcessed(s, r.body.id, key) };
}

test('a PDF built by pdfkit: one chunk per page, searchable', async (t) => {
  const pdf = await buildPdf([
    'Opening hours. The Riverside clinic is open Monday to Friday from eight in the morning until six in the evening.',
    'Parking. Visitors can park for free in the underground garage below the clinic; the entrance is on Mill Street.',
    'Payments. We accept debit cards, credit cards and bank transfers. Invoices are sent by email within three days.',
  ]);
  const { created, done } = await ingest('clinic.pdf', pdf);
  t.is(created.status, 'pending');
  t.is(created.totalChunks, 0);
  t.is(created.mimeType, 'application/pdf');
  t.is(created.retrievalMode, 'chunked');
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.totalChunks, 3);
  t.is(done.error, null);
  const chunks = await chunkRows(done.id);
  t.deepEqual(chunks.map((c) => c.chunk_index), [0, 1, 2]);
  t.regex(chunks[1]!.content, /underground garage/);

  const r = await searchKnowledge(s.db, { orgId: orgA.orgId, documentIds: [done.id], query: 'Where can I park my car?', timeoutMs: 5000 });
  t.is(r.status, 'ok');
  if (r.status !== 'ok') return;
  t.true(r.passages.length >= 1);
  t.regex(r.passages[0]!.content, /underground garage/);
  t.is(r.passages[0]!.documentId, done.id);
});

test('a DOCX built by the docx library: one chunk per section, headings kept, table rows', async (t) => {
  const docx = await buildDocx(
    [
      { heading: 'Employee handbook', level: 1, paragraphs: ['This handbook explains how we work together.'] },
      { heading: 'Holidays', level: 2, paragraphs: ['Every employee has twenty-eight days of paid holiday per year.', 'Requests go to your manager two weeks ahead.'] },
      { heading: 'Equipment', level: 2, paragraphs: ['Laptops are replaced every three years.'] },
    ],
    [['Item', 'Owner'], ['Laptop', 'IT desk'], ['Badge', 'Reception']],
  );
  const { done } = await ingest('handbook.docx', docx);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.mimeType, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
  // intro | Holidays (2 paragraphs) | Equipment paragraph | the table's 3 rows (rows never share a chunk with prose)
  t.is(done.totalChunks, 4);
  const chunks = await chunkRows(done.id);
  t.is(chunks[1]!.heading, 'Employee handbook > Holidays');
  t.regex(chunks[1]!.content, /^Employee handbook > Holidays\n/);
  t.regex(chunks[1]!.content, /twenty-eight days[\s\S]*two weeks ahead/);
  t.regex(chunks[3]!.content, /Laptop \| IT desk/);
});

test('a CSV: rows packed 25 per chunk, each row as column: value', async (t) => {
  const rows = ['sku,name,price'];
  for (let i = 1; i <= 60; i++) rows.push(`SKU-${i},"Widget ${i}, blue",${(i * 1.5).toFixed(2)}`);
  const { done } = await ingest('products.csv', `${rows.join('\n')}\n`);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.mimeType, 'text/csv');
  t.is(done.totalChunks, 3);
  const chunks = await chunkRows(done.id);
  t.is(chunks[0]!.content.split('\n').length, 25);
  t.is(chunks[2]!.content.split('\n').length, 10);
  t.true(chunks[2]!.content.includes('sku: SKU-60; name: Widget 60, blue; price: 90.00'));
});

test('Markdown: headings split sections; full_document keeps one unit', async (t) => {
  const md = [
    '# Returns policy', '', 'We want you to be happy with every order.', '',
    '## Refunds', '', 'Refunds are paid to the original card within five working days.', '',
    '## Exchanges', '', 'Exchanges are free for thirty days.', '', 'Bring the receipt.', '',
    '### Damaged items', '', 'Damaged items are replaced at once.', '',
    '```', '# not a heading inside code', '```',
  ].join('\n');
  const { done } = await ingest('returns.md', md);
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.totalChunks, 4);
  const chunks = await chunkRows(done.id);
  t.deepEqual(chunks.map((c) => c.heading), ['Returns policy', 'Returns policy > Refunds', 'Returns policy > Exchanges', 'Returns policy > Exchanges > Damaged items']);
  t.regex(chunks[3]!.content, /# not a heading inside code/);

  const full = await ingest('returns-full.md', md, orgA.apiKey, 'full_document');
  t.is(full.created.retrievalMode, 'full_document');
  t.is(full.done.status, 'completed');
  t.is(full.done.totalChunks, 1);
  const one = await chunkRows(full.done.id);
  t.regex(one[0]!.content, /happy with every order[\s\S]*original card[\s\S]*replaced at once/);
});

test('broken files end failed with a readable error and no chunks', async (t) => {
  const json = await ingest('broken.json', '{"opening": "9am", ');
  t.is(json.done.status, 'failed');
  t.regex(json.done.error, /^Invalid JSON: /);
  t.is(json.done.totalChunks, 0);

  const pdf = await ingest('fake.pdf', 'this is not a PDF at all');
  t.is(pdf.done.status, 'failed');
  t.regex(pdf.done.error, /^Could not read PDF: /);

  const doc = await ingest('old.doc', Buffer.from('plain text pretending to be a Word 97 document'));
  t.is(doc.done.status, 'failed');
  t.regex(doc.done.error, /^Could not read legacy Word \(\.doc\) file: /);

  const empty = await ingest('empty.txt', '   \n\n  ');
  t.is(empty.done.status, 'failed');
  t.is(empty.done.error, 'No text could be extracted from the document');
  for (const d of [json, pdf, doc, empty]) t.is((await chunkRows(d.done.id)).length, 0);
});

test('JSON: one section per top-level key', async (t) => {
  const { done } = await ingest('faq.json', JSON.stringify({ hours: 'Open daily 9-17', staff: [{ name: 'Ana', role: 'nurse' }, { name: 'Bo', role: 'doctor' }] }));
  t.is(done.status, 'completed', JSON.stringify(done));
  t.is(done.totalChunks, 2);
  const chunks = await chunkRows(done.id);
  t.is(chunks[1]!.content, 'staff\nname: Ana; role: nurse\nname: Bo; role: doctor');
});

test('every POST /files 400 string; bad input changes nothing', async (t) => {
  const orgC = await s.createOrg({ name: 'C' });
  const before = await documentCount(orgC.orgId);
  const noFile = await upload(s, [{ name: 'retrievalMode', value: 'chunked' }], orgC.apiKey);
  t.is(noFile.status, 400);
  t.deepEqual(noFile.body, { detail: 'Filename is required' });
  const emptyName = await upload(s, [{ name: 'file', value: 'hello', filename: '' }], orgC.apiKey);
  t.deepEqual([emptyName.status, emptyName.body], [400, { detail: 'Filename is required' }]);
  const notMultipart = await s.request('POST', '/files', { key: orgC.apiKey, body: { file: 'x' } });
  t.deepEqual([notMultipart.status, notMultipart.body], [400, { detail: 'Filename is required' }]);

  const badMode = await upload(s, [{ name: 'file', value: 'hello', filename: 'a.txt' }, { name: 'retrievalMode', value: 'semantic' }], orgC.apiKey);
  t.deepEqual([badMode.status, badMode.body], [400, { detail: "Invalid retrievalMode 'semantic'. Must be one of: chunked, full_document" }]);

  const badType = await upload(s, [{ name: 'file', value: 'hello', filename: 'notes.xyz' }], orgC.apiKey);
  t.deepEqual([badType.status, badType.body], [400, { detail: "Unsupported file type '.xyz'. Allowed: .pdf, .docx, .doc, .txt, .json, .md, .csv" }]);
  const noExt = await upload(s, [{ name: 'file', value: 'hello', filename: 'README' }], orgC.apiKey);
  t.is(noExt.status, 400);
  t.regex(noExt.body.detail, /^Unsupported file type ''/);

  const tooBig = await upload(s, [{ name: 'file', value: Buffer.alloc(5 * 1024 * 1024 + 1, 'a'), filename: 'big.txt' }], orgC.apiKey);
  t.deepEqual([tooBig.status, tooBig.body], [400, { detail: 'File exceeds maximum size of 5MB' }]);
  t.is(await documentCount(orgC.orgId), before);

  // Exactly 5 MB is accepted.
  const atLimit = await upload(s, [{ name: 'file', value: Buffer.alloc(5 * 1024 * 1024, 'word '), filename: 'limit.txt' }], orgC.apiKey);
  t.is(atLimit.status, 201);
  t.is(atLimit.body.bytes, 5 * 1024 * 1024);
  t.is(await documentCount(orgC.orgId), before + 1);
  await waitProcessed(s, atLimit.body.id, orgC.apiKey);
});

test('500 when storage cannot take the file', async (t) => {
  const blocker = path.join(tempDir('vas-kb-'), 'not-a-dir');
  writeFileSync(blocker, 'x');
  const broken = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: `${QUEUE}-unused`, STORAGE_DIR: blocker } });
  try {
    const org = await broken.createOrg();
    const r = await upload(broken, [{ name: 'file', value: 'hello', filename: 'a.txt' }], org.apiKey);
    t.deepEqual([r.status, r.body], [500, { detail: 'Failed to upload file to storage' }]);
    const n = await broken.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents`);
    t.is(n, 0);
  } finally {
    await broken.close();
  }
});

test('list, get, delete and cross-organization isolation', async (t) => {
  const { done } = await ingest('secret.txt', 'The vault code of organization A is four two four two.');
  t.is(done.status, 'completed');

  // B cannot see, search or delete A's file.
  t.is((await s.request('GET', `/files/${done.id}`, { key: orgB.apiKey })).status, 404);
  t.deepEqual((await s.request('DELETE', `/files/${done.id}`, { key: orgB.apiKey })).body, { detail: 'File not found' });
  const listB = await s.request('GET', '/files', { key: orgB.apiKey });
  t.is(listB.body.total, 0);
  const asB = await searchKnowledge(s.db, { orgId: orgB.orgId, documentIds: [done.id], query: 'vault code', timeoutMs: 5000 });
  t.is(asB.status, 'error');
  t.deepEqual(await checkDocumentReferences(s.db, orgB.orgId, [done.id]), [done.id]);
  t.deepEqual(await checkDocumentReferences(s.db, orgA.orgId, [done.id, 'nope']), ['nope']);
  t.is((await s.request('GET', '/files/not-a-uuid', { key: orgA.apiKey })).status, 404);

  // A lists (paginated) and reads it.
  const list = await s.request('GET', '/files?per_page=2&page=1', { key: orgA.apiKey });
  t.is(list.status, 200);
  t.is(list.body.items.length, 2);
  t.is(list.body.perPage, 2);
  t.true(list.body.total >= 2);
  t.deepEqual(Object.keys(list.body.items[0]).sort(), ['bytes', 'createdAt', 'error', 'id', 'mimeType', 'name', 'originalName', 'retrievalMode', 'status', 'totalChunks', 'updatedAt']);
  const failedOnly = await s.request('GET', '/files?status=failed', { key: orgA.apiKey });
  t.true(failedOnly.body.items.every((f: { status: string }) => f.status === 'failed'));
  t.is((await s.request('GET', '/files?status=bogus', { key: orgA.apiKey })).status, 422);

  // Uploaded documents are never served publicly at {cdn_url}.
  const key = await s.db.oneFirst(sql.type(z.object({ storage_key: z.string() }))`SELECT storage_key FROM documents WHERE id = ${done.id}`);
  t.true(await s.storage.exists(key));
  t.is((await fetch(`${s.origin}/cdn/${key}`)).status, 404);

  // Soft delete removes chunks and the object; the id is gone for everyone.
  const del = await s.request('DELETE', `/files/${done.id}`, { key: orgA.apiKey });
  t.is(del.status, 200);
  t.is((await s.request('GET', `/files/${done.id}`, { key: orgA.apiKey })).status, 404);
  t.is((await chunkRows(done.id)).length, 0);
  const row = await s.db.one(sql.type(z.object({ deleted: z.boolean(), storage_key: z.string() }))`
    SELECT deleted_at IS NOT NULL AS deleted, storage_key FROM documents WHERE id = ${done.id}`);
  t.true(row.deleted);
  t.false(await s.storage.exists(row.storage_key));
  t.deepEqual(await checkDocumentReferences(s.db, orgA.orgId, [done.id]), [done.id]);
  t.is((await s.request('DELETE', `/files/${done.id}`, { key: orgA.apiKey })).status, 404);
});

test('DELETE of a document an agent, a saved query tool or an inline binding uses → 409 naming them; nothing deleted; free once they let go', async (t) => {
  const org = await s.createOrg({ name: 'KB users' });
  const key = org.apiKey;
  const doc = async (name: string) => s.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO documents (organization_id, name, original_name, storage_key, status)
    VALUES (${org.orgId}, ${name}, ${name}, ${`documents/${org.orgId}/${name}`}, 'completed') RETURNING id::text`);
  const faq = await doc('faq.md');
  const prices = await doc('prices.csv');
  const unused = await doc('unused.txt');
  const queryTool = (ids: string[]) => ({ type: 'query', name: 'kb', config: { knowledgeBases: [{ name: 'Help', description: 'Help articles', documentIds: ids }] } });
  const agentBody = (name: string, ids: string[]) => ({ name, llm: { provider: 'openai', model: 'gpt-4o-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' }, tools: [queryTool(ids)] });
  const support = await s.request('POST', '/agents', { key, body: agentBody('Support', [prices, faq.toUpperCase()]) });
  t.is(support.status, 201, JSON.stringify(support.body));
  const sales = await s.request('POST', '/agents', { key, body: agentBody('Sales', [faq]) });
  t.is(sales.status, 201);
  const tool = await s.request('POST', '/tools', { key, body: { name: 'Price list', definition: { type: 'query', config: { groups: [{ name: 'Prices', description: 'Current prices', documentIds: [prices] }] } } } });
  t.is(tool.status, 200, JSON.stringify(tool.body));
  const snapshot = agentBody('Inline front desk', [prices]);
  const binding = await s.db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO inbound_bindings (organization_id, provider, address, address_normalized, agent_snapshot)
    VALUES (${org.orgId}, 'twilio', '+14155550100', '+14155550100', ${sql.jsonb(snapshot as never)}) RETURNING id`);
  const exists = async (id: string) => (await s.request('GET', `/files/${id}`, { key })).status === 200;

  const r = await s.request('DELETE', `/files/${faq}`, { key });
  t.is(r.status, 409);
  t.is(r.body.detail, `Document 'faq.md' is used by the query tools of agents 'Support' (${support.body.uuid}), 'Sales' (${sales.body.uuid}); remove it from their knowledge bases first.`);
  t.true(await exists(faq));
  const p = await s.request('DELETE', `/files/${prices}`, { key });
  t.is(p.status, 409);
  t.is(p.body.detail, `Document 'prices.csv' is used by the query tools of agent 'Support' (${support.body.uuid}) and saved tool 'Price list' (${tool.body.tool_uuid}) and inbound binding ${binding} (+14155550100); remove it from their knowledge bases first.`);
  t.true(await exists(prices));
  t.is((await s.request('DELETE', `/files/${unused}`, { key })).status, 200, 'a document nobody uses is deleted');

  // the agents still validate and can be used: POST /call is not refused for a missing document
  const preview = await s.request('POST', '/agents/preview-snapshot', { key, body: { agentId: support.body.uuid } });
  t.is(preview.status, 200, JSON.stringify(preview.body));

  // they let go: Sales is archived, Support's tool moves to another document → faq can go
  t.is((await s.request('DELETE', `/agents/${sales.body.uuid}`, { key })).status < 300, true);
  const moved = await s.request('PATCH', `/agents/${support.body.uuid}`, { key, body: { tools: [queryTool([prices])] } });
  t.is(moved.status, 200, JSON.stringify(moved.body));
  t.is((await s.request('DELETE', `/files/${faq}`, { key })).status, 200);
  t.false(await exists(faq));
  // the archived saved tool still holds prices (agents referencing it keep running it)
  await s.request('DELETE', `/tools/${tool.body.tool_uuid}`, { key });
  await s.db.query(sql.unsafe`DELETE FROM inbound_bindings WHERE id = ${binding}`);
  await s.request('PATCH', `/agents/${support.body.uuid}`, { key, body: { tools: [] } });
  const archivedTool = await s.request('DELETE', `/files/${prices}`, { key });
  t.is(archivedTool.status, 409);
  t.true(archivedTool.body.detail.includes(`saved tool 'Price list' (${tool.body.tool_uuid}, archived)`), archivedTool.body.detail);
});

test('503 when document processing (Temporal) is not configured; nothing is stored', async (t) => {
  const bare = await startTestServer({ temporal: false });
  try {
    const org = await bare.createOrg();
    const r = await upload(bare, [{ name: 'file', value: 'hello', filename: 'a.txt' }], org.apiKey);
    t.deepEqual([r.status, r.body], [503, { detail: 'Document processing is unavailable: Temporal is not configured' }]);
    const text = await bare.request('POST', '/knowledge-base/create-from-text', { key: org.apiKey, body: { text: 'hello' } });
    t.is(text.status, 503);
    const n = await bare.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents`);
    t.is(n, 0);
  } finally {
    await bare.close();
  }
});
