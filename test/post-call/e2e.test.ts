// End to end: a real WebSocket call through media (fake engines) ends, media writes the row and the spool WAV and
// signal-with-starts postCall-<callId>; the worker publishes the WAV, stores the transcript, prices the call,
// summarises it with a fake OpenAI server and sends exactly one signed call.completed; the wallet is debited once.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { computeCost } from '../../core/pricing.ts';
import { parseWavHeader } from '../../core/audio/wav.ts';
import { signBody } from '../../core/webhook.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { fakeEngines } from '../fakes/engines.ts';
import { startFakeOpenAI } from './helpers.ts';
import { startReceiver } from '../helpers/http.ts';
import { startTestWorker, type RunningWorker } from '../helpers/worker.ts';

const QUEUE = 'post-call-e2e';
const SUMMARY = 'A caller asked about opening hours. The agent said the office is open from nine to five. The caller then hung up.';

let s: TestServer;
let llm: Awaited<ReturnType<typeof startFakeOpenAI>>;
let worker: RunningWorker;

// The fake engines stand in for OpenAI / ElevenLabs / Deepgram services so the call gets priced from the table.
const factory: EngineFactory = async () => {
  const e = fakeEngines({
    stt: { utterances: ['what are your opening hours'] },
    llm: [{ text: 'We are open from nine to five. Anything else?', firstTokenMs: 30 }],
  });
  Object.defineProperties(e.engines.llm, { provider: { value: 'openai' }, model: { value: 'gpt-4o-mini' } });
  Object.defineProperties(e.engines.tts, { provider: { value: 'elevenlabs' }, model: { value: 'eleven_flash_v2_5' } });
  Object.defineProperties(e.engines.stt, { provider: { value: 'deepgram' }, model: { value: 'flux-general-en' } });
  return e;
};

test.before(async () => {
  llm = await startFakeOpenAI(SUMMARY);
  s = await startTestServer({
    env: { TEMPORAL_TASK_QUEUE: QUEUE, OUTBOUND_ALLOW_HOSTS: '127.0.0.1', OPENAI_BASE_URL: llm.baseUrl, OPENAI_API_KEY: 'sk-e2e' },
    media: { engines: factory },
  });
  worker = await startTestWorker(s, QUEUE);
});

test.after.always(async () => {
  await worker?.close();
  await s?.close();
  await llm?.close();
});

test('a finished WebSocket call: playable WAV of the call length, transcript file, usage, cost, summary, one signed call.completed, one debit', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { orgId, apiKey } = await s.createOrg({ balanceUsd: 20 });
  const config = agentConfig({
    webhook: { url: `${receiver.url}/events`, headers: { 'X-Source': 'e2e' } },
    enableSummarization: true,
    llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.5, maxTokens: 100, prewarm: true },
  });
  const agent = await s.db.one(sql.type(z.object({ id: z.number(), uuid: z.string() }))`
    INSERT INTO agents (organization_id, name, config, webhook_secret) VALUES (${orgId}, 'e2e', ${JSON.stringify(config)}::jsonb, 'e2e-secret')
    RETURNING id, uuid`);
  const callId = await insertPendingCall(s.db, { orgId, config, agentId: agent.id, agentUuid: agent.uuid });

  const caller = TestCaller.connect(s.origin, callId, apiKey);
  await caller.oneTurn(/nine to five/);
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');

  const events = await receiver.waitFor(3);
  t.deepEqual(events.map((e) => e.json.event).sort(), ['call.completed', 'call.ended', 'call.started']);
  const completed = events.find((e) => e.json.event === 'call.completed')!;
  t.is(completed.headers['x-service-signature'], signBody('e2e-secret', completed.raw));
  t.is(completed.headers['x-source'], 'e2e');
  const p = completed.json;
  t.is(p.callId, callId);
  t.is(p.agentId, agent.uuid);
  t.is(p.endedReason, 'user_hangup');
  t.is(p.connectionStatus, 'completed');
  t.is(p.duration, ended.duration_seconds);
  t.is(p.summary, SUMMARY);
  t.deepEqual(p.transcript, ended.transcript);
  t.deepEqual(p.usage, ended.usage);
  t.is(p.usage.llm.provider, 'openai');

  // The recording: our storage, WAV, 24 kHz mono 16-bit, as long as the call.
  t.is(p.recordingUrl, `${s.config.cdnUrl}/recordings/${callId}.wav`);
  const rec = await fetch(p.recordingUrl);
  t.is(rec.status, 200);
  const wav = Buffer.from(await rec.arrayBuffer());
  const info = parseWavHeader(wav, wav.length);
  t.is(info.sampleRate, 24000);
  t.is(info.channels, 1);
  t.is(info.bitsPerSample, 16);
  t.true(Math.abs(info.durationSeconds - ended.duration_seconds!) < 1.5, `recording ${info.durationSeconds}s vs call ${ended.duration_seconds}s`);
  // Not silence: the greeting and the reply are in it.
  const pcm = new Int16Array(wav.buffer, wav.byteOffset + info.dataOffset, info.dataBytes / 2);
  t.true(pcm.some((v) => Math.abs(v) > 1000));

  const tr = await fetch(p.transcriptUrl);
  t.deepEqual(await tr.json(), { messages: ended.transcript });

  const cost = computeCost(ended.usage, { fallbackSttSeconds: ended.duration_seconds }).total;
  t.true(cost > 0);
  const row = await s.db.one(sql.type(z.object({ cost: z.number().nullable(), summary: z.string().nullable(), recording_url: z.string().nullable() }))`
    SELECT cost, summary, recording_url FROM calls WHERE id = ${callId}`);
  t.deepEqual(row, { cost, summary: SUMMARY, recording_url: p.recordingUrl });
  const debits = await s.db.any(sql.type(z.object({ amount_usd: z.number() }))`
    SELECT amount_usd FROM wallet_transactions WHERE call_id = ${callId} AND kind = 'call_debit'`);
  t.deepEqual(debits, [{ amount_usd: -cost }]);
  t.is(events.filter((e) => e.json.event === 'call.completed').length, 1);
});
