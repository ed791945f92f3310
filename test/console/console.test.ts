// The operator console (/console) in the real headless Chromium the call-page tests use (Debian's `chromium`,
// driven by playwright-core), against a running service with real data made through the API in this test:
//   • a browser test call placed from the Agents page through /call (fake microphone: an eSpeak WAV asking the
//     time, then "goodbye" → the agent's end_call tool), with a local webhook receiver that answers 500 to
//     call.completed, so the call page shows a recording, transcript, tool call, usage, deliveries and turn latency;
//   • a rejected call and a pending (live) WebSocket call for the filters and the live marker;
//   • two campaigns on the fake Twilio: one whose dials all fail (the circuit breaker trips), one whose contacts are
//     busy (retries waiting), paused and resumed from the page.
// Screenshots go to test-artifacts/console/ (gitignored). Without Chromium the tests are skipped (reported).
import test from 'ava';
import { breakerState, temporalUiWorkflowUrl } from '../../api/routes/console.ts';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { wavHeader } from '../../core/audio/wav.ts';
import { callerSpeech } from '../helpers/speech.ts';
import { carrierScript, csvOf, phoneList, setupOrg, startEnv, uploadCsv, waitForState, type Env, type Org } from '../campaigns/helpers.ts';
import { tempDir } from '../helpers/tmp.ts';
import { sql } from '../../core/db/pool.ts';
import { z } from 'zod';
import { until } from '../helpers/wait.ts';
import { browserTest as browserTestOf, CHROMIUM, chromiumMissing } from '../helpers/browser.ts';

const browserTest = browserTestOf('test/console');
const missing = chromiumMissing;

const ARTIFACTS = path.resolve('test-artifacts', 'console');
const TEMPORAL_UI = 'http://127.0.0.1:8233';

let env: Env;
let org: Org;
let browser: Browser;
let context: BrowserContext;
let localAgent: string;
let hooks: http.Server;
const received: string[] = [];
let browserCallId = '';
let breakerCampaign = 0;
let retryCampaign = 0;

async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function open(hash: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => process.stderr.write(`[console page error] ${err.message}\n`));
  await page.goto(`${env.s.origin}/console${hash}`);
  await loaded(page);
  return page;
}

/** Navigate inside the console and wait until the new route has drawn. */
async function go(page: Page, hash: string) {
  await page.evaluate((h) => {
    const w = globalThis as unknown as Win;
    w.consolePage.loaded = false;
    w.location.hash = h;
  }, hash);
  await loaded(page);
}

const rowCount = (page: Page) => page.locator('#calls-table tbody tr').count();
/**
 * The calls list's row ids (and the results' text), read in the same step that sees the route loaded and its results
 * drawn: read separately, under a full suite's load, they came from an empty results area (a render in progress)
 * three times, though a row, the empty message or the error had been there a moment before.
 */
async function drawnRows(page: Page): Promise<{ ids: Array<string | undefined>; text: string }> {
  const drawn = await page.waitForFunction(() => {
    const doc = (globalThis as unknown as { document: { querySelector(s: string): { children: { length: number }; textContent: string | null } | null; querySelectorAll(s: string): ArrayLike<Row> } }).document;
    const results = doc.querySelector('#call-results');
    if (!(globalThis as unknown as Win).consolePage.loaded || !results || results.children.length === 0) return null;
    return { ids: Array.from(doc.querySelectorAll('#calls-table tbody tr'), (r) => r.dataset.callId), text: results.textContent ?? '' };
  });
  return (await drawn.jsonValue())!;
}
type Row = { dataset: Record<string, string | undefined> };
/** the page's globals, as seen from functions playwright runs in it (the console's CSP forbids string evaluation) */
type Win = {
  consolePage: { loaded: boolean };
  location: { hash: string };
  document: { getElementById(id: string): { value?: string; currentTime?: number } | null };
};
const hashHas = (page: Page, part: string) => page.waitForFunction((p) => (globalThis as unknown as Win).location.hash.includes(p), part);
const loaded = (page: Page) => page.waitForFunction(() => (globalThis as unknown as Win).consolePage.loaded);

