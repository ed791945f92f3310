// summarizeCall against fake servers of each LLM vendor's non-streaming API (Anthropic Messages, Gemini
// generateContent, an OpenAI-compatible local server), run directly through the activities factory.
import test from 'ava';
import { ApplicationFailure } from '@temporalio/common';
import { createPostCallActivities } from '../../activities/post-call.ts';
import { loadConfig } from '../../core/config.ts';
import { createLogger } from '../../core/logger.ts';
import { createOrganization } from '../../core/orgs.ts';
import { createStorage } from '../../core/storage/index.ts';
import { createTestDb } from '../helpers/db.ts';
import { agentConfig, insertEndedCall } from './helpers.ts';
import { listen } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

const REPLY = 'The caller rescheduled a cleaning. It moved to Tuesday at 3 PM. The caller said goodbye.';

test('anthropic, google and local (OpenAI-compatible) providers each get their own wire format', async (t) => {
  const seen: Array<{ url: string; headers: Record<string, unknown>; body: any }> = [];
  const vendor = await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    seen.push({ url: req.url!, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/messages') return void res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: REPLY }], stop_reason: 'end_turn' }));
    if (req.url?.startsWith('/v1beta/models/')) return void res.end(JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: REPLY }] } }] }));
    if (req.url === '/local/v1/chat/completions') return void res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: REPLY } }] }));
    if (req.url === '/reject/v1/messages') return void res.writeHead(400).end('{"error":{"type":"invalid_request_error"}}');
    res.writeHead(404).end('{}');
  });
  t.teardown(() => vendor.close());
  const { db } = await createTestDb();
  t.teardown(() => db.end());
  const config = loadConfig({
    DATA_DIR: tempDir('vas-sum-'),
    ANTHROPIC_BASE_URL: vendor.url, ANTHROPIC_API_KEY: 'ak-test',
    GOOGLE_BASE_URL: vendor.url, GOOGLE_API_KEY: 'gk-test',
    LOCAL_LLM_BASE_URL: `${vendor.url}/local/v1`, LOCAL_LLM_MODEL: 'llama3.2:1b',
  });
  const acts = createPostCallActivities({ config, db, logger: createLogger({ level: 'silent' }), storage: createStorage(config) });
  const org = await createOrganization(db, { name: 's' });
  const call = (provider: string, model: string) =>
    insertEndedCall(db, { orgId: org.id, agent: null, config: agentConfig({ webhookUrl: null, summarize: true, provider, model }) });

  t.deepEqual(await acts.summarizeCall({ callId: await call('anthropic', 'claude-haiku-4-5') }), { summary: REPLY });
  const a = seen.at(-1)!;
  t.is(a.url, '/v1/messages');
  t.is(a.headers['x-api-key'], 'ak-test');
  t.is(a.headers['anthropic-version'], '2023-06-01');
  t.is(a.body.model, 'claude-haiku-4-5');
  t.is(typeof a.body.system, 'string');
  t.regex(a.body.messages[0].content, /move my cleaning appointment/);

  t.deepEqual(await acts.summarizeCall({ callId: await call('google', 'gemini-2.5-flash') }), { summary: REPLY });
  const g = seen.at(-1)!;
  t.is(g.url, '/v1beta/models/gemini-2.5-flash:generateContent');
  t.is(g.headers['x-goog-api-key'], 'gk-test');
  t.regex(g.body.contents[0].parts[0].text, /move my cleaning appointment/);

  const localId = await call('local', 'demo');
  t.deepEqual(await acts.summarizeCall({ callId: localId }), { summary: REPLY });
  t.is(seen.at(-1)!.body.model, 'llama3.2:1b');
  t.false(seen.at(-1)!.body.stream);
  // Idempotent: a second run returns the stored summary without asking again.
  const before = seen.length;
  t.deepEqual(await acts.summarizeCall({ callId: localId }), { summary: REPLY });
  t.is(seen.length, before);

  const rejecting = createPostCallActivities({
    config: { ...config, ANTHROPIC_BASE_URL: `${vendor.url}/reject` }, db, logger: createLogger({ level: 'silent' }), storage: createStorage(config),
  });
  const err = await t.throwsAsync(rejecting.summarizeCall({ callId: await call('anthropic', 'claude-haiku-4-5') }));
  t.true(err instanceof ApplicationFailure && err.nonRetryable && err.type === 'SummaryRejected');
});
