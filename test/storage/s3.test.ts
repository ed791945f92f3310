// The S3 path against a real S3-compatible server (versitygw, built and started by `npm test`): the storage backend,
// the knowledge-base upload URL (presigned PUT and the size-capped presigned POST: more than 100 MB is refused by
// the S3 server itself), process-document and POST /files ingesting from the bucket, a WebSocket call's recording
// and transcript published to the bucket, and a carrier transfer recording re-hosted there. The URLs the service
// hands out are fetched anonymously, as a customer would (the bucket's public prefixes: recordings/, transcripts/).
import test from 'ava';
import { z } from 'zod';
import { Readable } from 'node:stream';
import { sql } from '../../core/db/pool.ts';
import { StorageNotFoundError } from '../../core/storage/index.ts';
import { parseWavHeader } from '../../core/audio/wav.ts';
import { callEndedSignal, postCallWorkflowId } from '../../workflows/post-call/messages.ts';
import type { postCallWorkflow } from '../../workflows/post-call/workflow.ts';
import { transferRecordingWorkflowId } from '../../workflows/transfer-recording/messages.ts';
import type { transferRecordingWorkflow } from '../../workflows/transfer-recording/workflow.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { fakeEngines } from '../fakes/engines.ts';
import { agentConfig as callAgentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { s3Bucket, s3Unavailable } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload, waitProcessed } from '../knowledge-base/helpers.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';
import { agentConfig, insertAgent, insertEndedCall, makeWav } from '../post-call/helpers.ts';
import { listen, startReceiver } from '../helpers/http.ts';

const QUEUE = 's3-real-test';
const MB100 = 100 * 1024 * 1024;
const s3test = s3Unavailable ? test.skip : test.serial;
if (s3Unavailable) console.warn(`[s3.test] S3 tests skipped: ${s3Unavailable}`);

let s: TestServer;
let worker: RunningWorker;
let org: { orgId: string; apiKey: string };

const factory: EngineFactory = async () => fakeEngines({
  stt: { utterances: ['what are your opening hours'] },
  llm: [{ text: 'We are open from nine to five.', firstTokenMs: 30 }],
});

test.before(async () => {
  if (s3Unavailable) return;
  const env = await s3Bucket('vas-s3');
  s = await startTestServer({ env: { ...env, TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }, media: { engines: factory } });
  worker = await startTestWorker(s, QUEUE);
  org = await s.createOrg({ name: 'S3', balanceUsd: 20 });
});
test.after.always(async () => {
  await worker?.close();
  await s?.close();
});

/** multipart/form-data for an S3 POST: the policy fields, then the file as the last part. */
function postForm(fields: Record<string, string>, body: Buffer | Blob, type: string): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', body instanceof Blob ? body : new Blob([new Uint8Array(body)], { type }), 'upload');
  return fd;
}

