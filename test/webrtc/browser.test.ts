// End to end in a real headless Chromium (Debian's `chromium`, driven by playwright-core): the call page at /call,
// a fake microphone playing an eSpeak WAV, an agent on the local engines (pocketsphinx, eSpeak, demo LLM) created
// through the API. Checks: greeting audio arrives (WebRTC inbound-rtp stats), the caller's words appear in the
// live transcript, hang-up ends the row user_hangup with a recording; a telephonySim test call; refused calls
// (402) and a denied microphone show their messages.
//
// Without Chromium these tests are skipped (reported as not run) and the reason is printed.
import test from 'ava';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Browser, Page } from 'playwright-core';
import { sql } from '../../core/db/pool.ts';
import { wavHeader } from '../../core/audio/wav.ts';
import { callerSpeech } from '../helpers/speech.ts';
import { callerOpusBandTotal } from '../../media/webrtc/metrics.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { browserTest as browserTestOf, CHROMIUM, chromiumMissing } from '../helpers/browser.ts';
import { endedRow, getCallRow } from '../helpers/calls.ts';
import { tempDir } from '../helpers/tmp.ts';
import { until } from '../helpers/wait.ts';

const browserTest = browserTestOf('test/webrtc/browser');
const missing = chromiumMissing;

let s: TestServer;
let org: { orgId: string; apiKey: string };
let agentUuid: string;
let browser: Browser;
let wavPath: string;

test.before(async () => {
  if (missing) return;
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'webrtc-browser-test' } });
  org = await s.createOrg();
  const agent = await s.request('POST', '/agents', {
    key: org.apiKey,
    body: {
      name: 'Browser test agent',
      systemPrompt: 'You are the demo agent. Answer briefly. Callers ask: what time is it? what day is it? who are you? thank you, goodbye.',
      llm: { provider: 'local', model: 'local-demo' },
      stt: { provider: 'local' },
      tts: { provider: 'local' },
      greeting: { firstMessages: ['Hello! Ask me what time it is.'], interruptible: false },
      noiseGate: { enabled: false },
    },
  });
  if (agent.status !== 201 && agent.status !== 200) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  agentUuid = agent.body.uuid;

  // the fake microphone loops this file: silence while the greeting plays, the question, then silence
  const rate = 48_000;
  const question = await callerSpeech('what time is it', { voice: 'en-us+klatt', rate: 48000 }); // Klatt: what the offline recogniser hears best
  const pcm = new Int16Array(rate * 8 + question.length + rate * 12);
  pcm.set(question, rate * 8);
  const dir = tempDir('vas-webrtc-');
  wavPath = path.join(dir, 'caller.wav');
  const data = Buffer.from(pcm.buffer);
  writeFileSync(wavPath, Buffer.concat([wavHeader({ sampleRate: rate, channels: 1, bitsPerSample: 16, dataBytes: data.length }), data]));

  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wavPath}`,
      '--autoplay-policy=no-user-gesture-required',
      '--no-sandbox',
    ],
  });
});

test.after.always(async () => {
  await browser?.close();
  await s?.close();
});

async function openPage(o: { mic?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext({ permissions: o.mic === false ? [] : ['microphone'] });
  const page = await context.newPage();
  page.on('pageerror', (err) => process.stderr.write(`[page error] ${err.message}\n`));
  page.on('console', (m) => process.stderr.write(`[page console] ${m.text()}\n`));
  await page.goto(`${s.origin}/call`);
  await page.fill('#api-key', org.apiKey);
  await page.click('#save-key');
  await page.waitForSelector(`#agent option[value="${agentUuid}"]`, { state: 'attached' });
  await page.selectOption('#agent', agentUuid);
  return page;
}

interface InboundAudio { packetsReceived: number; bytesReceived: number; totalSamplesReceived: number; totalAudioEnergy: number }

async function inbound(page: Page): Promise<InboundAudio | null> {
  return page.evaluate(() => (globalThis as unknown as { callPage: { inboundAudio(): Promise<InboundAudio | null> } }).callPage.inboundAudio());
}

const callIdOf = (page: Page) => page.evaluate(() => (globalThis as unknown as { callPage: { state: { callId: string } } }).callPage.state.callId);

