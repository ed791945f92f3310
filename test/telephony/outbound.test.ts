// placeOutboundCall, the dial path campaigns share with POST /call: exactly-once per dialKey under concurrency,
// typed errors (slot full vs wallet, provider rejection with its row, invalid input), the frozen snapshot with the
// user_number / agent_number built-ins, and the sweep that ends phone calls no carrier ever reported on.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { expireStalePhoneCalls } from '../../core/telephony/ended.ts';
import { GateRefused, OutboundInvalid, ProviderRejected } from '../../core/telephony/errors.ts';
import { placeOutboundCall } from '../../core/telephony/outbound.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callById, fakeEnv, inlineAgent, saveAgent, twilioConfig } from './rest-helpers.ts';

let s: TestServer;
let twilio: FakeTwilio;
const logger = createLogger({ level: 'silent', name: 'test' });
const deps = () => ({ db: s.db, config: s.config, logger });

test.before(async () => {
  twilio = await FakeTwilio.start();
  s = await startTestServer({ temporal: false, env: fakeEnv(twilio) });
});
test.after.always(async () => {
  await s?.close();
  await twilio?.close();
});

async function setup(o: { balanceUsd?: number; concurrency?: number } = {}) {
  const org = await s.createOrg(o);
  const acc = twilio.addAccount();
  const cfg = await twilioConfig(s, org.apiKey, acc);
  const agent = await saveAgent(s, org.orgId, inlineAgent({
    systemPrompt: 'You call {{user_number}} from {{agent_number}} about {{topic}}.',
    contextVariables: { topic: 'the default topic' },
  }));
  return { ...org, acc, cfg, agent };
}

const dialsOf = (accountSid: string) => [...twilio.calls.values()].filter((c) => c.accountSid === accountSid);