test.before(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  env = await startEnv('console-test', { env: { TEMPORAL_UI_URL: TEMPORAL_UI, CALL_JOIN_TIMEOUT_S: '900' } });
  org = await setupOrg(env, { numbers: 3 });

  // the agent's webhook target: call.started and call.ended are taken, call.completed fails with 500
  hooks = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += String(d); });
    req.on('end', () => {
      const event = (JSON.parse(body) as { event: string }).event;
      received.push(event);
      res.writeHead(event === 'call.completed' ? 500 : 200).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks?token=secret-in-query`;

  const agent = await env.s.request('POST', '/agents', {
    key: org.apiKey,
    body: {
      name: 'Front desk (local engines)',
      systemPrompt: 'You are the demo agent. Answer briefly.',
      llm: { provider: 'local', model: 'local-demo' },
      stt: { provider: 'local' },
      tts: { provider: 'local' },
      greeting: { firstMessages: ['Hello! Ask me what time it is.'], interruptible: false },
      noiseGate: { enabled: false },
      webhook: { url: hookUrl, headers: {} },
    },
  });
  if (agent.status !== 201 && agent.status !== 200) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  localAgent = agent.body.uuid;

  // the fake microphone: silence while the greeting plays, the question, silence for the answer, goodbye, silence
  const rate = 48_000;
  const question = await callerSpeech('what time is it', { voice: 'en-us+klatt', rate: 48000 });
  const bye = await callerSpeech('goodbye', { voice: 'en-us+klatt', rate: 48000 });
  const pcm = new Int16Array(rate * 7 + question.length + rate * 7 + bye.length + rate * 20);
  pcm.set(question, rate * 7);
  pcm.set(bye, rate * 14 + question.length);
  const dir = tempDir('vas-console-');
  const wavPath = path.join(dir, 'caller.wav');
  const data = Buffer.from(pcm.buffer);
  writeFileSync(wavPath, Buffer.concat([wavHeader({ sampleRate: rate, channels: 1, bitsPerSample: 16, dataBytes: data.length }), data]));

  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wavPath}`, '--autoplay-policy=no-user-gesture-required', '--no-sandbox'],
  });
  context = await browser.newContext({ permissions: ['microphone'], viewport: { width: 1400, height: 900 } });
});

test.after.always(async () => {
  await browser?.close();
  await env?.close();
  await new Promise((r) => (hooks ? hooks.close(r) : r(null)));
});

browserTest('the console is served at /console with its assets, same-origin only', async (t) => {
  const res = await fetch(`${env.s.origin}/console`);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/html/);
  t.regex(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  t.regex(await res.text(), /<script type="module" src="\/console\/app.js">/);
  for (const f of ['app.js', 'util.js', 'calls.js', 'call.js', 'agents.js', 'campaigns.js', 'numbers.js', 'style.css']) t.is((await fetch(`${env.s.origin}/console/${f}`)).status, 200, f);
  t.is((await fetch(`${env.s.origin}/console/../core/config.ts`)).status, 404);
  t.is((await fetch(`${env.s.origin}/console/nope.js`)).status, 404);
  t.is((await fetch(`${env.s.origin}/console`, { method: 'POST' })).status, 405);
});

browserTest('without a key the console asks for one; the key is kept in the browser like /call', async (t) => {
  const page = await open('#/calls');
  t.regex((await page.textContent('#view')) ?? '', /Enter an API key/);
  t.is(await page.getAttribute('#api-key', 'type'), 'password');
  await page.fill('#api-key', org.apiKey);
  await page.click('#save-key');
  await page.waitForSelector('#call-filters');
  t.is(await page.evaluate(() => localStorage.getItem('vas.apiKey')), org.apiKey);
  await page.close();
});