browserTest('the call page: greeting heard, caller words in the live transcript, hang-up → user_hangup with a recording', async (t) => {
  const page = await openPage();
  t.is(await page.getAttribute('#api-key', 'type'), 'password');
  t.is(await page.evaluate(() => localStorage.getItem('vas.apiKey')), org.apiKey);
  await page.click('#call');
  await page.waitForSelector('body[data-phase="connected"]', { timeout: 20_000 });
  const callId = await callIdOf(page);
  t.regex(callId, /^[0-9a-f-]{36}$/);
  // the greeting: its text on the data channel, its audio as RTP the browser decoded
  await page.waitForSelector('#transcript li.agent >> text=Ask me what time it is', { timeout: 30_000 });
  const stats = await until(async () => {
    const st = await inbound(page);
    return st && st.packetsReceived > 100 && st.totalAudioEnergy > 0 ? st : null;
  }, { what: 'greeting audio in the browser', timeoutMs: 30_000 });
  t.true(stats.totalSamplesReceived > 48_000, `samples ${stats.totalSamplesReceived}`);
  // the microphone (the WAV) reaches the recogniser: the caller's words show up as a final user line
  const userLine = await page.waitForSelector('#transcript li.user:not(.interim)', { timeout: 45_000 });
  const heard = (await userLine.textContent()) ?? '';
  t.regex(heard.toLowerCase(), /time/);
  // the demo LLM answers the question
  await page.waitForSelector('#transcript li.agent:nth-child(n+2)', { timeout: 30_000 });
  // the level meters moved: the microphone while the question played, the agent's audio while it spoke
  const micPeak = await page.getAttribute('#mic-level', 'data-peak');
  t.true(Number(micPeak) > -50, `mic peak ${micPeak} dB`);
  const agentPeak = await page.getAttribute('#agent-level', 'data-peak');
  t.true(Number(agentPeak) > -50, `agent peak ${agentPeak} dB`);

  await page.click('#hangup');
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  t.true((row.duration_seconds ?? 0) > 1, `duration ${row.duration_seconds}`);
  t.true(row.transcript.some((e: { role: string; content: string }) => e.role === 'user' && /time/i.test(e.content)), JSON.stringify(row.transcript));
  const wav = await until(() => s.storage.get?.(`spool/recordings/${callId}.wav`).catch(() => null) ?? null, { what: 'recording', timeoutMs: 10_000 });
  t.true((wav as Buffer).length > 48_000, `recording ${(wav as Buffer).length} bytes`);
  // the page shows the ended row
  await page.waitForSelector('#result dd[data-field="Ended reason"] >> text=user_hangup', { timeout: 20_000 });
  await page.context().close();
  // Chromium read the answer's maxplaybackrate=16000 (RFC 7587) and capped its encoder: the microphone came as
  // wideband packets (SILK), none wider, so the server decodes less than a fullband stream costs
  const bands = await until(async () => {
    const m = (await callerOpusBandTotal.get()).values;
    return m.length ? Object.fromEntries(m.map((v) => [v.labels.band, v.value])) : null;
  }, { what: 'the call\'s Opus bands in /metrics', timeoutMs: 10_000 });
  t.log(`caller Opus packets by band: ${JSON.stringify(bands)}`);
  t.true((bands.wideband ?? 0) > 100, JSON.stringify(bands));
  t.is((bands.superwideband ?? 0) + (bands.fullband ?? 0), 0, JSON.stringify(bands));
});

browserTest('a telephonySim test call from the page', async (t) => {
  const page = await openPage();
  await page.check('#telephony-sim');
  await page.click('#call');
  await page.waitForSelector('body[data-phase="connected"]', { timeout: 20_000 });
  const callId = await callIdOf(page);
  await page.waitForSelector('#transcript li.agent', { timeout: 30_000 });
  await until(async () => ((await inbound(page))?.packetsReceived ?? 0) > 50, { what: 'greeting audio', timeoutMs: 30_000 });
  // the question, band-limited to 300–3400 Hz at 8 kHz µ-law, still reaches the recogniser
  await page.waitForSelector('#transcript li.user:not(.interim)', { timeout: 45_000 });
  await page.click('#hangup');
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  const stored = await s.db.one(sql.type(z.object({ telephony_sim: z.boolean(), tags: z.array(z.string()) }))`
    SELECT telephony_sim, tags FROM calls WHERE id = ${callId}`);
  t.true(stored.telephony_sim);
  t.true(stored.tags.includes('test_call'));
  await page.waitForSelector('#result dd[data-field="Phone-line simulation"] >> text=on', { timeout: 20_000 });
  await page.context().close();
});

browserTest('clear messages: a refused call (402 wallet) and a denied microphone', async (t) => {
  // 402: an organization without balance
  const poor = await s.createOrg({ name: 'poor', balanceUsd: 0 });
  const agent = await s.request('POST', '/agents', {
    key: poor.apiKey,
    body: { name: 'Poor agent', llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' } },
  });
  const page = await openPage();
  await page.fill('#api-key', poor.apiKey);
  await page.click('#save-key');
  await page.waitForSelector(`#agent option[value="${agent.body.uuid}"]`, { state: 'attached' });
  await page.selectOption('#agent', agent.body.uuid);
  await page.click('#call');
  const msg = await page.waitForSelector('#message:not([hidden])', { timeout: 20_000 });
  t.regex((await msg.textContent()) ?? '', /insufficient balance/i);
  t.is(await page.getAttribute('body', 'data-phase'), 'idle');
  await page.context().close();

  // a denied microphone: no call is placed
  const before = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.orgId}`);
  const denied = await openPage({ mic: false });
  await denied.click('#call');
  const m2 = await denied.waitForSelector('#message:not([hidden])', { timeout: 20_000 });
  t.regex((await m2.textContent()) ?? '', /Microphone access was denied/);
  const after = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls WHERE organization_id = ${org.orgId}`);
  t.is(after, before);
  await denied.context().close();
});

browserTest('the page is served at /call with its assets', async (t) => {
  const res = await fetch(`${s.origin}/call`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/html/);
  t.regex(await res.text(), /<script type="module" src="\/call\/app.js">/);
  t.is((await fetch(`${s.origin}/call/app.js`)).status, 200);
  t.is((await fetch(`${s.origin}/call/../core/config.ts`)).status, 404);
  void getCallRow;
});
