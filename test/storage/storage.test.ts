// core/storage: key validation, the local directory behind {cdn_url} (GET /cdn/<key>) and its HMAC-signed presigned
// PUT (/cdn-upload/<key>), the generated signing secret, and the S3 backend against a local fake S3 REST server.
import test from 'ava';
import http from 'node:http';
import { readFileSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../../core/config.ts';
import { createStorage, isValidKey, StorageNotFoundError, validateKey, InvalidStorageKeyError, type Storage } from '../../core/storage/index.ts';
import { hmacHex, signingSecret } from '../../core/storage/signing.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { listen } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

let s: TestServer;
test.before(async () => {
  s = await startTestServer({ temporal: false });
});
test.after.always(async () => {
  await s?.close();
});

/** A raw request (no URL normalisation by fetch), so traversal attempts reach the server as written. */
function raw(method: string, pathname: string, opts: { body?: Buffer | Readable; headers?: Record<string, string> } = {}): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  const u = new URL(s.origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: pathname, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), headers: res.headers }));
    });
    req.on('error', reject);
    if (opts.body instanceof Readable) opts.body.pipe(req);
    else req.end(opts.body);
  });
}
const detail = (b: Buffer) => JSON.parse(b.toString()).detail as string;

test('keys: traversal, absolute paths, backslashes and odd characters are refused', (t) => {
  for (const bad of ['', '../x', 'a/../b', 'a/./b', '..', '/etc/passwd', 'a\\b', '..\\x', 'a//b', 'a/', 'C:/x', 'a/b%2F..', 'sp ace', 'nul\u0000', 'ü/x']) {
    t.false(isValidKey(bad), JSON.stringify(bad));
    t.throws(() => validateKey(bad), { instanceOf: InvalidStorageKeyError });
  }
  for (const good of ['recordings/3f1e.wav', 'transcripts/x.json', 'documents/org_1/uuid/My-File_v2.pdf', 'a', 'a.b.c']) t.true(isValidKey(good), good);
});

test('local storage: put/get/stream/stat/exists/delete; bad keys throw before touching the disk', async (t) => {
  const st = s.storage;
  t.is(st.kind, 'local');
  t.deepEqual(await st.put('t/one.txt', Buffer.from('hello')), { bytes: 5 });
  t.deepEqual(await st.put('t/two.txt', Readable.from([Buffer.from('ab'), Buffer.from('cd')])), { bytes: 4 });
  t.is((await st.get('t/one.txt')).toString(), 'hello');
  const chunks: Buffer[] = [];
  for await (const c of await st.getStream('t/two.txt')) chunks.push(c as Buffer);
  t.is(Buffer.concat(chunks).toString(), 'abcd');
  t.deepEqual(await st.stat('t/two.txt'), { bytes: 4 });
  t.true(await st.exists('t/one.txt'));
  await st.delete('t/one.txt');
  await st.delete('t/one.txt');
  t.false(await st.exists('t/one.txt'));
  await t.throwsAsync(st.get('t/one.txt'), { instanceOf: StorageNotFoundError });
  await t.throwsAsync(st.getStream('t'), { instanceOf: StorageNotFoundError }, 'a directory is not an object');
  await t.throwsAsync(st.put('../escape.txt', Buffer.from('x')), { instanceOf: InvalidStorageKeyError });
  t.throws(() => st.publicUrl('/abs'), { instanceOf: InvalidStorageKeyError });
  t.is(st.publicUrl('recordings/x.wav'), `${s.origin}/cdn/recordings/x.wav`);
  // putFile: a file on disk stored under a key (copied by the kernel, the source left in place)
  const src = path.join(tempDir('vas-putfile-'), 'rec.wav');
  writeFileSync(src, Buffer.from('RIFF....WAVEdata'));
  t.deepEqual(await st.putFile('t/three.wav', src), { bytes: 16 });
  t.is((await st.get('t/three.wav')).toString(), 'RIFF....WAVEdata');
  t.is(readFileSync(src).toString(), 'RIFF....WAVEdata', 'the source stays');
  await t.throwsAsync(st.putFile('t/missing.wav', `${src}.none`), { code: 'ENOENT' });
  await t.throwsAsync(st.putFile('../escape.wav', src), { instanceOf: InvalidStorageKeyError });
  t.deepEqual(readdirSync(path.join(s.config.storageDir, 't')).sort(), ['three.wav', 'two.txt'], 'no temp files left behind');
});

