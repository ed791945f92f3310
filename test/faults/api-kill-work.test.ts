// The api process SIGKILLed during the work the worker does — post-call processing
// of 20 calls, a document ingestion — with requests in flight to the api at the kill (POST /files uploads,
// process-document). Real processes (api/main.ts, activities/worker.ts) on one database and the suite's Temporal.
// Afterwards: every call processed (one call.completed, one debit each), every document `completed` or `failed`
// with a reason, none left `pending`/`processing`, every upload answered 201 ingested, no duplicate chunks. A
// document registered but never handed to Temporal (the api killed between its INSERT and the workflow start: the
// state is written here directly, the kill cannot be aimed at that instant) is started by the new api's sweep.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { loadConfig } from '../../core/config.ts';
import { sql } from '../../core/db/pool.ts';
import { documentKey } from '../../core/documents/records.ts';
import { createStorage } from '../../core/storage/index.ts';
import { multipart } from '../knowledge-base/helpers.ts';
import { apiClient, byCall, count, debits, endedCallsHandedOff, kill, killChildren, setup, slowEmbeddings, startProcess } from './harness.ts';
import { until } from '../helpers/wait.ts';

test.after.always(killChildren);

test.serial('api SIGKILLed during post-call of 20 calls: every call processed, one call.completed and one debit each; a new api serves them', async (t) => {
  const { db, org, key, receiver, env } = await setup(t, 'faults-api-kill-post-call');
  const procs = { api: await startProcess('api/main.ts', env) };
  await startProcess('activities/worker.ts', env, false);
  // handed off as a media node does at the end of each call
  const { calls } = await endedCallsHandedOff(t, { db, orgId: org.id, receiver, env });
  await until(() => receiver.events.some((e) => e.json?.event === 'call.completed') || null, { what: 'the first call.completed', timeoutMs: 90_000, everyMs: 250 });
  await kill(procs.api.child);
  const doneAtKill = receiver.events.filter((e) => e.json?.event === 'call.completed').length;
  await until(async () => (await count(db, sql.fragment`SELECT 1 FROM calls WHERE id = ANY(${sql.array(calls, 'uuid')}) AND post_call_completed_at IS NOT NULL`)) === 20 || null, { what: 'post-call of all 20 calls', timeoutMs: 180_000, everyMs: 250 });
  await until(() => calls.every((id) => byCall(receiver, id, 'call.completed') >= 1) || null, { what: 'call.completed of every call', timeoutMs: 30_000, everyMs: 250 });
  for (const id of calls) {
    t.is(byCall(receiver, id, 'call.completed'), 1, `call.completed of ${id}`);
    t.is(await debits(db, id), 1, `debit of ${id}`);
  }
  procs.api = await startProcess('api/main.ts', env);
  const api = apiClient(key, () => procs.api.origin);
  const row = await api('GET', `/calls/${calls[0]}`);
  t.is(row.status, 200);
  t.log(`${doneAtKill} of 20 call.completed sent when the api was killed; all 20 processed with no api running`);
});

const docRow = z.object({ id: z.string(), status: z.string(), error: z.string().nullable(), total_chunks: z.number(), bytes: z.number() });