test('exactly once per dialKey, even when two requests race', async (t) => {
  const { orgId, acc, cfg, agent } = await setup();
  const req = { orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550111', dialKey: `campaign-7-row-3-attempt-1-${orgId}`, campaignId: 7 };
  const [a, b] = await Promise.all([placeOutboundCall(deps(), req), placeOutboundCall(deps(), req)]);
  t.is(a.callId, b.callId);
  t.deepEqual([a.existing, b.existing].sort(), [false, true]);
  t.is(dialsOf(acc.sid).length, 1);
  const c = await placeOutboundCall(deps(), req);
  t.like(c, { callId: a.callId, existing: true });
  t.is(dialsOf(acc.sid).length, 1);
  const campaign = await s.db.oneFirst(sql.type(z.object({ campaign_id: z.number().nullable() }))`SELECT campaign_id FROM calls WHERE id = ${a.callId}`);
  t.is(campaign, 7);
});

test('a dial whose row was written but never sent (its worker killed in between) is sent by the retry with that row, once', async (t) => {
  const { orgId, acc, cfg, agent } = await setup();
  const req = { orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550119', dialKey: `campaign-9-row-1-attempt-1-${orgId}`, campaignId: 9 };
  const first = await placeOutboundCall(deps(), req);
  t.is(dialsOf(acc.sid).length, 1);
  // what a worker SIGKILLed after writing the row and before claiming the dial leaves behind
  const carrierCallId = await s.db.oneFirst(sql.type(z.object({ c: z.string().nullable() }))`SELECT carrier_call_id AS c FROM calls WHERE id = ${first.callId}`);
  t.truthy(carrierCallId, 'the carrier call id was kept');
  await s.db.query(sql.unsafe`UPDATE calls SET dial_started_at = NULL, carrier_call_id = NULL WHERE id = ${first.callId}`);
  // two retries racing: one sends the dial with the same row, the other finds it claimed
  const [a, b] = await Promise.all([placeOutboundCall(deps(), req), placeOutboundCall(deps(), req)]);
  t.is(a.callId, first.callId);
  t.is(b.callId, first.callId);
  t.deepEqual([a.existing, b.existing].sort(), [false, true]);
  t.is(dialsOf(acc.sid).length, 2, 'dialed again, once');
  const row = await s.db.one(sql.type(z.object({ started: z.boolean(), c: z.string().nullable() }))`SELECT dial_started_at IS NOT NULL AS started, carrier_call_id AS c FROM calls WHERE id = ${first.callId}`);
  t.true(row.started);
  t.truthy(row.c);
  // claimed: never sent again
  t.like(await placeOutboundCall(deps(), req), { callId: first.callId, existing: true });
  t.is(dialsOf(acc.sid).length, 2);
});

test('the frozen snapshot knows user_number, agent_number and call-time variables', async (t) => {
  const { orgId, cfg, agent } = await setup();
  const placed = await placeOutboundCall(deps(), { orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550112', contextVariables: { topic: 'your order' } });
  const snap = await s.db.oneFirst(sql.type(z.object({ p: z.string() }))`SELECT config_snapshot->>'systemPrompt' AS p FROM calls WHERE id = ${placed.callId}`);
  t.is(snap, 'You call +14155550112 from +14155550100 about your order.');
});

test('typed refusals: slot full vs wallet, provider rejection with its row, invalid input', async (t) => {
  const full = await setup({ concurrency: 1 });
  const base = { orgId: full.orgId, agentUuid: full.agent.uuid, telephonyConfigId: full.cfg.id, fromNumber: '+14155550100', toNumber: '+14155550113' };
  await placeOutboundCall(deps(), base);
  const slot = await t.throwsAsync(placeOutboundCall(deps(), { ...base, dialKey: `k-${full.orgId}` }), { instanceOf: GateRefused });
  t.true(slot.slotFull);
  t.is(slot.status, 429);
  // The refused dialKey is free for a later attempt: the rejected row does not hold it.
  const held = await s.db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`SELECT id::text FROM calls WHERE dial_key = ${`k-${full.orgId}`}`);
  t.is(held, null);

  const poor = await setup({ balanceUsd: 0 });
  const wallet = await t.throwsAsync(placeOutboundCall(deps(), { ...base, orgId: poor.orgId, agentUuid: poor.agent.uuid, telephonyConfigId: poor.cfg.id }), { instanceOf: GateRefused });
  t.false(wallet.slotFull);
  t.is(wallet.reason, 'insufficient_balance');
  t.is(wallet.status, 402);

  const ok = await setup();
  twilio.failNextDial(ok.acc.sid, 429, 20429, 'Too Many Requests');
  const rejected = await t.throwsAsync(placeOutboundCall(deps(), { ...base, orgId: ok.orgId, agentUuid: ok.agent.uuid, telephonyConfigId: ok.cfg.id }), { instanceOf: ProviderRejected });
  t.like(rejected.detail, { code: 'provider_rejected', provider: 'twilio', providerStatus: 429, message: 'Too Many Requests' });
  t.is(rejected.status, 400);
  t.like(await callById(s, rejected.callId), { connection_status: 'dial_failed', status: 'error' });

  const noCfg = await t.throwsAsync(placeOutboundCall(deps(), { ...base, orgId: ok.orgId, agentUuid: ok.agent.uuid, telephonyConfigId: full.cfg.id }), { instanceOf: OutboundInvalid });
  t.is(noCfg.detail, 'telephony_configuration_not_found', "another organization's configuration is not found");
  const noAgent = await t.throwsAsync(placeOutboundCall(deps(), { ...base, orgId: ok.orgId, agentUuid: full.agent.uuid, telephonyConfigId: ok.cfg.id }), { instanceOf: OutboundInvalid });
  t.is(noAgent.detail, 'agent_not_found');
});

test('phone calls nobody reported on end as never connected after PHONE_PENDING_TIMEOUT_S', async (t) => {
  const { orgId, cfg, agent } = await setup();
  const placed = await placeOutboundCall(deps(), { orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550114' });
  const fresh = await placeOutboundCall(deps(), { orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550115' });
  await s.db.query(sql.unsafe`UPDATE calls SET created_at = now() - interval '1 hour' WHERE id = ${placed.callId}`);
  t.true((await expireStalePhoneCalls(deps())) >= 1);
  t.like(await callById(s, placed.callId), { status: 'error', connection_status: 'telephony_no_status', ended_reason: null });
  t.like(await callById(s, fresh.callId), { status: 'pending' });
});
