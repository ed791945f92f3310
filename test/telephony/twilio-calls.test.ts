// POST /call type=outbound|inbound with Twilio against the fake Twilio: the dial request, the answer webhook's
// <Connect><Stream>, status callbacks ending never-connected calls (rows + call.ended without call.started),
// forged signatures, dial failures (400/502 provider_rejected leaving dial_failed rows), AMD, every error string,
// inbound registration and inbound routing (binding wins, PATCH swaps, DELETE falls back to the number's agent).
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { verifyStreamToken } from '../../core/telephony/signing.ts';
import { FakeTwilio, type FakeAccount } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { addNumber, callById, callsOf, fakeEnv, inlineAgent, saveAgent, twilioConfig } from './rest-helpers.ts';
import { until } from '../helpers/wait.ts';
import { startReceiver, type Receiver } from '../helpers/http.ts';

let s: TestServer;
let twilio: FakeTwilio;
let hooks: Receiver;

test.before(async () => {
  twilio = await FakeTwilio.start();
  hooks = await startReceiver();
  s = await startTestServer({ temporal: false, env: fakeEnv(twilio) });
});
test.after.always(async () => {
  await s?.close();
  await twilio?.close();
  await hooks?.close();
});

const withHook = (extra: Record<string, unknown> = {}) => inlineAgent({ webhook: { url: `${hooks.url}/hook` }, ...extra });
const eventsOf = (callId: string) => hooks.bodies().filter((e) => e.callId === callId);

async function setup(o: { balanceUsd?: number; concurrency?: number } = {}) {
  const org = await s.createOrg(o);
  const acc = twilio.addAccount();
  twilio.addNumber(acc.sid, '+14155550100');
  return { ...org, acc };
}

const dialBody = (acc: FakeAccount, extra: Record<string, unknown> = {}) => ({
  type: 'outbound',
  callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } },
  toNumber: '+14155550199',
  agent: withHook(),
  ...extra,
});

async function dial(key: string, acc: FakeAccount, extra: Record<string, unknown> = {}) {
  const r = await s.request('POST', '/call', { key, body: dialBody(acc, extra) });
  return r;
}

test('outbound: Calls.json with answer/status/AMD URLs from PUBLIC_URL; the answer webhook bridges to a signed stream', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  const r = await dial(key, acc);
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { status: 'pending', transport: 'outbound', provider: 'twilio', fromNumber: '+14155550100', toNumber: '+14155550199' });
  const callId: string = r.body.callId;
  const call = [...twilio.calls.values()].find((c) => c.url?.endsWith(callId))!;
  t.truthy(call);
  t.is(r.body.carrierCallId, call.sid);
  t.like(call, { to: '+14155550199', from: '+14155550100', url: `${s.baseUrl}/telephony/twilio/answer/${callId}`, statusCallback: `${s.baseUrl}/telephony/twilio/status/${callId}` });
  t.deepEqual(call.statusEvents, ['initiated', 'ringing', 'answered', 'completed']);
  // voicemailDetection defaults to true: async AMD is requested.
  t.is(call.machineDetection, 'DetectMessageEnd');
  t.is(call.params.get('AsyncAmd'), 'true');
  t.is(call.asyncAmdCallback, `${s.baseUrl}/telephony/twilio/amd/${callId}`);
  // Credentials: inline auth is kept encrypted on the row, never in its JSON.
  const raw = await s.db.one(sql.type(z.object({ carrier_credentials: z.instanceof(Buffer).nullable(), config_snapshot: z.unknown(), logs: z.unknown() }))`
    SELECT carrier_credentials, config_snapshot, logs FROM calls WHERE id = ${callId}`);
  t.truthy(raw.carrier_credentials);
  t.false(raw.carrier_credentials!.includes(Buffer.from(acc.token)));
  t.false(JSON.stringify(raw).includes(acc.token));

  const row = await callById(s, callId);
  t.like(row, { organization_id: orgId, status: 'pending', transport: 'outbound', call_source: 'api_outbound', telephony_provider: 'twilio', platform_number: '+14155550100', customer_number: '+14155550199', carrier_call_id: call.sid, connection_status: null });

  await twilio.ring(call.sid);
  const answered = await twilio.answer(call.sid);
  t.is(answered.status, 200);
  t.truthy(answered.stream);
  t.is(answered.stream!.url, `ws://127.0.0.1:${new URL(s.baseUrl).port}/api/v1/telephony/twilio/stream/${callId}`);
  t.true(verifyStreamToken(s.config, callId, answered.stream!.parameters.token));
  t.false(verifyStreamToken(s.config, callId, 'forged'));
  // Still pending: it becomes active when the media stream connects.
  t.is((await callById(s, callId))!.status, 'pending');
  t.deepEqual(eventsOf(callId), []);
});

