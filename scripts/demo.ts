// `npm run demo`: a whole voice call on this machine, no accounts or keys needed. It boots the service (embedded
// PostgreSQL, api + media on a free port, local storage; Temporal is not needed), creates an organization and an
// API key, creates an agent on the local engines through the real API (POST /agents), places a WebSocket call
// (POST /call → audioUrl), speaks an eSpeak-synthesized caller sentence into it, prints the live events and
// writes the agent's reply audio to demo-output/reply.wav (and the whole agent side to demo-output/agent.wav).
//
// Against a running service instead: DEMO_BASE_URL=http://localhost:8080/api/v1 DEMO_API_KEY=vak_… npm run demo
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { createLocalTts } from '../media/services/tts/local.ts';
import { modelInstalled } from '../media/services/model-files.ts';
import { resample } from '../core/audio/resample.ts';
import { wavHeader } from '../core/audio/wav.ts';

const CALLER_SENTENCE = process.env.DEMO_SENTENCE ?? 'what time is it';
const OUT_DIR = path.resolve(process.env.DEMO_OUT ?? 'demo-output');
const say = (m: string) => process.stdout.write(`${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let baseUrl = process.env.DEMO_BASE_URL?.replace(/\/+$/, '') ?? '';
let apiKey = process.env.DEMO_API_KEY ?? '';
let shutdown: () => Promise<void> = async () => {};

if (!baseUrl) {
  say('· booting the service (embedded PostgreSQL, api + media, local engines)…');
  const { startEmbeddedPostgres, freePort } = await import('./infra.ts');
  const { createDb, sql } = await import('../core/db/pool.ts');
  const { migrate } = await import('../core/db/migrate.ts');
  const { loadConfig } = await import('../core/config.ts');
  const { createLogger } = await import('../core/logger.ts');
  const { createApiKey, createOrganization } = await import('../core/orgs.ts');
  const { startCombined } = await import('./server.ts');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vas-demo-'));
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), persistent: false });
  const admin = await createDb(pg.url(), { maximumPoolSize: 1 });
  await admin.query(sql.unsafe`CREATE DATABASE demo`);
  await admin.end();
  await migrate(pg.url('demo'));
  const db = await createDb(pg.url('demo'));
  const port = await freePort();
  const config = loadConfig({ ...process.env, DATABASE_URL: pg.url('demo'), DATA_DIR: dir, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, TEMPORAL_ADDRESS: '', LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'demo' });
  const combined = await startCombined({ config, db, logger, temporal: null }, port, '127.0.0.1');
  const org = await createOrganization(db, { name: 'Demo organization', balanceUsd: 10 });
  apiKey = (await createApiKey(db, org.id, 'demo')).key;
  baseUrl = config.baseUrl;
  shutdown = async () => {
    await combined.close();
    await db.end();
    await pg.stop();
  };
}

async function api(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`${baseUrl}${p}`, {
    method,
    headers: { 'X-API-Key': apiKey, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json: unknown = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${p} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

function wav(pcm: Int16Array, rate: number): Buffer {
  const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  return Buffer.concat([wavHeader({ sampleRate: rate, channels: 1, bitsPerSample: 16, dataBytes: data.length }), data]);
}

let exitCode = 0;
try {
  // the best local engines installed: Whisper / Piper (installed by setup; PocketSphinx / eSpeak NG otherwise) and
  // Qwen2.5 0.5B when `npm run setup:llm` installed it (else the demo responder)
  const [whisper, piper, qwen] = await Promise.all([modelInstalled('whisper-tiny.en'), modelInstalled('piper-en_US-joe-medium'), modelInstalled('qwen2.5-coder-0.5b-instruct')]);
  const engines = { llm: qwen ? 'qwen2.5-coder-0.5b-instruct' : 'local-demo', stt: whisper ? 'whisper-tiny.en' : 'pocketsphinx', tts: piper ? 'piper' : 'espeak-ng' };
  const agent = await api('POST', '/agents', {
    name: 'Demo agent',
    // the local recogniser builds its vocabulary from the agent's texts: the prompt names what callers say
    systemPrompt: `You are the demo agent of a self-hosted voice agent service, on a phone call. Answer in one or two short spoken sentences. The time now is ${new Date().toISOString().slice(11, 16)} UTC. Callers ask: what time is it? what day is it? who are you? thank you, goodbye.`,
    llm: { provider: 'local', model: engines.llm },
    stt: { provider: 'local', model: engines.stt },
    tts: { provider: 'local', model: engines.tts },
    greeting: { firstMessages: ['Hello! This is the demo agent. Ask me what time it is.'] },
    noiseGate: { enabled: process.env.DEMO_NOISE_GATE === '1' },
  });
  say(`· agent ${agent.uuid} created (llm ${engines.llm}, stt ${engines.stt}, tts ${engines.tts})`);
  const call = await api('POST', '/call', { agentId: agent.uuid, transport: 'websocket' });
  say(`· call ${call.callId} created → ${call.audioUrl}`);

  const ws = new WebSocket(`${call.audioUrl}?api_key=${encodeURIComponent(apiKey)}`);
  const agentAudio: Int16Array[] = [];
  const reply: Int16Array[] = [];
  let capturing = false;
  /** the caller's question has been transcribed: agent audio from then on is the reply (not the greeting's end) */
  let heard = false;
  let lastAudio = 0;
  const t0 = performance.now();
  const stamp = () => `[${((performance.now() - t0) / 1000).toFixed(2).padStart(6)}s]`;
  ws.on('message', (data, binary) => {
    if (binary) {
      const b = data as Buffer;
      const pcm = new Int16Array(new Uint8Array(b).buffer);
      agentAudio.push(pcm);
      if (capturing && !heard) return;
      if (capturing) reply.push(pcm);
      lastAudio = performance.now();
      return;
    }
    const ev = JSON.parse(String(data)) as { type: string; payload?: { text: string; final?: boolean }; message?: string };
    if (ev.type === 'rtf-user-transcription' && ev.payload!.final) heard = true;
    if (ev.type === 'rtf-user-transcription') say(`${stamp()} caller${ev.payload!.final ? ' (final)' : '        '}: ${ev.payload!.text}`);
    else if (ev.type === 'rtf-bot-text') say(`${stamp()} agent          : ${ev.payload!.text}`);
    else say(`${stamp()} ${ev.type}: ${ev.message ?? JSON.stringify(ev)}`);
  });
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  say(`${stamp()} connected`);
  const waitQuiet = async (ms: number, max = 30_000) => {
    const start = performance.now();
    while (performance.now() - start < max) {
      if (lastAudio > 0 && performance.now() - lastAudio > ms) return;
      await sleep(50);
    }
  };
  // the caller is silent while the greeting plays (a real client streams its microphone all the time)
  const silence = Buffer.alloc(640);
  let streaming = true;
  const pending: { speech: Int16Array | null } = { speech: null };
  const mic = (async () => {
    const start = performance.now();
    for (let k = 0; streaming && ws.readyState === ws.OPEN; k++) {
      const s = pending.speech;
      if (s) {
        pending.speech = null;
        for (let i = 0; i < s.length && ws.readyState === ws.OPEN; i += 320, k++) {
          ws.send(Buffer.from(s.slice(i, i + 320).buffer));
          await sleep(Math.max(0, start + (k + 1) * 20 - performance.now()));
        }
      }
      ws.send(silence);
      await sleep(Math.max(0, start + (k + 1) * 20 - performance.now()));
    }
  })();

  await waitQuiet(1000);
  // synthesize the caller's sentence with eSpeak NG and resample to 16 kHz
  // The caller's voice: eSpeak's Klatt variant is what the offline recogniser hears best (word accuracy:
  // docs/benchmarks.md).
  const tts = createLocalTts({ languages: ['en'], voice: process.env.DEMO_CALLER_VOICE ?? 'en-us+klatt', wordsPerMinute: 150 });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(CALLER_SENTENCE, new AbortController().signal)) parts.push(p);
  const caller24 = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (caller24.set(p, o), o + p.length), 0);
  say(`${stamp()} caller speaks  : "${CALLER_SENTENCE}" (${(caller24.length / 24000).toFixed(2)} s of eSpeak audio)`);
  capturing = true;
  lastAudio = 0;
  pending.speech = resample(caller24, 24000, 16000);
  await waitQuiet(900, 45_000);
  capturing = false;

  mkdirSync(OUT_DIR, { recursive: true });
  const join = (xs: Int16Array[]) => {
    const all = new Int16Array(xs.reduce((a, p) => a + p.length, 0));
    xs.reduce((o, p) => (all.set(p, o), o + p.length), 0);
    return all;
  };
  const replyPcm = join(reply);
  writeFileSync(path.join(OUT_DIR, 'reply.wav'), wav(replyPcm, 24000));
  writeFileSync(path.join(OUT_DIR, 'agent.wav'), wav(join(agentAudio), 24000));
  say(`· wrote ${path.join(OUT_DIR, 'reply.wav')} (${(replyPcm.length / 24000).toFixed(2)} s) and agent.wav`);

  // say goodbye: the demo responder calls end_call, the agent says farewell and hangs up
  const bye: Int16Array[] = [];
  for await (const p of tts.synthesize('goodbye', new AbortController().signal)) bye.push(p);
  say(`${stamp()} caller speaks  : "goodbye"`);
  pending.speech = resample(join(bye), 24000, 16000);
  const end = await Promise.race([closed, sleep(15_000).then(() => null)]);
  streaming = false;
  await mic;
  if (!end) ws.close(1000);
  say(`${stamp()} closed ${end ? `${end.code}${end.reason ? ` ${end.reason}` : ''}` : '(by the demo)'}`);
  await sleep(500);
  const detail = await api('GET', `/calls/${call.callId}`);
  say(`· call row: status=${detail.status} endedReason=${detail.endedReason} connectionStatus=${detail.connectionStatus} duration=${detail.durationSeconds}s`);
  if (!replyPcm.length) {
    say('! no reply audio was captured');
    exitCode = 1;
  }
} catch (err) {
  exitCode = 1;
  say(`demo failed: ${(err as Error).stack ?? String(err)}`);
} finally {
  await shutdown();
}
process.exit(exitCode);