s3test('storage backend on the S3 server: objects, not-found, public prefixes, presigned PUT and size-capped POST', async (t) => {
  const st = s.storage;
  t.is(st.kind, 's3');
  t.deepEqual(await st.put('recordings/r1.wav', makeWav(0.5, 8000)), { bytes: 44 + 8000 });
  t.deepEqual(await st.put('spool/s1.bin', Readable.from([Buffer.from('ab'), Buffer.from('cd')])), { bytes: 4 });
  t.is((await st.get('spool/s1.bin')).toString(), 'abcd');
  t.deepEqual(await st.stat('spool/s1.bin'), { bytes: 4 });
  t.is(await st.stat('spool/absent.bin'), null);
  await t.throwsAsync(st.get('spool/absent.bin'), { instanceOf: StorageNotFoundError });
  await st.delete('spool/s1.bin');
  await st.delete('spool/s1.bin');
  t.false(await st.exists('spool/s1.bin'));

  // Published prefixes are readable without credentials, with the stored content type; documents are not.
  const pub = await fetch(st.publicUrl('recordings/r1.wav'));
  t.is(pub.status, 200);
  t.is(pub.headers.get('content-type'), 'audio/wav');
  await st.put('documents/o/d/secret.txt', Buffer.from('private'));
  t.is((await fetch(st.publicUrl('documents/o/d/secret.txt'))).status, 403);

  // Presigned PUT: the signed content type is enforced by the server.
  const putUrl = await st.presignPut('uploads/u1.txt', { contentType: 'text/plain', maxBytes: 1000, expiresInS: 60 });
  t.is((await fetch(putUrl, { method: 'PUT', headers: { 'content-type': 'text/csv' }, body: 'x' })).status, 403);
  t.is((await fetch(putUrl, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' })).status, 200);
  t.is((await st.get('uploads/u1.txt')).toString(), 'hello');

  // Presigned POST: the policy's content-length-range is enforced by the server itself.
  const post = await st.presignPost!('uploads/u2.txt', { contentType: 'text/plain', maxBytes: 1000, expiresInS: 60 });
  const over = await fetch(post.url, { method: 'POST', body: postForm(post.fields, Buffer.alloc(1001, 'a'), 'text/plain') });
  t.is(over.status, 400);
  t.regex(await over.text(), /<Code>EntityTooLarge<\/Code>/);
  t.false(await st.exists('uploads/u2.txt'));
  const wrongType = await fetch(post.url, { method: 'POST', body: postForm({ ...post.fields, 'Content-Type': 'text/csv' }, Buffer.from('x'), 'text/csv') });
  t.is(wrongType.status, 403, 'a field outside the signed policy is refused');
  const ok = await fetch(post.url, { method: 'POST', body: postForm(post.fields, Buffer.alloc(1000, 'a'), 'text/plain') });
  t.is(ok.status, 204);
  t.deepEqual(await st.stat('uploads/u2.txt'), { bytes: 1000 });
});

s3test('knowledge base: upload URL (PUT and POST), process-document ingests from the bucket, POST /files stores there', async (t) => {
  const r = await s.request('POST', '/knowledge-base/upload-url', { key: org.apiKey, body: { filename: 'Hours.md', mime_type: 'text/markdown' } });
  t.is(r.status, 200);
  const u = r.body as { upload_url: string; document_uuid: string; s3_key: string; upload_form: { url: string; fields: Record<string, string> } };
  t.is(u.s3_key, `documents/${org.orgId}/${u.document_uuid}/Hours.md`);
  t.true(u.upload_url.startsWith(`${s.config.S3_ENDPOINT}/${s.config.S3_BUCKET}/${u.s3_key}?`), u.upload_url);
  const expires = new URL(u.upload_url).searchParams.get('X-Amz-Expires');
  t.is(expires, '1800');
  t.is(u.upload_form.fields.key, u.s3_key);
  const policy = JSON.parse(Buffer.from(u.upload_form.fields.Policy!, 'base64').toString()) as { expiration: string; conditions: unknown[] };
  t.deepEqual(policy.conditions.find((c) => Array.isArray(c) && c[0] === 'content-length-range'), ['content-length-range', 0, MB100]);
  const inMin = (Date.parse(policy.expiration) - Date.now()) / 60_000;
  t.true(inMin > 29 && inMin <= 30, `policy expires in ${inMin} min`);

  const text = '# Opening hours\n\nThe bakery opens at seven on weekdays.\n\n# Delivery\n\nWe deliver bread within ten kilometres.\n';
  t.is((await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/markdown' }, body: text })).status, 200);
  const p = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: u.document_uuid, s3_key: u.s3_key } });
  t.is(p.status, 201);
  t.is(p.body.bytes, Buffer.byteLength(text));
  const done = await waitProcessed(s, u.document_uuid, org.apiKey);
  t.is(done.status, 'completed');
  t.is(done.totalChunks, 2);

  // The same through the POST form.
  const v = (await s.request('POST', '/knowledge-base/upload-url', { key: org.apiKey, body: { filename: 'faq.txt', mime_type: 'text/plain' } })).body;
  const posted = await fetch(v.upload_form.url, { method: 'POST', body: postForm(v.upload_form.fields, Buffer.from('Refunds are possible within fourteen days.'), 'text/plain') });
  t.is(posted.status, 204);
  t.is((await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: v.document_uuid, s3_key: v.s3_key } })).status, 201);
  t.is((await waitProcessed(s, v.document_uuid, org.apiKey)).status, 'completed');

  // POST /files: multipart through the API, stored in the bucket, ingested from there.
  const f = await upload(s, [{ name: 'file', filename: 'notes.txt', contentType: 'text/plain', value: Buffer.from('The warehouse is in Leeds.') }], org.apiKey);
  t.is(f.status, 201);
  t.is((await waitProcessed(s, f.body.id, org.apiKey)).status, 'completed');
  const key = await s.db.oneFirst(sql.type(z.object({ storage_key: z.string() }))`SELECT storage_key FROM documents WHERE id = ${f.body.id}`);
  t.is((await s.storage.get(key)).toString(), 'The warehouse is in Leeds.');
});