test.serial('api SIGKILLed while a document ingests and uploads are in flight: every document completed or failed, nothing left pending, no duplicate chunks', async (t) => {
  const embed = await slowEmbeddings(150);
  t.teardown(() => embed.close());
  const { db, org, key, env } = await setup(t, 'faults-api-kill-documents', { EMBEDDING_BASE_URL: embed.url, EMBEDDING_MODEL: 'fake-embed', EMBEDDING_API_KEY: 'k' });
  const procs = { api: await startProcess('api/main.ts', env) };
  await startProcess('activities/worker.ts', env, false);
  const api = apiClient(key, () => procs.api.origin);

  // a long document ingesting (slow embeddings) when the api dies
  const sections = Array.from({ length: 300 }, (_, i) => `## Section ${i}\n\nItem ${i} costs ${i + 1} euros and ships in ${(i % 5) + 1} days.`);
  const long = await api('POST', '/knowledge-base/create-from-text', { name: 'catalogue.md', text: sections.join('\n\n') });
  t.is(long.status, 201, JSON.stringify(long.body));
  const longId = String(long.body.id);
  const chunks = () => db.one(sql.type(z.object({ n: z.number(), distinct_idx: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT chunk_index)::int AS distinct_idx FROM document_chunks WHERE document_id = ${longId}`);
  await until(async () => (await chunks()).n > 0 || null, { what: 'the long document to be processing', timeoutMs: 90_000, everyMs: 250 });

  // five uploads through upload-url + PUT, registered by process-document in the burst below
  const presigned: Array<{ document_uuid: string; s3_key: string }> = [];
  for (let i = 0; i < 5; i++) {
    const u = await api('POST', '/knowledge-base/upload-url', { filename: `presigned-${i}.txt`, mime_type: 'text/plain' });
    t.is(u.status, 200, JSON.stringify(u.body));
    const put = await fetch(new URL(new URL(String(u.body.upload_url)).pathname + new URL(String(u.body.upload_url)).search, procs.api.origin), {
      method: 'PUT', headers: { 'content-type': 'text/plain' }, body: `Presigned document ${i}. `.repeat(2000),
    });
    t.true(put.ok, `PUT ${put.status}`);
    presigned.push({ document_uuid: String(u.body.document_uuid), s3_key: String(u.body.s3_key) });
  }
  // the burst: 10 POST /files of 1 MB and the 5 process-document calls at once; the api is killed at the first answer
  const origin = procs.api.origin;
  const results: Array<{ kind: string; status: number | 'no answer'; id: string | null }> = [];
  let answered!: () => void;
  const firstAnswer = new Promise<void>((r) => { answered = r; });
  const burst = [
    ...Array.from({ length: 10 }, (_, i) => async () => {
      const { body, contentType } = multipart([{ name: 'file', value: `Uploaded file ${i}: ${'lorem ipsum dolor sit amet '.repeat(40_000)}`, filename: `upload-${i}.txt`, contentType: 'text/plain' }]);
      const res = await fetch(`${origin}/api/v1/files`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });
      return { kind: 'POST /files', status: res.status, id: ((await res.json()) as { id?: string }).id ?? null };
    }),
    ...presigned.map((p) => async () => {
      const res = await fetch(`${origin}/api/v1/knowledge-base/process-document`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ ...p, retrieval_mode: 'chunked' }),
      });
      return { kind: 'process-document', status: res.status, id: ((await res.json()) as { id?: string }).id ?? null };
    }),
  ].map(async (send) => {
    const r = await send().catch(() => ({ kind: 'request', status: 'no answer' as const, id: null }));
    results.push(r);
    answered();
  });
  await firstAnswer;
  await kill(procs.api.child);
  await Promise.all(burst);

  // what a kill between a document's INSERT and its workflow start leaves: the object stored, the row pending
  const strandedId = randomUUID();
  const strandedKey = documentKey(org.id, strandedId, 'stranded.txt');
  await createStorage(loadConfig({ ...env })).put(strandedKey, Buffer.from('A document whose ingestion was never started. '.repeat(50)), { contentType: 'text/plain' });
  await db.query(sql.unsafe`
    INSERT INTO documents (id, organization_id, name, original_name, bytes, mime_type, status, retrieval_mode, storage_key, created_at, updated_at)
    VALUES (${strandedId}, ${org.id}, 'stranded.txt', 'stranded.txt', 2300, 'text/plain', 'pending', 'chunked', ${strandedKey}, now() - interval '2 minutes', now() - interval '2 minutes')`);

  procs.api = await startProcess('api/main.ts', env);
  // every document reaches a final state (the new api's sweep starts the stranded one)
  await until(async () => (await count(db, sql.fragment`SELECT 1 FROM documents WHERE organization_id = ${org.id} AND status IN ('pending', 'processing')`)) === 0 || null, { what: 'every document to finish', timeoutMs: 180_000, everyMs: 250 });
  const docs = await db.any(sql.type(docRow)`SELECT id::text, status, error, total_chunks, bytes::int AS bytes FROM documents WHERE organization_id = ${org.id}`);
  for (const d of docs) t.true(d.status === 'completed' || (d.status === 'failed' && !!d.error), `${d.id}: ${d.status} ${d.error ?? ''}`);
  const byId = new Map(docs.map((d) => [d.id, d]));
  for (const r of results.filter((x) => x.status === 201)) t.is(byId.get(r.id!)?.status, 'completed', `${r.kind} answered 201: ${r.id}`);
  t.is(byId.get(strandedId)?.status, 'completed', 'the stranded document was ingested');
  t.is(byId.get(longId)?.status, 'completed');
  const c = await chunks();
  t.is(c.n, c.distinct_idx, 'no duplicate chunks');
  t.is(c.n, byId.get(longId)!.total_chunks);
  // registered without the client hearing 201 (the answer was lost with the process): ingested all the same
  const answeredIds = new Set(results.map((r) => r.id));
  const unanswered = docs.filter((d) => d.id !== longId && d.id !== strandedId && !answeredIds.has(d.id)).length;
  const statuses = results.map((r) => `${r.kind}:${r.status}`).sort();
  t.log(`burst of 15 at the kill: ${JSON.stringify(statuses)}; ${docs.length - 2} documents registered by it (${unanswered} without a 201 reaching the client), all ${docs.every((d) => d.status === 'completed') ? 'completed' : 'final'}; long document ${c.n} chunks, no duplicates`);
});