for (const [raw, expected] of [['busy', 'busy'], ['no-answer', 'no_answer'], ['failed', 'connection_failed'], ['canceled', 'cancelled']] as const) {
  test(`outbound ${raw} → row ${expected}, call.ended without call.started`, async (t) => {
    const { apiKey: key, acc } = await setup();
    const r = await dial(key, acc);
    t.is(r.status, 200);
    const callId: string = r.body.callId;
    const sid: string = r.body.carrierCallId;
    await twilio.ring(sid);
    const cb = await twilio.finish(sid, raw);
    t.is(cb!.status, 204);
    const row = await callById(s, callId);
    t.like(row, { status: 'error', connection_status: expected, ended_reason: null, carrier_status: raw, started_at: null });
    t.truthy(row!.ended_at);
    t.true(row!.tags.includes('not_connected'));
    t.true(row!.tags.includes(`telephony_${expected}`));
    const ended = await until(() => eventsOf(callId).find((e) => e.event === 'call.ended'), { what: 'call.ended', timeoutMs: 10_000 });
    t.like(ended, { event: 'call.ended', callId, endedReason: null, connectionStatus: expected, duration: 0 });
    t.false(eventsOf(callId).some((e) => e.event === 'call.started'));
    // A repeated terminal callback changes nothing and sends nothing more.
    await twilio.finish(sid, raw);
    t.is(eventsOf(callId).filter((e) => e.event === 'call.ended').length, 1);
    const list = await s.request('GET', `/calls?call_id=${callId}`, { key });
    t.like(list.body.items[0], { connectionStatus: expected, endedReason: null, status: 'error', transport: 'outbound', callSource: 'api_outbound', telephonyProvider: 'twilio' });
  });
}

for (const [code, expected] of [['503', 'unreachable'], ['480', 'unreachable'], ['404', 'invalid_number'], ['500', 'connection_failed']] as const) {
  test(`outbound failed with SipResponseCode ${code} → row ${expected} (congestion / unreachable → unreachable)`, async (t) => {
    const { apiKey: key, acc } = await setup();
    const r = await dial(key, acc);
    t.is(r.status, 200);
    const callId: string = r.body.callId;
    const call = twilio.calls.get(r.body.carrierCallId)!;
    const cb = await twilio.statusCallback(call, 'failed', { SipResponseCode: code, CallDuration: '0' });
    t.is(cb!.status, 204);
    t.like(await callById(s, callId), { status: 'error', connection_status: expected, ended_reason: null, carrier_status: `failed:sip_${code}` });
    const ended = await until(() => eventsOf(callId).find((e) => e.event === 'call.ended'), { what: 'call.ended', timeoutMs: 10_000 });
    t.like(ended, { connectionStatus: expected, endedReason: null });
    const list = await s.request('GET', `/calls?connection_status=${expected}&call_id=${callId}`, { key });
    t.is(list.body.total, 1);
  });
}

