// The audio-recordings store over HTTP: WAV, MP3, OGG/Opus and WebM/Opus files made in the test with registry
// encoders are decoded once and kept as 24 kHz mono s16 (the stored audio is the uploaded signal: correlated);
// refusals name the problem and store nothing (unsupported, undecodable, too large, too long, no file); the list
// envelope and its 422s; archive; another organization's id is 404; agents and saved tools that reference an
// unknown, foreign or archived recording are refused with the path named, and references kept before the archive
// keep working.
import test from 'ava';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { BufferTarget, EncodedAudioPacketSource, EncodedPacket, Mp4OutputFormat, Output } from 'mediabunny';
import { readWav } from '../../core/audio/wav.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { multipart, type Part } from '../knowledge-base/helpers.ts';
import { chirp, findIn, mp3File, opusFile, wavFile } from './audio-files.ts';

let s: TestServer;
let a: { orgId: string; apiKey: string };
let b: { orgId: string; apiKey: string };
const engines = { llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } };

test.before(async () => {
  s = await startTestServer({ temporal: false });
  a = await s.createOrg({ name: 'A' });
  b = await s.createOrg({ name: 'B' });
});
test.after.always(async () => {
  await s?.close();
});

async function upload(parts: Part[], key = a.apiKey): Promise<{ status: number; body: any }> {
  const { body, contentType } = multipart(parts);
  const res = await fetch(`${s.baseUrl}/recordings`, { method: 'POST', headers: { 'content-type': contentType, 'x-api-key': key }, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed };
}

const file = (filename: string, value: Buffer, name?: string): Part[] => [
  { name: 'file', value, filename, contentType: 'application/octet-stream' },
  ...(name !== undefined ? [{ name: 'name', value: name }] : []),
];

async function created(filename: string, value: Buffer, name?: string, key = a.apiKey) {
  const r = await upload(file(filename, value, name), key);
  if (r.status !== 201) throw new Error(`upload ${filename}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { recording_id: string; name: string; duration_seconds: number; format: string; created_at: string };
}

/** The stored audio of a recording, fetched from its `url` in {cdn_url}. */
async function storedAudio(id: string, key = a.apiKey): Promise<Int16Array> {
  const got = await s.request('GET', `/recordings/${id}`, { key });
  const res = await fetch(got.body.url);
  if (res.status !== 200) throw new Error(`GET ${got.body.url}: ${res.status}`);
  const wav = readWav(new Uint8Array(await res.arrayBuffer()));
  if (wav.sampleRate !== 24_000) throw new Error(`stored at ${wav.sampleRate} Hz`);
  return wav.samples;
}

function storedObjects(): string[] {
  try {
    return readdirSync(path.join(s.config.storageDir, 'audio-messages'));
  } catch {
    return [];
  }
}

const SECONDS = 1.5;
const reference = chirp(SECONDS, 24_000);

test.serial('WAV, MP3, OGG/Opus and WebM/Opus uploads are decoded once into 24 kHz mono: 201, metadata, the same signal in storage', async (t) => {
  const cases: Array<{ filename: string; data: Buffer; format: string; min: number }> = [
    { filename: 'hello.wav', data: wavFile(chirp(SECONDS, 16_000), 16_000), format: 'wav', min: 0.99 },
    { filename: 'stereo-44k.wav', data: wavFile(chirp(SECONDS, 44_100), 44_100, 2), format: 'wav', min: 0.99 },
    { filename: 'clip.mp3', data: mp3File(chirp(SECONDS, 44_100), 44_100), format: 'mp3', min: 0.7 },
    { filename: 'clip.opus', data: await opusFile(chirp(SECONDS, 48_000), 'ogg'), format: 'ogg', min: 0.9 },
    { filename: 'clip.webm', data: await opusFile(chirp(SECONDS, 48_000), 'webm'), format: 'webm', min: 0.9 },
    // the container is recognised from the bytes, not the file name
    { filename: 'misnamed.mp3', data: wavFile(chirp(SECONDS, 8_000), 8_000), format: 'wav', min: 0.99 },
  ];
  for (const c of cases) {
    const r = await upload(file(c.filename, c.data));
    t.is(r.status, 201, `${c.filename}: ${JSON.stringify(r.body)}`);
    t.deepEqual(Object.keys(r.body).sort(), ['created_at', 'duration_seconds', 'format', 'name', 'recording_id']);
    t.is(r.body.format, c.format, c.filename);
    t.is(r.body.name, c.filename.replace(/\.[^.]+$/, ''), 'the name defaults to the file name without its extension');
    t.true(Math.abs(r.body.duration_seconds - SECONDS) <= 0.06, `${c.filename}: ${r.body.duration_seconds} s`);
    t.regex(r.body.created_at, /^\d{4}-\d\d-\d\dT/);
    const audio = await storedAudio(r.body.recording_id);
    const { score } = findIn(audio, reference.subarray(1200, reference.length - 1200));
    t.true(score >= c.min, `${c.filename}: the stored audio is the uploaded chirp (correlation ${score.toFixed(3)})`);
  }
});

test.serial('GET one: metadata and the audio url in {cdn_url}; the name field; list envelope, status filter, 422s; archive', async (t) => {
  const one = await created('x.wav', wavFile(chirp(0.5, 24_000), 24_000), '  Goodbye jingle ');
  t.is(one.name, 'Goodbye jingle');
  const got = await s.request('GET', `/recordings/${one.recording_id}`, { key: a.apiKey });
  t.is(got.status, 200);
  t.like(got.body, { recording_id: one.recording_id, name: 'Goodbye jingle', format: 'wav', duration_seconds: 0.5, status: 'active', archived_at: null, sample_rate: 24000 });
  t.is(got.body.url, `${s.config.cdnUrl}/audio-messages/${one.recording_id}.wav`);
  const audio = await fetch(got.body.url);
  t.is(audio.headers.get('content-type'), 'audio/wav');
  t.is((await audio.arrayBuffer()).byteLength, 44 + 0.5 * 24_000 * 2);

  const page = await s.request('GET', '/recordings?per_page=2&page=1', { key: a.apiKey });
  t.is(page.status, 200);
  t.deepEqual(Object.keys(page.body).sort(), ['items', 'page', 'perPage', 'total', 'totalPages']);
  t.is(page.body.items.length, 2);
  t.is(page.body.perPage, 2);
  t.is(page.body.totalPages, Math.ceil(page.body.total / 2));
  t.is(page.body.items[0].recording_id, one.recording_id, 'newest first');
  t.truthy(page.body.items[0].url);
  for (const bad of ['per_page=0', 'per_page=101', 'page=0', 'page=abc', 'status=gone']) {
    const r = await s.request('GET', `/recordings?${bad}`, { key: a.apiKey });
    t.is(r.status, 422, bad);
    t.true(Array.isArray(r.body.detail), bad);
    t.is(r.body.detail[0].loc[0], 'query', bad);
  }

  const before = page.body.total as number;
  const del = await s.request('DELETE', `/recordings/${one.recording_id}`, { key: a.apiKey });
  t.is(del.status, 200);
  t.like(del.body, { recording_id: one.recording_id, status: 'archived' });
  t.truthy(del.body.archived_at);
  const again = await s.request('DELETE', `/recordings/${one.recording_id}`, { key: a.apiKey });
  t.is(again.status, 200, 'archiving twice is not an error');
  t.is(again.body.archived_at, del.body.archived_at);
  t.is((await s.request('GET', '/recordings', { key: a.apiKey })).body.total, before - 1, 'archived recordings leave the default list');
  const archived = await s.request('GET', '/recordings?status=archived', { key: a.apiKey });
  t.true(archived.body.items.some((i: { recording_id: string }) => i.recording_id === one.recording_id));
  t.is((await s.request('GET', '/recordings?status=all', { key: a.apiKey })).body.total, before);
  t.is((await s.request('GET', `/recordings/${one.recording_id}`, { key: a.apiKey })).body.status, 'archived');
  t.is((await fetch(got.body.url)).status, 200, 'the audio stays available to the agents that play it');
});

test.serial("another organization's recording is 404 'Recording not found' on GET and DELETE, and absent from its list", async (t) => {
  const mine = await created('mine.wav', wavFile(chirp(0.3, 24_000), 24_000));
  for (const [method, p] of [['GET', `/recordings/${mine.recording_id}`], ['DELETE', `/recordings/${mine.recording_id}`], ['GET', '/recordings/not-a-uuid'], ['DELETE', '/recordings/00000000-0000-4000-8000-000000000000']] as const) {
    const r = await s.request(method, p, { key: b.apiKey });
    t.is(r.status, 404, `${method} ${p}`);
    t.deepEqual(r.body, { detail: 'Recording not found' });
  }
  t.false((await s.request('GET', '/recordings?status=all', { key: b.apiKey })).body.items.some((i: { recording_id: string }) => i.recording_id === mine.recording_id));
  t.is((await s.request('GET', `/recordings/${mine.recording_id}`, { key: a.apiKey })).body.status, 'active', 'the DELETE of another organization changed nothing');
});

/** Opus in an MP4 container: a real file of a format the store does not take. */
async function opusInMp4(): Promise<Buffer> {
  const out = new Output({ format: new Mp4OutputFormat(), target: new BufferTarget() });
  const src = new EncodedAudioPacketSource('opus');
  out.addAudioTrack(src);
  await out.start();
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'ascii');
  head[8] = 1;
  head[9] = 1;
  head.writeUInt32LE(48_000, 12);
  // one packet of digital silence (a valid Opus TOC + frame: code 0, SILK NB 20 ms, no payload → silence)
  await src.add(new EncodedPacket(new Uint8Array([0x08]), 'key', 0, 0.02), { decoderConfig: { codec: 'opus', numberOfChannels: 1, sampleRate: 48_000, description: new Uint8Array(head) } });
  await out.finalize();
  return Buffer.from(out.target.buffer!);
}

test.serial('refusals name the problem and store nothing: unsupported, undecodable, empty, no file, too large, too long, bad name', async (t) => {
  const total = async () => (await s.request('GET', '/recordings?status=all', { key: a.apiKey })).body.total as number;
  const before = await total();
  const objects = storedObjects().length;
  const ogg = await opusFile(chirp(0.5, 48_000), 'ogg');
  const wav = wavFile(chirp(0.5, 24_000), 24_000);
  const brokenWav = Buffer.concat([wav.subarray(0, 12), Buffer.from('fmt \u0002\u0000\u0000\u0000xx')]);
  const cases: Array<{ what: string; parts: Part[]; detail: RegExp }> = [
    { what: 'text', parts: file('notes.wav', Buffer.from('this is not audio at all, just words. '.repeat(50))), detail: /^Unsupported audio format: the file is not WAV, MP3, OGG\/Opus or WebM\/Opus$/ },
    { what: 'Opus in MP4', parts: file('clip.m4a', await opusInMp4()), detail: /^Unsupported audio format 'MP4'\. Allowed: WAV, MP3, OGG\/Opus or WebM\/Opus$/ },
    { what: 'broken WAV', parts: file('broken.wav', brokenWav), detail: /^The audio file could not be decoded/ },
    { what: 'truncated Ogg', parts: file('cut.ogg', ogg.subarray(0, 40)), detail: /could not be decoded|no audio|Unsupported/ },
    { what: 'empty file', parts: file('empty.wav', Buffer.alloc(0)), detail: /^The file is empty$/ },
    { what: 'no file part', parts: [{ name: 'name', value: 'x' }], detail: /'file' part/ },
    { what: 'blank name', parts: file('ok.wav', wav, '   '), detail: /^name must not be blank$/ },
    { what: 'long name', parts: file('ok.wav', wav, 'n'.repeat(256)), detail: /^name must be at most 255 characters$/ },
    { what: 'over 10 MB', parts: file('big.wav', Buffer.concat([wav, Buffer.alloc(10 * 1024 * 1024)])), detail: /^File exceeds maximum size of 10MB$/ },
    { what: '121 s WAV', parts: file('long.wav', wavFile(new Int16Array(8_000 * 121).fill(1000), 8_000)), detail: /^Audio exceeds maximum duration of 120 seconds$/ },
    { what: '125 s Opus', parts: file('long.ogg', await opusFile(chirp(125, 48_000, 300, 3000, 3000), 'ogg')), detail: /^Audio exceeds maximum duration of 120 seconds$/ },
  ];
  for (const c of cases) {
    const r = await upload(c.parts);
    t.is(r.status, 400, `${c.what}: ${JSON.stringify(r.body)}`);
    t.regex(String(r.body.detail), c.detail, c.what);
  }
  const notMultipart = await s.request('POST', '/recordings', { key: a.apiKey, body: { file: 'x' } });
  t.is(notMultipart.status, 400);
  t.is(await total(), before, 'no row was added');
  t.is(storedObjects().length, objects, 'no audio was stored');
  // exactly at the limit is fine
  const max = await upload(file('max.wav', wavFile(chirp(120, 8_000, 300, 3000, 3000), 8_000)));
  t.is(max.status, 201, JSON.stringify(max.body));
  t.is(max.body.duration_seconds, 120);
});

test.serial('agents and saved tools: an unknown, foreign or archived recording is refused naming the field; kept references survive the archive', async (t) => {
  const ok = await created('ok.wav', wavFile(chirp(0.3, 24_000), 24_000), 'Farewell');
  const foreign = await created('theirs.wav', wavFile(chirp(0.3, 24_000), 24_000), 'Theirs', b.apiKey);
  const gone = await created('gone.wav', wavFile(chirp(0.3, 24_000), 24_000), 'Gone');
  await s.request('DELETE', `/recordings/${gone.recording_id}`, { key: a.apiKey });
  const unknown = '7d3c1c0e-1111-4222-8333-444455556666';
  const endCall = (id: string) => ({ type: 'endCall', name: 'end_call', description: 'bye', config: { messageType: 'audio', audioRecordingId: id } });

  for (const [id, msg] of [[unknown, 'not found'], [foreign.recording_id, 'not found'], [gone.recording_id, 'is archived']] as const) {
    const r = await s.request('POST', '/agents', { key: a.apiKey, body: { name: 'audio bye', ...engines, tools: [endCall(id)] } });
    t.is(r.status, 400, JSON.stringify(r.body));
    const item = r.body.detail.details.find((d: { loc: unknown[] }) => d.loc.join('.') === 'tools.0.config.audioRecordingId');
    t.truthy(item, JSON.stringify(r.body));
    t.is(item.msg, `Recording '${id}' ${msg}`);
    const inline = await s.request('POST', '/call', { key: a.apiKey, body: { agent: { name: 'inline', ...engines, tools: [endCall(id)] } } });
    t.is(inline.status, 400, JSON.stringify(inline.body));
    t.regex(JSON.stringify(inline.body), /tools\.0\.config\.audioRecordingId/);
  }

  const agent = await s.request('POST', '/agents', { key: a.apiKey, body: { name: 'audio bye', ...engines, tools: [endCall(ok.recording_id)] } });
  t.is(agent.status, 201, JSON.stringify(agent.body));

  const savedDefs = [
    { path: 'definition.config.audioRecordingId', def: (id: string) => ({ type: 'endCall', config: { messageType: 'audio', audioRecordingId: id } }) },
    { path: 'definition.config.audioRecordingId', def: (id: string) => ({ type: 'transferCall', config: { destination: '+14155550100', messageType: 'audio', audioRecordingId: id } }) },
    {
      path: 'definition.config.customMessageRecordingId',
      def: (id: string) => ({ type: 'function', config: { method: 'GET', url: 'https://api.example.com/x', customMessageType: 'audio', customMessageRecordingId: id } }),
    },
  ];
  const toolIds: string[] = [];
  for (const d of savedDefs) {
    for (const id of [unknown, foreign.recording_id, gone.recording_id]) {
      const r = await s.request('POST', '/tools', { key: a.apiKey, body: { name: 'audio tool', definition: d.def(id) } });
      t.is(r.status, 422, JSON.stringify(r.body));
      t.deepEqual(r.body.detail.map((i: { loc: unknown[] }) => i.loc.join('.')), [`body.${d.path}`]);
    }
    const r = await s.request('POST', '/tools', { key: a.apiKey, body: { name: 'audio tool', definition: d.def(ok.recording_id) } });
    t.is(r.status, 200, JSON.stringify(r.body));
    toolIds.push(r.body.tool_uuid);
  }

  // archive the recording the agent and the tools play: they keep it, nothing new may reference it
  await s.request('DELETE', `/recordings/${ok.recording_id}`, { key: a.apiKey });
  const patched = await s.request('PATCH', `/agents/${agent.body.uuid}`, { key: a.apiKey, body: { name: 'renamed' } });
  t.is(patched.status, 200, JSON.stringify(patched.body));
  const call = await s.request('POST', '/call', { key: a.apiKey, body: { agentId: agent.body.uuid } });
  t.is(call.status, 200, JSON.stringify(call.body));
  const put = await s.request('PUT', `/tools/${toolIds[0]}`, { key: a.apiKey, body: { description: 'still', definition: savedDefs[0]!.def(ok.recording_id) } });
  t.is(put.status, 200, JSON.stringify(put.body));
  const fresh = await s.request('POST', '/agents', { key: a.apiKey, body: { name: 'new', ...engines, tools: [endCall(ok.recording_id)] } });
  t.is(fresh.status, 400, 'a new reference to the archived recording is refused');
  const newTool = await s.request('POST', '/tools', { key: a.apiKey, body: { name: 'n', definition: savedDefs[0]!.def(ok.recording_id) } });
  t.is(newTool.status, 422);
  // a recording only named in another mode is not a reference
  const textMode = await s.request('POST', '/tools', { key: a.apiKey, body: { name: 't', definition: { type: 'endCall', config: { messageType: 'custom', customMessage: 'Bye', audioRecordingId: unknown } } } });
  t.is(textMode.status, 200, JSON.stringify(textMode.body));
});

test('the stored audio is exactly 24 kHz: a 24 kHz WAV comes back sample for sample', async (t) => {
  const pcm = chirp(0.4, 24_000);
  const r = await created('exact.wav', wavFile(pcm, 24_000));
  t.deepEqual(Array.from(await storedAudio(r.recording_id)), Array.from(pcm));
});

test('OpenAPI documents the store, with the fields the endpoints return', async (t) => {
  const doc = (await (await fetch(`${s.baseUrl}/openapi.json`)).json()) as { paths: Record<string, any> };
  t.truthy(doc.paths['/recordings']?.post?.requestBody.content['multipart/form-data']);
  t.truthy(doc.paths['/recordings']?.get);
  t.truthy(doc.paths['/recordings/{recording_id}']?.get);
  t.truthy(doc.paths['/recordings/{recording_id}']?.delete);
  const createdSchema = doc.paths['/recordings'].post.responses[201].content['application/json'].schema;
  const one = await created('doc.wav', wavFile(chirp(0.2, 24_000), 24_000));
  t.deepEqual(Object.keys(createdSchema.properties).sort(), Object.keys(one).sort());
  const itemSchema = doc.paths['/recordings/{recording_id}'].get.responses[200].content['application/json'].schema;
  const got = await s.request('GET', `/recordings/${one.recording_id}`, { key: a.apiKey });
  t.deepEqual(Object.keys(itemSchema.properties).sort(), Object.keys(got.body).sort());
});