browserTest('Agents: list, a browser test call through /call, the call ends with the agent\'s end_call tool', async (t) => {
  const page = await open('#/agents');
  await page.waitForSelector(`#agents-table tr[data-agent="${localAgent}"]`);
  t.is(await page.locator('#agents-table tbody tr').count(), 2);
  await shot(page, 'agents');
  // "Test call" opens the call page with this agent chosen
  await page.click(`a[data-test-call="${localAgent}"]`);
  await page.waitForURL(/\/call\?agent=/);
  await page.waitForFunction((uuid) => (globalThis as unknown as Win).document.getElementById('agent')?.value === uuid, localAgent);
  await page.click('#call');
  await page.waitForSelector('body[data-phase="connected"]', { timeout: 30_000 });
  browserCallId = await page.evaluate(() => (globalThis as unknown as { callPage: { state: { callId: string } } }).callPage.state.callId);
  await page.waitForSelector('#transcript li.user:not(.interim)', { timeout: 60_000 });
  // "goodbye" → end_call: the agent hangs up; if the recogniser missed it, the caller hangs up instead
  const ended = await page.waitForSelector('body[data-phase="ended"]', { timeout: 60_000 }).then(() => true, () => false);
  if (!ended) await page.click('#hangup');
  // post-call processing publishes the recording and sends call.completed
  await until(async () => {
    const r = await env.s.request('GET', `/calls/${browserCallId}`, { key: org.apiKey });
    return r.body.recordingUrl && received.includes('call.completed') ? r.body : null;
  }, { what: 'recording and call.completed', timeoutMs: 120_000, everyMs: 300 });
  await page.close();
  t.pass();
});

browserTest('more calls and two campaigns, made through the API and the fake carrier', async (t) => {
  // a rejected attempt (no agent) and a pending WebSocket call (live until someone joins)
  const rejected = await env.s.request('POST', '/call', { key: org.apiKey, body: { transport: 'websocket', agentId: '00000000-0000-4000-8000-000000000000' } });
  t.is(rejected.status, 400, JSON.stringify(rejected.body));
  const pending = await env.s.request('POST', '/call', { key: org.apiKey, body: { transport: 'websocket', agentId: localAgent } });
  t.true(pending.status === 200 || pending.status === 201, JSON.stringify(pending.body));

  const breakerNumbers = phoneList(6, '+1650');
  const retryNumbers = phoneList(4, '+1651');
  carrierScript(env.fake, org.accountSid, (call) => (breakerNumbers.includes(call.to) ? { status: 'failed' } : { status: 'busy' }));
  const create = async (name: string, numbers: string[], extra: object) => {
    const source = await uploadCsv(env.s, org.apiKey, csvOf(numbers), `${name}.csv`);
    const r = await env.s.request('POST', '/campaign/create', {
      key: org.apiKey,
      body: { name, agent_uuid: org.agentUuid, source_type: 'csv', source_id: source, telephony_configuration_id: org.configId, max_concurrency: 2, ...extra },
    });
    if (r.status !== 200) throw new Error(`campaign ${r.status} ${JSON.stringify(r.body)}`);
    const started = await env.s.request('POST', `/campaign/${r.body.id}/start`, { key: org.apiKey });
    if (started.status !== 200) throw new Error(`start ${started.status} ${JSON.stringify(started.body)}`);
    return r.body.id as number;
  };
  breakerCampaign = await create('Spring renewals', breakerNumbers, { circuit_breaker: { failure_threshold: 0.5, min_calls_in_window: 3, window_seconds: 120 }, retry_config: { enabled: false } });
  retryCampaign = await create('Appointment reminders', retryNumbers, { retry_config: { max_retries: 2, retry_delay_seconds: 900 } });
  await waitForState(env.s, org.apiKey, breakerCampaign, 'paused');
  await until(async () => {
    const p = await env.s.request('GET', `/campaign/${retryCampaign}/progress`, { key: org.apiKey });
    return p.body.contacts.retry === retryNumbers.length ? p.body : null;
  }, { what: 'busy contacts waiting to retry', timeoutMs: 120_000, everyMs: 300 });
});