test('forged or missing X-Twilio-Signature → 403 and nothing changes', async (t) => {
  const { apiKey: key, acc } = await setup();
  const r = await dial(key, acc);
  const callId: string = r.body.callId;
  const sid: string = r.body.carrierCallId;
  const forged = await twilio.finish(sid, 'busy', 0, 'some-other-token');
  t.is(forged!.status, 403);
  const missing = await twilio.finish(sid, 'busy', 0, null);
  t.is(missing!.status, 403);
  const amd = await twilio.webhook(acc.sid, `${s.baseUrl}/telephony/twilio/amd/${callId}`, { CallSid: sid, AnsweredBy: 'machine_start' }, 'wrong');
  t.is(amd.status, 403);
  const answer = await twilio.webhook(acc.sid, `${s.baseUrl}/telephony/twilio/answer/${callId}`, { CallSid: sid }, null);
  t.is(answer.status, 403);
  t.false(answer.body.includes('<Stream'));
  const row = await callById(s, callId);
  t.like(row, { status: 'pending', connection_status: null, answered_by: null, ended_at: null });
  t.deepEqual(eventsOf(callId), []);
  // The genuine one is accepted.
  t.is((await twilio.finish(sid, 'busy'))!.status, 204);
  t.is((await callById(s, callId))!.connection_status, 'busy');
});

test('AMD callback stores AnsweredBy on the row', async (t) => {
  const { apiKey: key, acc } = await setup();
  const r = await dial(key, acc);
  const sid: string = r.body.carrierCallId;
  await twilio.answer(sid);
  const res = await twilio.amd(sid, 'machine_end_beep');
  t.is(res.status, 204);
  t.is((await callById(s, r.body.callId))!.answered_by, 'machine_end_beep');
});

test('AMD is not requested when the agent disables voicemailDetection', async (t) => {
  const { apiKey: key, acc } = await setup();
  const r = await dial(key, acc, { agent: withHook({ voicemailDetection: false }) });
  t.is(r.status, 200);
  const call = twilio.calls.get(r.body.carrierCallId)!;
  t.is(call.machineDetection, null);
  t.is(call.asyncAmdCallback, null);
});

test('carrier 4xx → 400 provider_rejected, 5xx → 502; both leave dial_failed rows linked by callId', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  twilio.failNextDial(acc.sid, 400, 21211, "The 'To' number +14155550199 is not a valid phone number.");
  const r400 = await dial(key, acc);
  t.is(r400.status, 400);
  t.like(r400.body.detail, { code: 'provider_rejected', provider: 'twilio', providerStatus: 400, message: "The 'To' number +14155550199 is not a valid phone number." });
  const row400 = await callById(s, r400.body.detail.callId);
  t.like(row400, { organization_id: orgId, status: 'error', connection_status: 'dial_failed', ended_reason: null, call_source: 'api_outbound', transport: 'outbound' });
  t.like(row400!.logs.dial_error, { providerStatus: 400, carrierCode: 21211 });

  twilio.failNextDial(acc.sid, 503, 20500, 'Service unavailable');
  const r502 = await dial(key, acc);
  t.is(r502.status, 502);
  t.like(r502.body.detail, { code: 'provider_rejected', provider: 'twilio', providerStatus: 503, message: 'Service unavailable' });
  t.like(await callById(s, r502.body.detail.callId), { connection_status: 'dial_failed', status: 'error' });

  // Wrong inline credentials: Twilio answers 401 → 400 provider_rejected.
  const wrong = await s.request('POST', '/call', { key, body: dialBody({ ...acc, token: 'not-it' }) });
  t.is(wrong.status, 400);
  t.like(wrong.body.detail, { code: 'provider_rejected', providerStatus: 401 });
  t.false(JSON.stringify(wrong.body).includes('not-it'));
  const ended = await until(() => eventsOf(r400.body.detail.callId).find((e) => e.event === 'call.ended'), { what: 'call.ended', timeoutMs: 10_000 });
  t.like(ended, { connectionStatus: 'dial_failed', endedReason: null });
});

