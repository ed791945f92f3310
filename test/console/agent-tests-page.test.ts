// The console's Tests page in the real headless Chromium (playwright-core), against a running service and worker,
// the agent and the simulated caller on the vendor fakes: a scenario added through the page's form, a run started
// from its button and followed to pass, the run's verdicts, transcript and the recording of its call, a text-mode
// run, and the agent page's link. Screenshots go to test-artifacts/console/. Without Chromium the test is skipped.
import test from 'ava';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.ts';
import { createWorker } from '../../activities/worker.ts';
import { createLogger } from '../../core/logger.ts';
import { createEngines } from '../../media/services/index.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { browserTest as browserTestOf, CHROMIUM, chromiumMissing } from '../helpers/browser.ts';
import { FakeVad } from '../fakes/engines.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-sse.ts';
import { startFakeAnthropic, type FakeVendor } from '../fakes/llm-vendors-sse.ts';
import { startDeepgramFake, type DeepgramFake } from '../fakes/stt/deepgram.ts';
import { startSonioxFake, type SonioxFake } from '../fakes/stt/soniox.ts';
import { FakeElevenLabs } from '../fakes/tts/elevenlabs.ts';
import { FakeCartesia } from '../fakes/tts/cartesia.ts';

const browserTest = browserTestOf('test/console');
const missing = chromiumMissing;
const ARTIFACTS = path.resolve('test-artifacts', 'console');
const QUEUE = 'console-agent-tests';
const CRITERIA = ['The agent greets the caller', 'The agent answers'];

let s: TestServer;
let worker: { run: Promise<void>; close(): Promise<void> } | null = null;
let browser: Browser;
let context: BrowserContext;
let key: string;
let agent: string;
const fakes: Partial<{ judge: FakeOpenAi; caller: FakeOpenAi; agent: FakeVendor; dg: DeepgramFake; sx: SonioxFake; el: FakeElevenLabs; ca: FakeCartesia }> = {};

type Dataset = { dataset: Record<string, string | undefined> };
type Win = { consolePage: { loaded: boolean }; location: { hash: string } };
const loaded = (page: Page) => page.waitForFunction(() => (globalThis as unknown as Win).consolePage.loaded);

async function open(hash: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => process.stderr.write(`[console page error] ${err.message}\n`));
  await page.goto(`${s.origin}/console${hash}`);
  await loaded(page);
  return page;
}

test.before(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  const verdicts = JSON.stringify({ verdicts: CRITERIA.map((criterion) => ({ criterion, passed: true, reason: 'It was said.' })) });
  fakes.judge = await startFakeOpenAi({ apiKey: 'sk-judge', defaultReply: { text: [verdicts] } });
  fakes.caller = await startFakeOpenAi({ apiKey: 'gsk-caller', defaultReply: { text: ['I would like to book a cleaning, please.'] } });
  fakes.agent = await startFakeAnthropic();
  fakes.dg = await startDeepgramFake({ apiKey: 'dg-key' });
  fakes.sx = await startSonioxFake({ apiKey: 'sx-key', endpointMs: 400 });
  fakes.el = await new FakeElevenLabs({ apiKey: 'el-key' }).listen();
  fakes.ca = await new FakeCartesia({ apiKey: 'ca-key' }).listen();
  const mediaEngines: EngineFactory = async ({ config, appConfig }) => ({ engines: createEngines(appConfig, config as never), vad: new FakeVad() });
  s = await startTestServer({
    env: {
      TEMPORAL_TASK_QUEUE: QUEUE,
      OPENAI_BASE_URL: fakes.judge.url, OPENAI_API_KEY: 'sk-judge', GROQ_BASE_URL: fakes.caller.url, GROQ_API_KEY: 'gsk-caller',
      ANTHROPIC_BASE_URL: fakes.agent.url, ANTHROPIC_API_KEY: 'ak',
      DEEPGRAM_BASE_URL: fakes.dg.url, DEEPGRAM_API_KEY: 'dg-key', SONIOX_BASE_URL: fakes.sx.url, SONIOX_API_KEY: 'sx-key',
      ELEVENLABS_BASE_URL: fakes.el.server.baseUrl, ELEVENLABS_API_KEY: 'el-key', CARTESIA_BASE_URL: fakes.ca.server.baseUrl, CARTESIA_API_KEY: 'ca-key',
    },
    media: { engines: mediaEngines },
  });
  key = (await s.createOrg({ balanceUsd: 50, ratePerMinute: 100_000 })).apiKey;
  const logger = createLogger({ level: 'silent' });
  const activities = createActivities({ config: s.config, db: s.db, logger, storage: s.storage, agentTests: { timing: { openerWaitMs: 3000, agentTurnEndMs: 700 } } });
  const { worker: w, connection }: { worker: Worker; connection: { close(): Promise<void> } } = await createWorker({ config: s.config, db: s.db, logger, taskQueue: QUEUE, activities });
  const run = w.run();
  worker = { run, close: async () => { w.shutdown(); await run.catch(() => undefined); await connection.close(); } };
  const a = await s.request('POST', '/agents', {
    key,
    body: {
      name: 'Front desk', greeting: { firstMessages: ['Hello, this is the front desk.'] },
      llm: { provider: 'anthropic', model: 'claude-haiku-4-5', prewarm: false }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' },
    },
  });
  agent = a.body.uuid;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required'] });
  context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.addInitScript((k) => localStorage.setItem('vas.apiKey', k), key);
});

