// core/webhook.ts against local receivers: signature over the exact bytes, header precedence, one attempt,
// failures as warnings (never thrown), private targets refused unless allow-listed, outcomes on calls.logs.
import test from 'ava';
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import type { Logger } from '../../core/logger.ts';
import { policyFromConfig } from '../../core/net/ssrf.ts';
import { createOrganization } from '../../core/orgs.ts';
import { deliverWebhook, prepareWebhook, recordWebhookResult, sendWebhook, signBody } from '../../core/webhook.ts';
import { createTestDb } from '../helpers/db.ts';
import { agentConfig, insertEndedCall } from './helpers.ts';
import { listen, startReceiver } from '../helpers/http.ts';

const allowLocal = policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1', OUTBOUND_BLOCK_HOSTS: '' });
const strict = policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '', OUTBOUND_BLOCK_HOSTS: '' });

function captureLogger() {
  const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const logger = {
    warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
  } as unknown as Logger;
  return { logger, warnings };
}

test('signBody is hex HMAC-SHA256 of the raw bytes', (t) => {
  t.is(signBody('k', '{"a":1}'), createHmac('sha256', 'k').update('{"a":1}').digest('hex'));
  t.regex(signBody('k', Buffer.from('x')), /^[0-9a-f]{64}$/);
});

test('POST JSON with agent headers; X-Service-Signature over the exact body overwrites a custom one', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  const { logger, warnings } = captureLogger();
  const payload = { event: 'call.started', callId: 'c1', agentId: 'a1', transport: 'websocket', startedAt: '2026-01-01T00:00:00.000Z', note: 'naïve ✓' };
  const res = await sendWebhook({
    url: `${r.url}/hook?token=abc`,
    headers: { 'X-SERVICE-SIGNATURE': 'forged', Authorization: 'Bearer agent-token', 'Content-Type': 'text/plain' },
    secret: 's3cret',
    payload,
    policy: allowLocal,
    logger,
  });
  t.true(res.ok);
  t.is(res.status, 200);
  t.is(r.events.length, 1);
  const e = r.events[0]!;
  t.deepEqual(e.json, payload);
  t.is(e.headers['content-type'], 'application/json');
  t.is(e.headers.authorization, 'Bearer agent-token');
  t.is(e.headers['x-service-signature'], createHmac('sha256', 's3cret').update(e.raw).digest('hex'));
  t.deepEqual(warnings, []);
});

test('no secret → unsigned; a custom X-Service-Signature header is sent as the agent configured it', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  const res = await sendWebhook({ url: r.url, headers: { 'X-Service-Signature': 'custom', 'X-Team': 'blue' }, secret: null, payload: { event: 'call.ended' }, policy: allowLocal, logger: captureLogger().logger });
  t.true(res.ok);
  t.is(r.events[0]!.headers['x-service-signature'], 'custom');
  t.is(r.events[0]!.headers['x-team'], 'blue');
  const plain = await sendWebhook({ url: r.url, headers: {}, secret: null, payload: { event: 'call.ended' }, policy: allowLocal, logger: captureLogger().logger });
  t.true(plain.ok);
  t.is(r.events[1]!.headers['x-service-signature'], undefined, 'no header at all when neither signed nor configured');
});

test('signed: exactly one X-Service-Signature header, whatever case the custom one used', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  await sendWebhook({ url: r.url, headers: { 'x-service-signature': 'one', 'X-Service-Signature': 'two' }, secret: 'k', payload: { event: 'call.ended' }, policy: allowLocal, logger: captureLogger().logger });
  const e = r.events[0]!;
  t.is(e.headers['x-service-signature'], signBody('k', e.raw));
});

test('4xx/5xx: one attempt, a warning, no throw', async (t) => {
  for (const status of [404, 503]) {
    const r = await startReceiver({ status });
    const { logger, warnings } = captureLogger();
    const res = await sendWebhook({ url: r.url, payload: { event: 'call.ended' }, policy: allowLocal, logger });
    await r.close();
    t.false(res.ok);
    t.is(res.status, status);
    t.is(r.events.length, 1);
    t.is(warnings.length, 1);
    t.is(warnings[0]!.obj.status, status);
  }
});

test('a receiver that never answers times out as a warning', async (t) => {
  const hang = await listen(() => undefined);
  t.teardown(() => hang.close());
  const { logger, warnings } = captureLogger();
  const res = await sendWebhook({ url: hang.url, payload: { event: 'call.ended' }, policy: allowLocal, logger, timeoutMs: 300 });
  t.false(res.ok);
  t.regex(res.error!, /timeout after 300 ms/);
  t.is(warnings.length, 1);
});

test('private and loopback targets are refused unless allow-listed; nothing is sent', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  for (const url of [r.url, r.url.replace('127.0.0.1', 'localhost'), 'http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/x', 'ftp://example.com/x']) {
    const { logger, warnings } = captureLogger();
    const res = await sendWebhook({ url, payload: { event: 'call.ended' }, policy: strict, logger });
    t.false(res.ok, url);
    t.regex(res.error!, /refused|not a public|scheme|http/i, url);
    t.is(warnings.length, 1);
  }
  t.is(r.events.length, 0);
});

test('recordWebhookResult appends outcomes to calls.logs.webhooks', async (t) => {
  const { db } = await createTestDb();
  t.teardown(() => db.end());
  const org = await createOrganization(db, { name: 'w' });
  const callId = await insertEndedCall(db, { orgId: org.id, agent: null, config: agentConfig({ webhookUrl: null }) });
  await recordWebhookResult(db, callId, 'call.started', { ok: true, status: 200, durationMs: 12 });
  await recordWebhookResult(db, callId, 'call.ended', { ok: false, error: 'timeout after 10000 ms', durationMs: 10001 });
  const logs = await db.oneFirst(sql.type(z.object({ logs: z.any() }))`SELECT logs FROM calls WHERE id = ${callId}`);
  t.is(logs.webhooks.length, 2);
  t.like(logs.webhooks[0], { event: 'call.started', ok: true, status: 200, error: null, durationMs: 12 });
  t.like(logs.webhooks[1], { event: 'call.ended', ok: false, status: null, error: 'timeout after 10000 ms' });
});

test('a claim-gated delivery: connected before the claim, written only once it is granted; a refused claim sends nothing', async (t) => {
  const { logger, warnings } = captureLogger();
  const payload = { event: 'call.completed', callId: 'c9' };
  for (const granted of [false, true]) {
    const r = await startReceiver(); // a receiver each: a fresh connection each
    t.teardown(() => r.close());
    let requests = 0; // request heads seen by the receiver (before any body is read)
    r.server.on('request', () => requests++);
    const connected = new Promise<void>((res) => r.server.once('connection', () => res()));
    const prepared = await prepareWebhook({ url: `${r.url}/hook`, secret: 's3cret', payload, policy: allowLocal, logger }, true);
    let settle: (v: boolean) => void = () => {};
    const delivery = deliverWebhook(prepared, new Promise<boolean>((res) => { settle = res; }));
    await connected; // the connection is made while the claim is pending...
    t.is(requests, 0, '...but no request is written before the claim settles');
    settle(granted);
    const result = await delivery;
    if (!granted) {
      t.is(result, null);
      t.is(requests, 0, 'a refused claim sends no request');
      t.is(r.events.length, 0);
    } else {
      t.like(result, { ok: true, status: 200 });
      t.is(r.events.length, 1);
      t.deepEqual(r.events[0]!.json, payload);
      t.is(r.events[0]!.headers['x-service-signature'], signBody('s3cret', r.events[0]!.raw));
    }
  }
  t.is(warnings.length, 0);
});