test('POST /call telephony error strings (each leaves a rejected row)', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  const cases: Array<[Record<string, unknown>, number, unknown]> = [
    [{ ...dialBody(acc), toNumber: undefined }, 400, "'toNumber' is required when type='outbound'"],
    [{ ...dialBody(acc), type: 'inbound' }, 400, "'toNumber' is not allowed when type='inbound'"],
    [{ ...dialBody(acc), callConfig: { provider: 'tin-can', phoneNumber: '+14155550100' } }, 400, 'unknown_provider: tin-can'],
    [{ ...dialBody(acc), agent: undefined }, 400, "Must provide either 'agentId' or 'agent'."],
    [{ ...dialBody(acc), agent: undefined, agentId: '00000000-0000-4000-8000-000000000000' }, 400, 'agent_not_found'],
    [{ ...dialBody(acc), callConfig: { provider: 'twilio', phoneNumber: '+14155550100' } }, 400, 'missing_credentials: send callConfig.auth or add +14155550100 to a twilio telephony configuration of this organization'],
  ];
  for (const [body, status, detail] of cases) {
    const r = await s.request('POST', '/call', { key, body });
    t.is(r.status, status, JSON.stringify(body));
    t.deepEqual(r.body.detail, detail);
  }
  const noPhone = await s.request('POST', '/call', { key, body: { ...dialBody(acc), callConfig: { provider: 'twilio', auth: { account_sid: acc.sid, auth_token: acc.token } } } });
  t.is(noPhone.status, 400);
  t.like(noPhone.body.detail, { error: 'Agent configuration validation failed' });
  t.is(noPhone.body.detail.details[0].path, 'callConfig.phoneNumber');
  const badAuth = await s.request('POST', '/call', { key, body: { ...dialBody(acc), callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: 'nope' } } } });
  t.is(badAuth.status, 400);
  t.true(badAuth.body.detail.details.some((d: { path: string }) => d.path === 'callConfig.auth.account_sid'));
  const badTo = await s.request('POST', '/call', { key, body: { ...dialBody(acc), toNumber: 'not a number' } });
  t.is(badTo.status, 400);
  t.is(badTo.body.detail.details[0].path, 'toNumber');
  // every carrier id has an adapter now: another carrier's inline auth is checked against its own shape
  const telnyxAuth = await s.request('POST', '/call', { key, body: { ...dialBody(acc), callConfig: { provider: 'telnyx', phoneNumber: '+14155550100', auth: { api_key: 'k' } } } });
  t.is(telnyxAuth.status, 400);
  t.true(telnyxAuth.body.detail.details.some((d: { path: string }) => d.path === 'callConfig.auth.connection_id'));
  const smartfloAuth = await s.request('POST', '/call', { key, body: { ...dialBody(acc), callConfig: { provider: 'smartflo', phoneNumber: '+914045678901', auth: { token: 'x' } } } });
  t.is(smartfloAuth.status, 400);
  t.is(smartfloAuth.body.detail.details[0].path, 'callConfig.smartflo.auth');
  t.is(smartfloAuth.body.detail.details[0].message, 'Extra inputs are not permitted');

  const rows = await callsOf(s, orgId);
  t.is(rows.length, cases.length + 5);
  t.true(rows.every((row) => row.status === 'error' && row.tags.includes('rejected') && row.ended_reason === null));
  t.true(rows.some((row) => row.connection_status === 'schema_validation'));
  t.true(rows.some((row) => row.connection_status === 'missing_credentials'));
  t.false(JSON.stringify(await s.db.any(sql.type(z.object({ s: z.unknown() }))`SELECT config_snapshot AS s FROM calls WHERE organization_id = ${orgId}`)).includes(acc.token));
  t.is([...twilio.calls.values()].filter((c) => c.accountSid === acc.sid).length, 0, 'nothing was dialled');
});

test('gates: wallet 402 and concurrency 429 refuse the dial and persist a rejected row', async (t) => {
  const poor = await setup({ balanceUsd: 0 });
  const r402 = await dial(poor.apiKey, poor.acc);
  t.is(r402.status, 402);
  t.is(r402.body.detail.error_code, 'insufficient_balance');
  t.like((await callsOf(s, poor.orgId))[0], { status: 'error', connection_status: 'insufficient_balance', transport: 'outbound' });

  const busy = await setup({ concurrency: 1 });
  const first = await dial(busy.apiKey, busy.acc);
  t.is(first.status, 200);
  const second = await dial(busy.apiKey, busy.acc);
  t.is(second.status, 429);
  t.like(second.body.detail, { code: 'concurrency_limit_reached', current_limit: 1, current_active: 1 });
  t.is([...twilio.calls.values()].filter((c) => c.accountSid === busy.acc.sid).length, 1);
  // The never-connected first call frees the slot.
  await twilio.finish(first.body.carrierCallId, 'no-answer');
  const third = await dial(busy.apiKey, busy.acc);
  t.is(third.status, 200);
});