test('GET /cdn/<key> serves recordings publicly with type, length and byte ranges; spool, documents and traversal are 404', async (t) => {
  const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(96, 7)]);
  await s.storage.put('recordings/abc.wav', wav);
  await s.storage.put('spool/recordings/abc.wav', wav);
  await s.storage.put('documents/org/doc/private.pdf', wav);
  const full = await raw('GET', '/cdn/recordings/abc.wav');
  t.is(full.status, 200);
  t.is(full.headers['content-type'], 'audio/wav');
  t.is(full.headers['content-length'], '100');
  t.true(full.body.equals(wav));
  const head = await raw('HEAD', '/cdn/recordings/abc.wav');
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  const part = await raw('GET', '/cdn/recordings/abc.wav', { headers: { range: 'bytes=0-3' } });
  t.is(part.status, 206);
  t.is(part.body.toString(), 'RIFF');
  t.is(part.headers['content-range'], 'bytes 0-3/100');
  t.is((await raw('GET', '/cdn/recordings/abc.wav', { headers: { range: 'bytes=500-' } })).status, 416);
  for (const p of ['/cdn/spool/recordings/abc.wav', '/cdn/documents/org/doc/private.pdf', '/cdn/recordings/nope.wav', '/cdn/../package.json', '/cdn/%2e%2e/%2e%2e/package.json',
    '/cdn/..%2f..%2fpackage.json', '/cdn/recordings%5c..%5c..%5cpackage.json', '/cdn//etc/passwd']) {
    const r = await raw('GET', p);
    t.is(r.status, 404, p);
    t.truthy(detail(r.body), p);
  }
});