browserTest('Calls: filters, sort and pagination change the list; live calls are marked', async (t) => {
  const total = (await env.s.request('GET', '/calls?per_page=1', { key: org.apiKey })).body.total as number;
  t.true(total >= 6, `total ${total}`);
  const page = await open('#/calls');
  t.is(await rowCount(page), total);
  t.regex((await page.textContent('[data-pager="info"]')) ?? '', new RegExp(`${total} total`));
  // the pending WebSocket call is marked live
  t.true(await page.locator('tr.live-row [data-kind="live"]').count() >= 1);
  await shot(page, 'calls');

  // status=error (the rejected attempt and the failed dials), by ticking one box
  await Promise.all([hashHas(page, 'status=error'), page.check('input[name="status"][value="error"]')]);
  await loaded(page);
  const errors = await rowCount(page);
  t.true(errors >= 1 && errors < total, `errors ${errors} of ${total}`);
  for (const s of await page.locator('#calls-table tbody tr').evaluateAll((rows) => rows.map((r) => (r as unknown as Row).dataset.status))) t.is(s, 'error');
  const apiErrors = (await env.s.request('GET', '/calls?status=error&per_page=1', { key: org.apiKey })).body.total;
  t.is(errors, apiErrors);
  await shot(page, 'calls-status-error');

  // transport=web: only the browser test call
  await go(page, '#/calls?transport=web');
  t.is(await rowCount(page), 1);
  t.is(await page.getAttribute('#calls-table tbody tr', 'data-call-id'), browserCallId);
  t.true(await page.isChecked('input[name="transport"][value="web"]'));
  // ended reason and agent name controls
  await go(page, '#/calls');
  await page.fill('input[name="agent_name"]', 'front desk');
  await Promise.all([hashHas(page, 'agent_name='), page.click('#call-filters button[type="submit"]')]);
  await loaded(page);
  t.is(await rowCount(page), 2); // the test call and the pending WebSocket call
  // sort by duration, longest first: the browser call leads
  await go(page, '#/calls?sort_by=duration_seconds&sort_order=desc');
  t.is(await page.getAttribute('#calls-table tbody tr', 'data-call-id'), browserCallId);
  // an invalid value shows the API's own 422
  await go(page, '#/calls?sort_by=nope');
  t.regex((await page.textContent('#call-results')) ?? '', /sort_by/);

  // pagination: 3 per page, Next shows other calls
  await go(page, '#/calls?per_page=3');
  const { ids: first, text: shown } = await drawnRows(page);
  t.is(first.length, 3, shown);
  // as go() does: the flag down before the navigation, so the next page's own drawing is what is waited for
  await page.evaluate(() => {
    (globalThis as unknown as Win).consolePage.loaded = false;
  });
  await page.click('[data-pager="next"]');
  await hashHas(page, 'page=2');
  const { ids: second, text: shownNext } = await drawnRows(page);
  t.is(second.length, Math.min(3, total - 3), shownNext);
  t.false(second.some((id) => first.includes(id)));
  await page.close();
});

browserTest('Call: waveform with caller and agent apart, transcript on the timeline, tools, usage, webhooks, turn bars', async (t) => {
  const row = (await env.s.request('GET', `/calls/${browserCallId}`, { key: org.apiKey })).body;
  t.truthy(row.logs.timeline_started_at);
  t.true(row.logs.latency.length >= 1, JSON.stringify(row.logs.latency));
  writeFileSync(path.join(ARTIFACTS, 'call.json'), JSON.stringify(row, null, 2));
  const page = await open(`#/calls/${browserCallId}`);
  await page.waitForSelector('#waveform[data-drawn="true"]', { timeout: 30_000 });
  const cols = await page.$eval('#waveform', (c) => ({ caller: Number((c as unknown as Row).dataset.callerColumns), agent: Number((c as unknown as Row).dataset.agentColumns) }));
  t.true(cols.agent > 20, `agent columns ${cols.agent}`);
  t.true(cols.caller > 5, `caller columns ${cols.caller}`);
  // the transcript: greeting, the caller's question, the answer; each placed on the timeline
  const lines = await page.locator('#transcript li').count();
  t.true(lines >= 3, `lines ${lines}`);
  t.true(await page.locator('#timeline-marks .mark.assistant').count() >= 2);
  t.true(await page.locator('#timeline-marks .mark.user').count() >= 1);
  // click to seek: the user line's time
  const userAt = Number(await page.getAttribute('#timeline-marks .mark.user', 'data-at'));
  await page.click('#transcript li.user button.at');
  await page.waitForFunction((at) => Math.abs(((globalThis as unknown as Win).document.getElementById('recording')?.currentTime ?? -9) - at) < 1.5, userAt);
  // per-turn latency bars, one group per measured turn, stages as rectangles
  t.is(await page.locator('#latency-bars g[data-turn]').count(), row.logs.latency.length);
  t.true(await page.locator('#latency-bars rect[data-stage="stt"]').count() >= 1);
  t.true(await page.locator('#latency-bars rect[data-stage="llm"]').count() >= 1);
  t.true(await page.locator('#latency-bars rect[data-stage="tts"]').count() >= 1);
  // usage and cost
  t.true(await page.locator('#usage-table tr[data-usage="llm"]').count() >= 1);
  t.regex((await page.textContent('#cost')) ?? '', /\$/);
  // webhook deliveries: started and ended delivered, completed refused with 500; the target without its query
  await page.waitForSelector('#webhooks-table tr[data-event="call.completed"]');
  t.is(await page.getAttribute('#webhooks-table tr[data-event="call.started"]', 'data-ok'), 'true');
  t.is(await page.getAttribute('#webhooks-table tr[data-event="call.completed"]', 'data-ok'), 'false');
  t.regex((await page.textContent('#webhooks-table tr[data-event="call.completed"]')) ?? '', /HTTP 500/);
  const target = (await page.textContent('#webhooks-table')) ?? '';
  t.regex(target, /http:\/\/127\.0\.0\.1:\d+\/hooks/);
  t.notRegex(target, /secret-in-query/);
  if (row.endedReason === 'agent_hangup') t.true(await page.locator('#tools-table tr[data-tool="end_call"]').count() === 1);
  await shot(page, 'call');
  await page.close();
});