test('outbound without inline auth uses the configuration that owns phoneNumber', async (t) => {
  const { apiKey: key, acc } = await setup();
  const cfg = await twilioConfig(s, key, acc);
  t.is((await addNumber(s, key, cfg.id, { address: '+14155550100' })).status, 200);
  const r = await s.request('POST', '/call', { key, body: { ...dialBody(acc), callConfig: { provider: 'twilio', phoneNumber: '+1 415 555 0100' } } });
  t.is(r.status, 200, JSON.stringify(r.body));
  const call = twilio.calls.get(r.body.carrierCallId)!;
  t.is(call.from, '+14155550100');
  const stored = await s.db.one(sql.type(z.object({ telephony_config_id: z.number().nullable(), carrier_credentials: z.unknown() }))`
    SELECT telephony_config_id, carrier_credentials FROM calls WHERE id = ${r.body.callId}`);
  t.is(stored.telephony_config_id, cfg.id);
  t.is(stored.carrier_credentials, null);
});

test('inbound registration: verifies credentials and ownership, provisions VoiceUrl, upserts one binding', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  const pn = twilio.accounts.get(acc.sid)!.numbers[0]!;
  const body = { type: 'inbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, agent: withHook({ name: 'Front desk' }), contextVariables: { shop: 'Corner Shop' } };
  const r = await s.request('POST', '/call', { key, body });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { status: 'registered', provider: 'twilio', address_normalized: '+14155550100', agentName: 'Front desk', provider_sync: { ok: true } });
  t.is(pn.voiceUrl, `${s.baseUrl}/telephony/twilio/voice`);
  const again = await s.request('POST', '/call', { key, body: { ...body, agent: withHook({ name: 'Front desk v2' }) } });
  t.is(again.status, 200);
  t.is(again.body.bindingId, r.body.bindingId, 'last write wins on (provider, number)');
  const list = await s.request('GET', '/telephony/inbound/bindings', { key });
  t.like(list.body, { total: 1, page: 1, perPage: 50, totalPages: 1 });
  t.like(list.body.items[0], { id: r.body.bindingId, provider: 'twilio', agent_name: 'Front desk v2', contextVariables: { shop: 'Corner Shop' } });
  t.is(list.body.items[0].agentSnapshot.contextVariables.shop, 'Corner Shop');
  t.false(JSON.stringify(list.body).includes(acc.token));

  const notOwned = await s.request('POST', '/call', { key, body: { ...body, callConfig: { ...body.callConfig, phoneNumber: '+14155550777' } } });
  t.deepEqual([notOwned.status, notOwned.body.detail], [400, 'Phone number +14155550777 is not owned by this Twilio account']);
  const wrong = await s.request('POST', '/call', { key, body: { ...body, callConfig: { ...body.callConfig, auth: { account_sid: acc.sid, auth_token: 'wrong' } } } });
  t.is(wrong.status, 400);
  t.regex(wrong.body.detail, /^invalid_credentials: /);
  const rows = await callsOf(s, orgId);
  t.deepEqual(rows.map((x) => x.connection_status).sort(), ['credentials_invalid', 'inbound_invalid']);
});