test.after.always(async () => {
  await browser?.close();
  await worker?.close();
  await s?.close();
  await Promise.allSettled(Object.values(fakes).map((f) => f?.close()));
});

browserTest('Tests page: add a scenario, run it from the page, follow it to pass; the run shows verdicts, transcript and the call\'s recording', async (t) => {
  t.timeout(5 * 60_000);
  for (const f of ['tests.js']) t.is((await fetch(`${s.origin}/console/${f}`)).status, 200, f);
  // from the agent's page
  const page = await open(`#/agents/${agent}`);
  await page.click('#agent-tests');
  await page.waitForFunction(() => (globalThis as unknown as Win).location.hash.endsWith('/tests'));
  await loaded(page);
  t.regex((await page.textContent('#view')) ?? '', /No tests yet/);

  // a bad scenario: the API's 422 on the page, nothing created
  await page.fill('#new-test input[name=name]', 'Books a cleaning');
  await page.fill('#new-test textarea[name=scenario]', 'You want a teeth cleaning next Tuesday.');
  await page.fill('#new-test textarea[name=criteria]', '   ');
  await page.fill('#new-test input[name=maxTurns]', '2');
  await page.click('#new-test button[type=submit]');
  await page.waitForSelector('#new-test-result .message[data-status="422"]');
  t.regex((await page.textContent('#new-test-result')) ?? '', /criteria/);
  t.is((await s.request('GET', `/agents/${agent}/tests`, { key })).body.total, 0);

  await page.fill('#new-test textarea[name=criteria]', CRITERIA.join('\n'));
  await page.click('#new-test button[type=submit]');
  await page.waitForSelector('#criteria li');
  await loaded(page);
  t.deepEqual(await page.locator('#criteria li').allTextContents(), CRITERIA);
  const testId = (await s.request('GET', `/agents/${agent}/tests`, { key })).body.items[0].id;
  // the form makes a local-engine caller; here the caller runs on the vendor fakes (set through the API)
  const patched = await s.request('PATCH', `/agents/${agent}/tests/${testId}`, {
    key, body: { caller: { llm: { provider: 'groq', model: 'llama-3.3-70b-versatile' }, stt: { provider: 'soniox' }, tts: { provider: 'cartesia' } }, judge: { provider: 'openai' } },
  });
  t.is(patched.status, 200);
  await page.reload();
  await loaded(page);

  await page.click(`button[data-run="${testId}"][data-mode="audio"]`);
  await page.waitForSelector('#runs-table tr[data-run-row]');
  const runId = await page.getAttribute('#runs-table tr[data-run-row]', 'data-run-row');
  await page.waitForSelector(`#runs-table tr[data-run-row="${runId}"][data-status="passed"]`, { timeout: 120_000 });
  t.regex((await page.textContent(`#runs-table tr[data-run-row="${runId}"]`)) ?? '', /2 of 2/);
  await page.screenshot({ path: path.join(ARTIFACTS, 'agent-test-runs.png'), fullPage: true });

  await page.click(`#runs-table tr[data-run-row="${runId}"] a`);
  await page.waitForSelector('#verdicts li');
  await loaded(page);
  t.deepEqual(await page.locator('#verdicts li').evaluateAll((els) => els.map((e) => (e as unknown as Dataset).dataset.passed)), ['true', 'true']);
  t.regex((await page.textContent('#verdicts')) ?? '', /The agent greets the caller/);
  const roles = await page.locator('#run-transcript li').evaluateAll((els) => els.map((e) => (e as unknown as Dataset).dataset.role));
  t.deepEqual(roles, ['agent', 'caller', 'agent', 'caller', 'agent']);
  // the call's recording, once post-call has published it, plays in the page
  await page.waitForSelector('#run-recording', { timeout: 90_000 });
  const duration = await page.evaluate(() => new Promise<number>((resolve) => {
    const doc = (globalThis as unknown as { document: { getElementById(id: string): unknown } }).document;
    const a = doc.getElementById('run-recording') as { readyState: number; duration: number; addEventListener(e: string, f: () => void, o: object): void };
    if (a.readyState >= 1) resolve(a.duration);
    else a.addEventListener('loadedmetadata', () => resolve(a.duration), { once: true });
  }));
  t.true(duration > 1, `recording ${duration} s`);
  t.truthy(await page.getAttribute('#run-call', 'href'));
  await page.screenshot({ path: path.join(ARTIFACTS, 'agent-test-run.png'), fullPage: true });

  // the list shows the last run; a text-mode run from the list goes straight to the run page
  await page.goto(`${s.origin}/console#/agents/${agent}/tests`);
  await loaded(page);
  t.is(await page.getAttribute(`#tests-table tr[data-test="${testId}"] .badge`, 'data-value'), 'passed');
  await page.click(`#tests-table button[data-run="${testId}"][data-mode="text"]`);
  await page.waitForFunction(() => (globalThis as unknown as Win).location.hash.includes('/runs/'));
  await page.waitForSelector('#run-summary');
  await page.waitForSelector('h1 .badge[data-value="passed"]', { timeout: 60_000 });
  t.regex((await page.textContent('#run-summary')) ?? '', /text/);
  await page.close();
});