browserTest('Call: the analysis section shows the verdict and one row per structured-data field; a failed one says why', async (t) => {
  const schema = { type: 'object', properties: { confirmed: { type: 'boolean' }, day: { type: 'string' }, slots: { type: 'array', items: { type: 'string' } } }, required: ['confirmed'] };
  const snapshot = { name: 'Analysed', llm: { provider: 'openai', model: 'gpt-4o-mini' }, analysis: { structuredData: { schema, prompt: null }, successEvaluation: { rubric: 'pass_fail', prompt: null }, llm: null } };
  const analysed = { status: 'completed', structuredData: { confirmed: true, day: 'tuesday', slots: ['9:00', '10:30'] }, successEvaluation: { passed: true, reason: 'The caller confirmed Tuesday.' }, error: null, model: { provider: 'openai', model: 'gpt-4o-mini' } };
  const failed = { status: 'failed', structuredData: null, successEvaluation: null, error: 'the answer does not match the schema: /structuredData/confirmed must be boolean', model: { provider: 'openai', model: 'gpt-4o-mini' } };
  const ids: string[] = [];
  for (const a of [analysed, failed]) {
    ids.push(await env.s.db.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO calls (organization_id, agent_name, transport, status, connection_status, ended_reason, call_source, config_snapshot,
                         transcript, duration_seconds, started_at, ended_at, analysis, analysis_status, analysis_success)
      VALUES (${org.orgId}, 'Analysed', 'websocket', 'completed', 'completed', 'user_hangup', 'websocket', ${JSON.stringify(snapshot)}::jsonb,
              '[]'::jsonb, 12, now() - interval '20 seconds', now() - interval '8 seconds', ${JSON.stringify(a)}::jsonb, ${a.status}, ${a.status === 'completed' ? true : null})
      RETURNING id::text`));
  }
  const page = await open(`#/calls/${ids[0]}`);
  const summary = (await page.textContent('#call-analysis')) ?? '';
  t.regex(summary, /completed/);
  t.regex(summary, /passed.*The caller confirmed Tuesday\./);
  t.regex(summary, /openai \/ gpt-4o-mini/);
  t.is(await page.getAttribute('#call-analysis [data-verdict]', 'data-verdict'), 'true');
  t.deepEqual(await page.locator('#analysis-data tbody tr').evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { field: string } }).dataset.field)), ['confirmed', 'day', 'slots']);
  t.regex((await page.textContent('#analysis-data tr[data-field="slots"]')) ?? '', /\["9:00","10:30"\]/);
  await shot(page, 'call-analysis');
  await go(page, `#/calls/${ids[1]}`);
  t.regex((await page.textContent('#call-analysis')) ?? '', /failed.*confirmed must be boolean/s);
  t.is(await page.locator('#analysis-data').count(), 0);
  // the Calls list filters on the verdict and the analysis status
  await go(page, '#/calls?success=true');
  t.is(await rowCount(page), 1);
  t.is(await page.getAttribute('#calls-table tbody tr', 'data-call-id'), ids[0]!);
  await Promise.all([hashHas(page, 'analysis_status=failed'), page.selectOption('#call-filters select[name="analysis_status"]', 'failed')]);
  await loaded(page);
  t.is(await rowCount(page), 0, 'success=true and analysis_status=failed: none');
  await go(page, '#/calls?analysis_status=failed');
  t.is(await rowCount(page), 1);
  t.is(await page.getAttribute('#calls-table tbody tr', 'data-call-id'), ids[1]!);
  await page.close();
});