test('inbound calls: binding wins over the number agent; PATCH swaps; DELETE falls back; forged → 403; refused → Say + Hangup', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  const cfg = await twilioConfig(s, key, acc);
  const numberAgent = await saveAgent(s, orgId, inlineAgent({ name: 'Number agent' }));
  t.is((await addNumber(s, key, cfg.id, { address: '+14155550100', inbound_agent_uuid: numberAgent.uuid })).status, 200);

  // Number attachment only.
  const a = await twilio.inbound(acc.sid, '+14155550100', '+14155550177');
  t.is(a.status, 200);
  t.truthy(a.twiml.stream, a.twiml.xml);
  const callA = a.twiml.stream!.parameters.callId!;
  t.like(await callById(s, callA), { status: 'pending', transport: 'inbound', call_source: 'api_inbound', platform_number: '+14155550100', customer_number: '+14155550177', carrier_call_id: a.call.sid });
  t.true(verifyStreamToken(s.config, callA, a.twiml.stream!.parameters.token));
  const nameOf = (id: string) => s.db.oneFirst(sql.type(z.object({ n: z.string().nullable() }))`SELECT agent_name AS n FROM calls WHERE id = ${id}`);
  t.is(await nameOf(callA), 'Number agent');
  // Twilio retrying the same VoiceUrl request (same CallSid) gets the same call, not a second row.
  const retried = await twilio.webhook(acc.sid, `${s.baseUrl}/telephony/twilio/voice`, { AccountSid: acc.sid, CallSid: a.call.sid, From: '+14155550177', To: '+14155550100', Direction: 'inbound', CallStatus: 'ringing' });
  t.is(retried.status, 200);
  t.regex(retried.body, new RegExp(`stream/${callA}`));
  t.is((await callsOf(s, orgId)).filter((x) => x.carrier_call_id === a.call.sid).length, 1);
  // Its end before the stream connected (caller hung up) goes through the number's StatusCallback.
  await twilio.finish(a.call.sid, 'completed', 0);
  t.like(await callById(s, callA), { status: 'error', connection_status: 'cancelled', ended_reason: null });

  // A binding on the same number wins.
  const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, agent: inlineAgent({ name: 'Binding agent' }) } });
  t.is(reg.status, 200);
  const b = await twilio.inbound(acc.sid, '+14155550100', '+14155550178');
  t.is(await nameOf(b.twiml.stream!.parameters.callId!), 'Binding agent');

  // PATCH swaps the agent (saved agent by id), without touching Twilio.
  const swapped = await saveAgent(s, orgId, inlineAgent({ name: 'Swapped agent' }));
  const voiceUrlBefore = twilio.accounts.get(acc.sid)!.numbers[0]!.voiceUrl;
  const p = await s.request('PATCH', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key, body: { agentId: swapped.uuid, contextVariables: { x: 'y' } } });
  t.is(p.status, 200, JSON.stringify(p.body));
  t.like(p.body, { id: reg.body.bindingId, agent_id: swapped.uuid, agent_name: 'Swapped agent', contextVariables: { x: 'y' } });
  t.is(twilio.accounts.get(acc.sid)!.numbers[0]!.voiceUrl, voiceUrlBefore);
  const c = await twilio.inbound(acc.sid, '+14155550100', '+14155550179');
  t.is(await nameOf(c.twiml.stream!.parameters.callId!), 'Swapped agent');

  // DELETE: routing falls back to the number's agent; a second DELETE is 204 too.
  t.is((await s.request('DELETE', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key })).status, 204);
  t.is((await s.request('DELETE', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key })).status, 204);
  const d = await twilio.inbound(acc.sid, '+14155550100', '+14155550180');
  t.is(await nameOf(d.twiml.stream!.parameters.callId!), 'Number agent');

  // Forged: 403, no row.
  const before = (await callsOf(s, orgId)).length;
  const forged = await twilio.inbound(acc.sid, '+14155550100', '+14155550181', 'not-the-token');
  t.is(forged.status, 403);
  t.is((await callsOf(s, orgId)).length, before);

  // Wallet empty: spoken refusal, hang up, rejected row.
  await s.db.query(sql.unsafe`UPDATE organizations SET balance_usd = 0 WHERE id = ${orgId}`);
  const refused = await twilio.inbound(acc.sid, '+14155550100', '+14155550182');
  t.is(refused.status, 200);
  t.is(refused.twiml.stream, null);
  t.truthy(refused.twiml.say);
  t.true(refused.twiml.hangup);
  const rows = await callsOf(s, orgId);
  t.true(rows.some((row) => row.connection_status === 'insufficient_balance' && row.transport === 'inbound' && row.tags.includes('rejected')));
});