s3test('100 MB: the S3 server refuses 100 MB + 1 byte through upload_form; an over-size PUT is refused at process-document', async (t) => {
  const u = (await s.request('POST', '/knowledge-base/upload-url', { key: org.apiKey, body: { filename: 'big.txt', mime_type: 'text/plain' } })).body;
  const big = new Blob([new Uint8Array(MB100 + 1).fill(97)], { type: 'text/plain' });
  const over = await fetch(u.upload_form.url, { method: 'POST', body: postForm(u.upload_form.fields, big, 'text/plain') });
  t.is(over.status, 400);
  t.regex(await over.text(), /<Code>EntityTooLarge<\/Code>/);
  t.false(await s.storage.exists(u.s3_key));
  const none = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: u.document_uuid, s3_key: u.s3_key } });
  t.is(none.status, 404);

  // S3 cannot cap a presigned PUT: the object lands, and process-document refuses it and removes it.
  const put = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: big });
  t.is(put.status, 200);
  const refused = await s.request('POST', '/knowledge-base/process-document', { key: org.apiKey, body: { document_uuid: u.document_uuid, s3_key: u.s3_key } });
  t.deepEqual([refused.status, refused.body.detail], [400, 'File exceeds maximum size of 100MB']);
  t.false(await s.storage.exists(u.s3_key));
  const rows = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents WHERE id = ${u.document_uuid}`);
  t.is(rows, 0);
});

s3test('a WebSocket call: the recording and the transcript are published to the bucket and readable at the URLs given', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const config = callAgentConfig({ webhook: { url: `${receiver.url}/events` } });
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  await caller.oneTurn(/nine to five/);
  const ended = await endedRow(s.db, callId);

  const events = await receiver.waitFor(3);
  const completed = events.find((e) => e.json.event === 'call.completed')!.json;
  const base = `${s.config.S3_ENDPOINT}/${s.config.S3_BUCKET}`;
  t.is(completed.recordingUrl, `${base}/recordings/${callId}.wav`);
  const rec = await fetch(completed.recordingUrl);
  t.is(rec.status, 200);
  const wav = Buffer.from(await rec.arrayBuffer());
  const info = parseWavHeader(wav, wav.length);
  t.is(info.sampleRate, 24000);
  t.true(Math.abs(info.durationSeconds - ended.duration_seconds!) < 1.5, `recording ${info.durationSeconds}s vs call ${ended.duration_seconds}s`);
  t.true(new Int16Array(wav.buffer, wav.byteOffset + info.dataOffset, info.dataBytes / 2).some((x) => Math.abs(x) > 1000));
  t.true(completed.transcriptUrl.startsWith(`${base}/transcripts/`), completed.transcriptUrl);
  t.deepEqual(await (await fetch(completed.transcriptUrl)).json(), { messages: ended.transcript });
});

s3test('a carrier transfer recording is downloaded and re-hosted in the bucket', async (t) => {
  const wav = makeWav(2.5, 8000);
  const carrier = await listen((req, res) => {
    if (req.headers.authorization !== 'Basic QUM6c2VjcmV0') return void res.writeHead(401).end();
    res.writeHead(200, { 'content-type': 'audio/x-wav', 'content-length': String(wav.length) }).end(wav);
  });
  t.teardown(() => carrier.close());
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const agent = await insertAgent(s.db, org.orgId, { webhookUrl: receiver.url, secret: 's3-secret' });
  const callId = await insertEndedCall(s.db, { orgId: org.orgId, agent, config: agentConfig({ webhookUrl: receiver.url }), endedReason: 'transferred' });
  const transfer = { transferId: 'tr_s3', destination: '+14155550100', carrierCallId: 'CA0123456789abcdef' };
  const handle = await s.temporal!.client.workflow.start<typeof transferRecordingWorkflow>('transferRecordingWorkflow', {
    workflowId: transferRecordingWorkflowId(callId), taskQueue: QUEUE,
    args: [{ callId, telephonyProvider: 'twilio', transfer, recording: { url: `${carrier.url}/Recordings/RE1.wav`, headers: { authorization: 'Basic QUM6c2VjcmV0' } }, retry: { windowS: 30, initialIntervalS: 1, maximumIntervalS: 1 } }],
  });
  await s.temporal!.client.workflow.signalWithStart<typeof postCallWorkflow, [{ callId: string }]>('postCallWorkflow', {
    workflowId: postCallWorkflowId(callId), taskQueue: QUEUE, args: [{ callId }], signal: callEndedSignal, signalArgs: [{ callId }],
  });
  const outcome = await handle.result();
  const url = `${s.config.S3_ENDPOINT}/${s.config.S3_BUCKET}/recordings/${callId}-transfer.wav`;
  t.deepEqual(outcome, { event: 'call.transfer_recording.completed', recordingUrl: url, durationSeconds: 2.5 });
  const res = await fetch(url);
  t.is(res.status, 200);
  t.true(Buffer.from(await res.arrayBuffer()).equals(wav));
});