test('local presigned PUT: upload works without an API key; signature, expiry, type and size are enforced', async (t) => {
  const url = await s.storage.presignPut('uploads/doc-1.pdf', { contentType: 'application/pdf', maxBytes: 1000, expiresInS: 1800 });
  const u = new URL(url);
  t.is(u.origin, s.origin);
  t.is(u.pathname, '/cdn-upload/uploads/doc-1.pdf');
  const target = `${u.pathname}${u.search}`;
  const pdf = Buffer.from('%PDF-1.4 test document');

  const wrongType = await raw('PUT', target, { body: pdf, headers: { 'content-type': 'text/plain' } });
  t.is(wrongType.status, 403);
  t.is(detail(wrongType.body), 'Content-Type must be application/pdf');

  const tampered = new URL(url);
  tampered.searchParams.set('max', '100000000');
  const t1 = await raw('PUT', `${tampered.pathname}${tampered.search}`, { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.is(t1.status, 403);
  t.is(detail(t1.body), 'Invalid upload signature');
  const otherKey = await raw('PUT', `/cdn-upload/uploads/other.pdf${u.search}`, { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.is(otherKey.status, 403);
  const unsigned = await raw('PUT', '/cdn-upload/uploads/doc-1.pdf', { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.is(unsigned.status, 403);

  const declaredTooBig = await raw('PUT', target, { body: Buffer.alloc(1001), headers: { 'content-type': 'application/pdf' } });
  t.is(declaredTooBig.status, 413);
  // Chunked (no Content-Length): the bytes are counted as they stream in.
  const streamedTooBig = await raw('PUT', target, { body: Readable.from([Buffer.alloc(600), Buffer.alloc(600)]), headers: { 'content-type': 'application/pdf' } });
  t.is(streamedTooBig.status, 413);
  t.false(await s.storage.exists('uploads/doc-1.pdf'), 'nothing kept from a refused upload');

  const ok = await raw('PUT', target, { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.is(ok.status, 200);
  t.deepEqual(JSON.parse(ok.body.toString()), { key: 'uploads/doc-1.pdf', bytes: pdf.length });
  t.true((await s.storage.get('uploads/doc-1.pdf')).equals(pdf));

  // A correctly signed URL whose expiry has passed.
  const expires = Math.floor(Date.now() / 1000) - 5;
  const sig = hmacHex(signingSecret(s.config), `PUT\nuploads/late.pdf\n${expires}\n1000\napplication/pdf`);
  const late = await raw('PUT', `/cdn-upload/uploads/late.pdf?expires=${expires}&max=1000&ct=application%2Fpdf&sig=${sig}`, { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.is(late.status, 403);
  t.is(detail(late.body), 'Upload URL expired');
  const bad = await raw('PUT', `/cdn-upload/../x.pdf${u.search}`, { body: pdf, headers: { 'content-type': 'application/pdf' } });
  t.true(bad.status === 400 || bad.status === 404 || bad.status === 403);
});

test('without SIGNING_SECRET one secret is generated into DATA_DIR and shared', (t) => {
  const dir = tempDir('vas-secret-');
  const a = signingSecret({ DATA_DIR: dir, SIGNING_SECRET: undefined });
  const file = path.join(dir, 'signing-secret');
  t.regex(a, /^[0-9a-f]{64}$/);
  t.is(readFileSync(file, 'utf8'), a);
  t.is(statSync(file).mode & 0o777, 0o600);
  t.is(signingSecret({ DATA_DIR: dir, SIGNING_SECRET: undefined }), a);
  t.is(signingSecret({ DATA_DIR: dir, SIGNING_SECRET: 'explicit-secret-0123456789' }), 'explicit-secret-0123456789');
});

/** A fake S3 REST endpoint (path-style): PutObject, GetObject, HeadObject, DeleteObject, SigV4 auth required. */
async function fakeS3(bucket: string) {
  const objects = new Map<string, { body: Buffer; type: string }>();
  const seen: string[] = [];
  const srv = await listen(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    const auth = req.headers.authorization ?? '';
    const presigned = u.searchParams.get('X-Amz-Algorithm') === 'AWS4-HMAC-SHA256' && (u.searchParams.get('X-Amz-Credential') ?? '').startsWith('AKIDTEST/');
    if (!auth.startsWith('AWS4-HMAC-SHA256 Credential=AKIDTEST/') && !presigned) {
      res.writeHead(403, { 'content-type': 'application/xml' }).end('<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>');
      return;
    }
    const prefix = `/${bucket}/`;
    if (!u.pathname.startsWith(prefix)) return void res.writeHead(404).end();
    const key = decodeURIComponent(u.pathname.slice(prefix.length));
    seen.push(`${req.method} ${key}${presigned ? ' (presigned)' : ''}`);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const obj = objects.get(key);
    const noSuchKey = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>${key}</Key><RequestId>1</RequestId></Error>`;
    switch (req.method) {
      case 'PUT':
        objects.set(key, { body: Buffer.concat(chunks), type: req.headers['content-type'] ?? 'binary/octet-stream' });
        return void res.writeHead(200, { etag: '"e"' }).end();
      case 'GET':
        if (!obj) return void res.writeHead(404, { 'content-type': 'application/xml' }).end(noSuchKey);
        return void res.writeHead(200, { 'content-type': obj.type, 'content-length': String(obj.body.length) }).end(obj.body);
      case 'HEAD':
        if (!obj) return void res.writeHead(404).end();
        return void res.writeHead(200, { 'content-type': obj.type, 'content-length': String(obj.body.length) }).end();
      case 'DELETE':
        objects.delete(key);
        return void res.writeHead(204).end();
      default:
        return void res.writeHead(405).end();
    }
  });
  return { ...srv, objects, seen };
}

test('S3 backend speaks the S3 REST API (fake endpoint): objects, not-found, public URL, presigned PUT', async (t) => {
  const s3 = await fakeS3('vas-bucket');
  t.teardown(() => s3.close());
  const config = loadConfig({
    S3_BUCKET: 'vas-bucket', S3_ENDPOINT: s3.url, S3_ACCESS_KEY_ID: 'AKIDTEST', S3_SECRET_ACCESS_KEY: 'secret-test-key',
    S3_PUBLIC_URL: 'https://cdn.example.com/media', DATA_DIR: tempDir('vas-s3-'),
  });
  const st: Storage = createStorage(config);
  t.is(st.kind, 's3');
  t.deepEqual(await st.put('recordings/r1.wav', Buffer.from('RIFFdata')), { bytes: 8 });
  t.is(s3.objects.get('recordings/r1.wav')?.type, 'audio/wav');
  t.deepEqual(await st.put('transcripts/t1.json', Readable.from([Buffer.from('{"messages":'), Buffer.from('[]}')]), { contentType: 'application/json' }), { bytes: 15 });
  t.is((await st.get('transcripts/t1.json')).toString(), '{"messages":[]}');
  t.deepEqual(await st.stat('recordings/r1.wav'), { bytes: 8 });
  const src = path.join(tempDir('vas-putfile-'), 'rec.wav');
  writeFileSync(src, Buffer.from('RIFF-from-disk'));
  t.deepEqual(await st.putFile('recordings/r2.wav', src, { contentType: 'audio/wav' }), { bytes: 14 });
  t.is(s3.objects.get('recordings/r2.wav')?.type, 'audio/wav');
  t.is((await st.get('recordings/r2.wav')).toString(), 'RIFF-from-disk');
  t.true(await st.exists('recordings/r1.wav'));
  t.false(await st.exists('recordings/none.wav'));
  await t.throwsAsync(st.get('recordings/none.wav'), { instanceOf: StorageNotFoundError });
  await st.delete('recordings/r1.wav');
  t.false(await st.exists('recordings/r1.wav'));
  t.is(st.publicUrl('recordings/r1.wav'), 'https://cdn.example.com/media/recordings/r1.wav');
  await t.throwsAsync(st.put('../x', Buffer.from('x')), { instanceOf: InvalidStorageKeyError });

  const url = await st.presignPut('uploads/u1.pdf', { contentType: 'application/pdf', maxBytes: 1000, expiresInS: 1800 });
  const pu = new URL(url);
  t.is(pu.searchParams.get('X-Amz-Expires'), '1800');
  t.true((pu.searchParams.get('X-Amz-SignedHeaders') ?? '').split(';').includes('content-type'));
  const up = await fetch(url, { method: 'PUT', body: 'pdfbytes', headers: { 'content-type': 'application/pdf' } });
  t.is(up.status, 200);
  t.is((await st.get('uploads/u1.pdf')).toString(), 'pdfbytes');
  t.true(s3.seen.includes('PUT uploads/u1.pdf (presigned)'));
});