browserTest('Call: a call that never connected shows its rejection, no player; a live call is marked live', async (t) => {
  const rejected = (await env.s.request('GET', '/calls?tag=rejected', { key: org.apiKey })).body.items[0];
  const page = await open(`#/calls/${rejected.callId}`);
  t.regex((await page.textContent('#recording-status')) ?? '', /never connected/);
  t.regex((await page.textContent('#call-summary')) ?? '', /agent_not_found/);
  t.is(await page.locator('#latency-bars').count(), 0);
  await shot(page, 'call-rejected');
  // a live (pending) call is marked live and says when its recording comes
  const live = (await env.s.request('GET', '/calls?status=pending', { key: org.apiKey })).body.items[0];
  await go(page, `#/calls/${live.callId}`);
  t.is(await page.locator('h1 [data-kind="live"]').count(), 1);
  t.regex((await page.textContent('#recording-status')) ?? '', /when the call has ended/);
  await page.close();
});

browserTest('Agents: one agent as JSON, the API\'s validation errors shown, nothing saved on an invalid edit', async (t) => {
  const page = await open(`#/agents/${localAgent}`);
  const config = JSON.parse(await page.inputValue('#agent-json'));
  t.is(config.name, 'Front desk (local engines)');
  await page.click('#check-agent');
  await page.waitForSelector('#agent-result .ok-note');
  config.llm.temperature = 7;
  config.stt.unknownField = true;
  await page.fill('#agent-json', JSON.stringify(config, null, 2));
  await page.click('#save-agent');
  await page.waitForSelector('#agent-errors li');
  const shown = (await page.textContent('#agent-errors')) ?? '';
  const api = await env.s.request('PATCH', `/agents/${localAgent}`, { key: org.apiKey, body: config });
  t.is(api.status, 400);
  for (const d of api.body.detail.details as Array<{ loc?: unknown[]; path?: string }>) t.true(shown.includes(d.path ?? (d.loc ?? []).join('.')), `${JSON.stringify(d)} in ${shown}`);
  t.is((await env.s.request('GET', `/agents/${localAgent}`, { key: org.apiKey })).body.config.stt.unknownField, undefined);
  await shot(page, 'agent');
  await page.close();
});

browserTest('Campaigns: state, progress bar, retries, breaker state, pause and resume, the Temporal Web UI link', async (t) => {
  const page = await open('#/campaigns');
  t.is(await page.locator('#campaigns-table tbody tr').count(), 2);
  const breakerRow = page.locator(`#campaigns-table tr[data-campaign="${breakerCampaign}"]`);
  t.is(await breakerRow.getAttribute('data-state'), 'paused');
  t.is(await breakerRow.locator('[data-kind="breaker"]').getAttribute('data-value'), 'tripped');
  const link = await breakerRow.locator('a[data-temporal]').getAttribute('href');
  t.is(link, `${TEMPORAL_UI}/namespaces/default/workflows/campaign-${breakerCampaign}`);
  const retryRow = page.locator(`#campaigns-table tr[data-campaign="${retryCampaign}"]`);
  t.is(await retryRow.getAttribute('data-state'), 'running');
  t.is(Number(await retryRow.locator('[data-part="retry"]').getAttribute('data-count')), 4);
  t.is(await retryRow.locator('[data-kind="breaker"]').getAttribute('data-value'), 'closed');
  await shot(page, 'campaigns');

  // pause and resume from the page
  await retryRow.locator('button[data-action="pause"]').click();
  await page.waitForSelector(`#campaigns-table tr[data-campaign="${retryCampaign}"][data-state="paused"]`);
  t.is((await env.s.request('GET', `/campaign/${retryCampaign}`, { key: org.apiKey })).body.state, 'paused');
  await page.locator(`#campaigns-table tr[data-campaign="${retryCampaign}"] button[data-action="resume"]`).click();
  await page.waitForSelector(`#campaigns-table tr[data-campaign="${retryCampaign}"][data-state="running"]`);

  await go(page, `#/campaigns/${breakerCampaign}`);
  t.regex((await page.textContent('#campaign-summary')) ?? '', /tripped/);
  t.is(await page.getAttribute('#temporal-link', 'href'), `${TEMPORAL_UI}/namespaces/default/workflows/campaign-${breakerCampaign}`);
  await shot(page, 'campaign');
  await page.close();
});