test('bindings API: every rule and string, cross-organization 404', async (t) => {
  const { apiKey: key, orgId, acc } = await setup();
  const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, agent: inlineAgent() } });
  t.is(reg.status, 200);
  const id = reg.body.bindingId;
  const got = await s.request('GET', `/telephony/inbound/bindings/${id}`, { key });
  t.is(got.status, 200);
  t.like(got.body, { id, provider: 'twilio', phone_number: '+14155550100', address_normalized: '+14155550100', credentials: { account_sid: acc.sid } });
  t.is(got.body.credentials.auth_token, `••••${acc.token.slice(-4)}`);

  const agent = await saveAgent(s, orgId);
  const cases: Array<[unknown, number, unknown]> = [
    [{ agent: inlineAgent(), agentId: agent.uuid }, 400, 'provide_agent_or_agentId_not_both'],
    [{}, 400, 'must_provide_agent_or_agentId'],
    [{ contextVariables: { a: 'b' } }, 400, 'must_provide_agent_or_agentId'],
    [{ agentId: '00000000-0000-4000-8000-000000000000' }, 404, 'agent_not_found'],
  ];
  for (const [body, status, detail] of cases) {
    const r = await s.request('PATCH', `/telephony/inbound/bindings/${id}`, { key, body });
    t.deepEqual([r.status, r.body.detail], [status, detail], JSON.stringify(body));
  }
  const badModel = await s.request('PATCH', `/telephony/inbound/bindings/${id}`, { key, body: { agent: inlineAgent({ llm: { provider: 'openai', model: 'gpt-nonexistent' } }) } });
  t.is(badModel.status, 422);
  t.is(typeof badModel.body.detail, 'string');
  const badShape = await s.request('PATCH', `/telephony/inbound/bindings/${id}`, { key, body: { agent: { name: '' } } });
  t.is(badShape.status, 400);
  t.is(typeof badShape.body.detail, 'string');
  const extra = await s.request('PATCH', `/telephony/inbound/bindings/${id}`, { key, body: { agentId: agent.uuid, surprise: 1 } });
  t.is(extra.status, 422);
  t.is(extra.body.detail[0].type, 'extra_forbidden');
  const missing = await s.request('PATCH', '/telephony/inbound/bindings/999999', { key, body: { agentId: agent.uuid } });
  t.deepEqual([missing.status, missing.body.detail], [404, 'binding_not_found']);
  // Nothing changed through the refusals.
  const same = await s.request('GET', `/telephony/inbound/bindings/${id}`, { key });
  t.deepEqual(same.body.agentSnapshot, got.body.agentSnapshot);

  const other = await s.createOrg();
  for (const [method, body] of [['GET', undefined], ['PATCH', { agentId: agent.uuid }]] as const) {
    const r = await s.request(method, `/telephony/inbound/bindings/${id}`, { key: other.apiKey, ...(body ? { body } : {}) });
    t.deepEqual([r.status, r.body.detail], [404, 'binding_not_found']);
  }
  t.is((await s.request('DELETE', `/telephony/inbound/bindings/${id}`, { key: other.apiKey })).status, 204);
  t.is((await s.request('GET', `/telephony/inbound/bindings/${id}`, { key })).status, 200, "another organization's DELETE removed nothing");
  t.is((await s.request('GET', '/telephony/inbound/bindings', { key: other.apiKey })).body.total, 0);
});

test('recordInProviderConsole: the dial asks Twilio to record the whole call (Record, dual channels); not by default', async (t) => {
  const { apiKey: key, acc } = await setup();
  const on = await dial(key, acc, { agent: { ...withHook(), recordInProviderConsole: true } });
  t.is(on.status, 200, JSON.stringify(on.body));
  const onCall = [...twilio.calls.values()].find((c) => c.url?.endsWith(on.body.callId as string))!;
  t.is(onCall.params.get('Record'), 'true');
  t.is(onCall.params.get('RecordingChannels'), 'dual');
  const off = await dial(key, acc);
  const offCall = [...twilio.calls.values()].find((c) => c.url?.endsWith(off.body.callId as string))!;
  t.is(offCall.params.get('Record'), null);
});