browserTest('Numbers: configurations and numbers, secrets masked as the API masks them', async (t) => {
  const api = (await env.s.request('GET', '/organizations/telephony-configs', { key: org.apiKey })).body.items[0];
  const page = await open('#/numbers');
  const token = await page.textContent(`section[data-config="${api.id}"] dd[data-cred="auth_token"]`);
  t.is(token, api.config.auth_token);
  t.is(await page.textContent(`section[data-config="${api.id}"] dd[data-cred="account_sid"]`), org.accountSid);
  const real = env.fake.accounts.get(org.accountSid)!.token;
  t.false(((await page.textContent('#view')) ?? '').includes(real));
  t.not(token, real);
  t.is(await page.locator(`section[data-config="${api.id}"] .numbers-table tbody tr`).count(), 3);
  for (const n of org.numbers) t.is(await page.locator(`tr[data-number="${n}"]`).count(), 1);
  await shot(page, 'numbers');
  await page.close();
});

browserTest('the console read models answer 404 across organizations', async (t) => {
  const other = await env.s.createOrg();
  t.is((await env.s.request('GET', `/calls/${browserCallId}/webhook-deliveries`, { key: other.apiKey })).status, 404);
  t.is((await env.s.request('GET', `/campaign/${retryCampaign}/progress`, { key: other.apiKey })).status, 404);
  t.is((await env.s.request('GET', '/campaign/abc/progress', { key: org.apiKey })).status, 404);
  t.is((await env.s.request('GET', `/calls/${browserCallId}/webhook-deliveries?per_page=0`, { key: org.apiKey })).status, 422);
  const d = (await env.s.request('GET', `/calls/${browserCallId}/webhook-deliveries`, { key: org.apiKey })).body;
  t.deepEqual(d.items.map((x: { event: string }) => x.event).sort(), ['call.completed', 'call.ended', 'call.started']);
  // documented in OpenAPI, with the fields the endpoints return
  const doc = await (await fetch(`${env.s.baseUrl}/openapi.json`)).json() as { paths: Record<string, any> };
  const schemaOf = (p: string) => doc.paths[p].get.responses[200].content['application/json'].schema;
  t.deepEqual(Object.keys(schemaOf('/calls/{callId}/webhook-deliveries').properties.items.items.properties).sort(), Object.keys(d.items[0]).sort());
  const progress = (await env.s.request('GET', `/campaign/${breakerCampaign}/progress`, { key: org.apiKey })).body;
  const ps = schemaOf('/campaign/{id}/progress');
  t.deepEqual(Object.keys(ps.properties).sort(), Object.keys(progress).sort());
  t.deepEqual(Object.keys(ps.properties.circuit_breaker.properties).sort(), Object.keys(progress.circuit_breaker).sort());
  t.deepEqual(Object.keys(ps.properties.workflow.properties).sort(), Object.keys(progress.workflow).sort());
});

test('breaker state: tripped while paused by the breaker, closed after a resume, disabled when off', (t) => {
  const trip = { ts: '2026-01-01T00:00:00.000Z', level: 'error', event: 'circuit_breaker_tripped', message: 'Circuit breaker tripped: 3 of 3', details: {} };
  t.deepEqual(breakerState(true, 'paused', [trip]), { state: 'tripped', trippedAt: trip.ts, message: trip.message });
  t.is(breakerState(true, 'paused', [trip, { event: 'resumed' }, { event: 'paused' }]).state, 'closed');
  t.is(breakerState(true, 'running', [trip]).state, 'closed');
  t.is(breakerState(false, 'running', []).state, 'disabled');
  t.is(breakerState(true, 'paused', 'not an array').state, 'closed');
  t.is(temporalUiWorkflowUrl('http://localhost:8233/', 'my ns', 'campaign-7'), 'http://localhost:8233/namespaces/my%20ns/workflows/campaign-7');
});
