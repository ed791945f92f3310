// Smartflo (the streaming-native carrier) against its fake: configuration with the static signed
// voice_bot_wss_url, numbers, POST /call inbound (server-side credentials, format-tolerant number lookup, token and
// ownership checks, every error string) and outbound (click-to-call with a signed custom_identifier), and the stream
// resolution the media side runs (signed identifier → our outbound call; binding; the number's agent; refusals).
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { createLogger } from '../../core/logger.ts';
import { resolveInboundStream } from '../../core/telephony/inbound.ts';
import { customIdentifier, parseCustomIdentifier, verifySmartfloStreamSig } from '../../core/telephony/signing.ts';
import { FakeSmartflo, type SmartfloAccount } from '../fakes/smartflo.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { addNumber, callById, callsOf, fakeEnv, inlineAgent, saveAgent } from './rest-helpers.ts';

let s: TestServer;
let smartflo: FakeSmartflo;
let twilio: FakeTwilio;
const logger = createLogger({ level: 'silent', name: 'test' });

test.before(async () => {
  smartflo = await FakeSmartflo.start();
  twilio = await FakeTwilio.start();
  s = await startTestServer({ temporal: false, env: fakeEnv(twilio, smartflo.origin) });
});
test.after.always(async () => {
  await s?.close();
  await smartflo?.close();
  await twilio?.close();
});

const deps = () => ({ db: s.db, config: s.config, logger });

async function smartfloConfig(key: string, acc: SmartfloAccount, o: { clickToCall?: boolean; name?: string } = {}) {
  const r = await s.request('POST', '/organizations/telephony-configs', {
    key, body: { name: o.name ?? 'Smartflo', config: { provider: 'smartflo', auth_token: acc.token, ...(o.clickToCall === false ? {} : { click_to_call_api_key: acc.clickToCallKey }) } },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body as { id: number; voice_bot_wss_url: string };
}

async function setup(o: { clickToCall?: boolean; balanceUsd?: number } = {}) {
  const org = await s.createOrg({ balanceUsd: o.balanceUsd });
  const acc = smartflo.addAccount(['914045678901']);
  const cfg = await smartfloConfig(org.apiKey, acc, o);
  return { ...org, acc, cfg };
}

test('configuration: token probed, secrets masked, static signed voice_bot_wss_url', async (t) => {
  const { apiKey: key, acc, cfg } = await setup();
  const url = new URL(cfg.voice_bot_wss_url);
  t.is(url.protocol, 'ws:');
  t.is(url.pathname, `/api/v1/telephony/smartflo/stream/${cfg.id}`);
  t.true(verifySmartfloStreamSig(s.config, cfg.id, url.searchParams.get('sig')));
  t.false(verifySmartfloStreamSig(s.config, cfg.id + 1, url.searchParams.get('sig')));
  const g = await s.request('GET', `/telephony-configs/${cfg.id}`, { key });
  t.is(g.status, 200);
  t.is(g.body.voice_bot_wss_url, cfg.voice_bot_wss_url);
  t.is(g.body.config.auth_token, `••••${acc.token.slice(-4)}`);
  t.is(g.body.config.click_to_call_api_key, `••••${acc.clickToCallKey.slice(-4)}`);
  t.false(JSON.stringify(g.body).includes(acc.token));
  t.false(JSON.stringify(g.body).includes(acc.clickToCallKey));

  const bad = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'bad', config: { provider: 'smartflo', auth_token: 'nope' } } });
  t.is(bad.status, 400);
  t.regex(bad.body.detail, /^invalid_credentials: /);
  const amd = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'amd', config: { provider: 'smartflo', auth_token: acc.token, amd_enabled: true } } });
  t.is(amd.status, 422);
});

test('numbers: ownership from the account DIDs; the agent attachment needs no carrier webhook', async (t) => {
  const { apiKey: key, orgId, cfg } = await setup();
  const agent = await saveAgent(s, orgId);
  const ok = await addNumber(s, key, cfg.id, { address: '+914045678901', inbound_agent_uuid: agent.uuid });
  t.is(ok.status, 200, JSON.stringify(ok.body));
  t.true(ok.body.provider_sync.ok);
  const notOwned = await addNumber(s, key, cfg.id, { address: '+914045678999' });
  t.deepEqual([notOwned.status, notOwned.body.detail], [400, 'Phone number +914045678999 is not owned by this Smartflo account']);
});

test('POST /call inbound: format-tolerant lookup, server-side credentials, every error string', async (t) => {
  const { apiKey: key, orgId, acc, cfg } = await setup();
  const body = (phoneNumber: string) => ({ type: 'inbound', callConfig: { provider: 'smartflo', phoneNumber }, agent: inlineAgent({ name: 'Flo' }) });
  const none = await s.request('POST', '/call', { key, body: body('+914045678901') });
  t.is(none.status, 400);
  t.regex(none.body.detail, /^phone_number_not_configured: /);

  t.is((await addNumber(s, key, cfg.id, { address: '+914045678901' })).status, 200);
  for (const spelling of ['+914045678901', '914045678901', '4045678901', '04045678901']) {
    const r = await s.request('POST', '/call', { key, body: body(spelling) });
    t.is(r.status, 200, `${spelling}: ${JSON.stringify(r.body)}`);
    t.like(r.body, { status: 'registered', provider: 'smartflo', address_normalized: '+914045678901', voice_bot_wss_url: cfg.voice_bot_wss_url });
  }
  const list = await s.request('GET', '/telephony/inbound/bindings', { key });
  t.is(list.body.total, 1, 'one binding per (provider, number) whatever the spelling');

  // Inactive numbers do not count.
  const numbers = await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { key });
  await s.request('PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${numbers.body.items[0].id}`, { key, body: { is_active: false } });
  const inactive = await s.request('POST', '/call', { key, body: body('+914045678901') });
  t.regex(inactive.body.detail, /^phone_number_not_configured: /);
  await s.request('PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${numbers.body.items[0].id}`, { key, body: { is_active: true } });

  // Live checks: the number left the account; then the token was revoked.
  acc.numbers = [];
  const gone = await s.request('POST', '/call', { key, body: body('+914045678901') });
  t.deepEqual([gone.status, gone.body.detail], [400, 'Phone number +914045678901 is not owned by this Smartflo account']);
  acc.token = 'revoked-and-replaced';
  const revoked = await s.request('POST', '/call', { key, body: body('+914045678901') });
  t.is(revoked.status, 400);
  t.regex(revoked.body.detail, /^invalid_credentials: /);

  const rows = await callsOf(s, orgId);
  t.true(rows.every((r) => r.tags.includes('rejected') && r.transport === 'inbound'));
  t.deepEqual(rows.map((r) => r.connection_status).sort(), ['credentials_invalid', 'inbound_invalid', 'inbound_invalid', 'inbound_invalid']);
});

test('POST /call outbound: click-to-call with a signed custom_identifier; needs a click_to_call_api_key', async (t) => {
  const { apiKey: key, orgId, acc, cfg } = await setup();
  t.is((await addNumber(s, key, cfg.id, { address: '+914045678901' })).status, 200);
  const body = { type: 'outbound', callConfig: { provider: 'smartflo', phoneNumber: '914045678901' }, toNumber: '+919876543210', agent: inlineAgent() };
  const r = await s.request('POST', '/call', { key, body });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { status: 'pending', provider: 'smartflo', carrierCallId: null, fromNumber: '+914045678901', toNumber: '+919876543210' });
  const dial = smartflo.dials.find((d) => d.account === acc)!;
  t.like(dial.body, { customer_number: '919876543210', caller_id: '914045678901', async: 1, api_key: acc.clickToCallKey });
  t.is(parseCustomIdentifier(s.config, dial.customIdentifier), r.body.callId);
  t.is(parseCustomIdentifier(s.config, `${r.body.callId}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`), null);
  t.like(await callById(s, r.body.callId), { status: 'pending', transport: 'outbound', telephony_provider: 'smartflo', carrier_call_id: null });

  smartflo.failNextDial(acc.clickToCallKey, 500, 'Internal error');
  const failed = await s.request('POST', '/call', { key, body });
  t.is(failed.status, 502);
  t.like(failed.body.detail, { code: 'provider_rejected', provider: 'smartflo', providerStatus: 500, message: 'Internal error' });
  t.like(await callById(s, failed.body.detail.callId), { connection_status: 'dial_failed' });

  // A configuration without a click-to-call key cannot dial.
  const other = await s.createOrg();
  const acc2 = smartflo.addAccount(['914045678902']);
  const cfg2 = await smartfloConfig(other.apiKey, acc2, { clickToCall: false });
  t.is((await addNumber(s, other.apiKey, cfg2.id, { address: '+914045678902' })).status, 200);
  const noKey = await s.request('POST', '/call', { key: other.apiKey, body: { ...body, callConfig: { provider: 'smartflo', phoneNumber: '+914045678902' } } });
  t.is(noKey.status, 400);
  t.regex(noKey.body.detail, /^phone_number_not_configured: /);
  t.is(smartflo.dials.filter((d) => d.account === acc2).length, 0);
  void orgId;
});

test('stream resolution: signed identifier → our outbound call; binding wins; number agent; refusals', async (t) => {
  const { apiKey: key, orgId, cfg } = await setup();
  const numberAgent = await saveAgent(s, orgId, inlineAgent({ name: 'Number agent' }));
  t.is((await addNumber(s, key, cfg.id, { address: '+914045678901', inbound_agent_uuid: numberAgent.uuid })).status, 200);
  const nameOf = (id: string) => s.db.oneFirst(sql.type(z.object({ n: z.string().nullable() }))`SELECT agent_name AS n FROM calls WHERE id = ${id}`);

  // (a) our outbound call, correlated by the signed identifier.
  const out = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, toNumber: '+919876543210', agent: inlineAgent() } });
  const a = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: { custom_identifier: customIdentifier(s.config, out.body.callId) }, from: '914045678901', to: '919876543210', carrierCallId: 'sf-1' });
  t.deepEqual(a, { ok: true, callId: out.body.callId, orgId, direction: 'outbound' });
  t.is((await callById(s, out.body.callId))!.carrier_call_id, 'sf-1');

  // A forged identifier is ignored: the dialled number routes to its saved agent.
  const forged = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: { custom_identifier: `${out.body.callId}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA` }, from: '919999999999', to: '04045678901', carrierCallId: 'sf-2' });
  t.true(forged.ok);
  if (!forged.ok) return;
  t.not(forged.callId, out.body.callId);
  t.is(forged.direction, 'inbound');
  t.is(await nameOf(forged.callId), 'Number agent');
  t.like(await callById(s, forged.callId), { status: 'pending', transport: 'inbound', call_source: 'api_inbound', platform_number: '+914045678901', customer_number: '+919999999999', telephony_provider: 'smartflo', carrier_call_id: 'sf-2' });

  // (b) a binding for the number wins.
  const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, agent: inlineAgent({ name: 'Binding agent' }) } });
  t.is(reg.status, 200);
  const b = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: {}, from: '919999999998', to: '914045678901', carrierCallId: 'sf-3' });
  t.true(b.ok);
  if (b.ok) t.is(await nameOf(b.callId), 'Binding agent');
  // DELETE falls back to the number.
  await s.request('DELETE', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key });
  const c = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: {}, from: '919999999997', to: '+914045678901', carrierCallId: 'sf-4' });
  if (c.ok) t.is(await nameOf(c.callId), 'Number agent');
  else t.fail(JSON.stringify(c));

  // Unknown number → no route; an outbound call that is no longer pending is refused.
  const unknown = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: {}, from: '1', to: '+914000000000', carrierCallId: null });
  t.like(unknown, { ok: false, reason: 'no_route' });
  const again = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: { custom_identifier: customIdentifier(s.config, out.body.callId) }, from: '1', to: '2', carrierCallId: null });
  t.true(again.ok, 'still pending until the media side claims it');
  await s.db.query(sql.unsafe`UPDATE calls SET status = 'active' WHERE id = ${out.body.callId}`);
  const claimed = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: { custom_identifier: customIdentifier(s.config, out.body.callId) }, from: '1', to: '2', carrierCallId: null });
  t.like(claimed, { ok: false, reason: 'call_not_pending' });

  // Wallet empty: a rejected inbound row.
  await s.db.query(sql.unsafe`UPDATE organizations SET balance_usd = 0 WHERE id = ${orgId}`);
  const refused = await resolveInboundStream(deps(), { configId: cfg.id, customParameters: {}, from: '919999999996', to: '+914045678901', carrierCallId: 'sf-5' });
  t.like(refused, { ok: false, reason: 'insufficient_balance' });
  const rows = await callsOf(s, orgId);
  t.true(rows.some((r) => r.connection_status === 'insufficient_balance' && r.transport === 'inbound' && r.tags.includes('rejected')));
});

test('transfer: Call Operations type 4 with the 10-digit number (the documented Smartflo transfer); SIP is provider_not_supported; a wrong token is the carrier error', async (t) => {
  const { smartflo: adapter } = await import('../../core/telephony/smartflo.ts');
  const acc = smartflo.addAccount(['914045678909']);
  const cx = { config: s.config };
  const req = (destination: string) => ({ destination, timeoutS: 20, recordingCallbackUrl: null, callerId: null });
  await adapter.transfer(cx, { auth_token: acc.token }, '1758782566.8131', req('+919812345678'));
  t.deepEqual(smartflo.transfers.at(-1), { callId: '1758782566.8131', intercom: ['9812345678'] });
  await adapter.transfer(cx, { auth_token: acc.token }, '1758782566.8132', req('+14155550123'));
  t.deepEqual(smartflo.transfers.at(-1), { callId: '1758782566.8132', intercom: ['14155550123'] });
  // a host-less extension (the spec's PJSIP/123) is a Smartflo intercom
  await adapter.transfer(cx, { auth_token: acc.token }, '1758782566.8133', req('PJSIP/123'));
  t.deepEqual(smartflo.transfers.at(-1), { callId: '1758782566.8133', intercom: ['123'] });
  await adapter.transfer(cx, { auth_token: acc.token }, '1758782566.8134', req('SIP/4501'));
  t.deepEqual(smartflo.transfers.at(-1), { callId: '1758782566.8134', intercom: ['4501'] });
  const before = smartflo.transfers.length;
  await t.throwsAsync(adapter.transfer(cx, { auth_token: acc.token }, 'x', req('sip:desk@pbx.example.com')), { message: /^provider_not_supported: Smartflo cannot transfer a call to the SIP address 'sip:desk@pbx\.example\.com'/ });
  await t.throwsAsync(adapter.transfer(cx, { auth_token: acc.token }, 'x', req('SIP/desk@pbx.example.com')), { message: /^provider_not_supported: Smartflo cannot/ });
  t.is(smartflo.transfers.length, before, 'nothing asked of Smartflo');
  await t.throwsAsync(adapter.transfer(cx, { auth_token: 'wrong' }, 'x', req('+919812345678')), { message: /Unauthenticated/ });
});

test('where an agent meets Smartflo: a SIP transfer or recordInProviderConsole is refused (400 naming Smartflo) at number attachment, POST /call, PATCH of an attached agent and binding PATCH; PJSIP/123 is accepted', async (t) => {
  const { apiKey: key, orgId, cfg } = await setup();
  const sipTool = { type: 'transferCall', name: 'to_desk', config: { destination: 'sip:desk@pbx.example.com' } };
  const extTool = { type: 'transferCall', name: 'to_desk', config: { destination: 'PJSIP/123' } };
  // an agent saved alone meets no carrier: any destination the schema takes, the spec's PJSIP/123 included
  const sipAgent = await s.request('POST', '/agents', { key, body: inlineAgent({ name: 'SIP desk', tools: [sipTool] }) });
  t.is(sipAgent.status, 201, JSON.stringify(sipAgent.body));
  const extAgent = await s.request('POST', '/agents', { key, body: inlineAgent({ name: 'Extension desk', tools: [extTool] }) });
  t.is(extAgent.status, 201);
  const recAgent = await s.request('POST', '/agents', { key, body: inlineAgent({ name: 'Recorder', recordInProviderConsole: true }) });
  t.is(recAgent.status, 201);

  // number attachment
  const attachSip = await addNumber(s, key, cfg.id, { address: '+914045678901', inbound_agent_uuid: sipAgent.body.uuid });
  t.is(attachSip.status, 400);
  t.is(attachSip.body.detail, `Agent 'SIP desk' (${sipAgent.body.uuid}) cannot answer Smartflo calls: tools.0.config.destination: Smartflo cannot transfer a call to the SIP address 'sip:desk@pbx.example.com': its transfer API takes numbers, extensions and departments of the account only (write an extension as PJSIP/<number>)`);
  t.is((await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { key })).body.total, 0, 'nothing saved');
  const attachRec = await addNumber(s, key, cfg.id, { address: '+914045678901', inbound_agent_uuid: recAgent.body.uuid });
  t.is(attachRec.status, 400);
  t.regex(attachRec.body.detail, /^Agent 'Recorder' .* cannot answer Smartflo calls: recordInProviderConsole: recordInProviderConsole cannot be honoured on inbound calls: Smartflo's API cannot start a recording/);
  const attached = await addNumber(s, key, cfg.id, { address: '+914045678901', inbound_agent_uuid: extAgent.body.uuid });
  t.is(attached.status, 200, JSON.stringify(attached.body));
  const putSip = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${attached.body.id}`, { key, body: { inbound_agent_uuid: sipAgent.body.uuid } });
  t.is(putSip.status, 400);
  t.is((await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${attached.body.id}`, { key })).body.inbound_agent_uuid, extAgent.body.uuid);

  // PATCH of the attached agent: its new SIP destination is refused naming where it answers; nothing changed
  const patched = await s.request('PATCH', `/agents/${extAgent.body.uuid}`, { key, body: { tools: [sipTool] } });
  t.is(patched.status, 400);
  t.is(patched.body.detail.error, 'invalid_agent_config');
  t.deepEqual(patched.body.detail.details[0].loc, ['tools', 0, 'config', 'destination']);
  t.regex(patched.body.detail.details[0].msg, /^Smartflo cannot transfer a call to the SIP address 'sip:desk@pbx\.example\.com'.*\(the agent answers \+914045678901 \(telephony configuration 'Smartflo'\)\)$/);
  t.is((await s.request('GET', `/agents/${extAgent.body.uuid}`, { key })).body.config.tools[0].config.destination, 'PJSIP/123');
  t.is((await s.request('PATCH', `/agents/${extAgent.body.uuid}`, { key, body: { description: 'fine' } })).status, 200);
  // the unattached SIP agent can still be edited freely
  t.is((await s.request('PATCH', `/agents/${sipAgent.body.uuid}`, { key, body: { description: 'alone' } })).status, 200);

  // POST /call inbound with an inline agent: the call-shaped 400 and a rejected row
  const before = (await callsOf(s, orgId)).length;
  const inbound = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, agent: inlineAgent({ tools: [sipTool] }) } });
  t.is(inbound.status, 400);
  t.like(inbound.body.detail.details[0], { path: 'agent.tools.0.config.destination', type: 'value_error' });
  t.regex(inbound.body.detail.details[0].message, /^Smartflo cannot transfer/);
  const rows = await callsOf(s, orgId);
  t.is(rows.length, before + 1);
  t.is(rows.at(-1)!.connection_status, 'provider_not_supported');
  // POST /call outbound with a saved agent: paths relative to the agent
  const outbound = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, toNumber: '+919812345678', agentId: recAgent.body.uuid } });
  t.is(outbound.status, 400);
  t.like(outbound.body.detail.details[0], { path: 'recordInProviderConsole' });
  t.regex(outbound.body.detail.details[0].message, /outbound calls: Smartflo/);

  // binding PATCH
  const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, agent: inlineAgent({ tools: [extTool] }) } });
  t.is(reg.status, 200, JSON.stringify(reg.body));
  const swap = await s.request('PATCH', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key, body: { agentId: sipAgent.body.uuid } });
  t.is(swap.status, 400);
  t.regex(swap.body.detail, /^Agent 'SIP desk' cannot answer Smartflo calls: tools\.0\.config\.destination: Smartflo cannot transfer/);
  t.is((await s.request('GET', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key })).body.agent_name, reg.body.agentName);
  // a saved agent bound to the number: a PATCH adding a SIP transfer names the binding
  t.is((await s.request('PATCH', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key, body: { agentId: extAgent.body.uuid } })).status, 200);
  const p2 = await s.request('PATCH', `/agents/${extAgent.body.uuid}`, { key, body: { tools: [sipTool] } });
  t.is(p2.status, 400);
  t.true(p2.body.detail.details.some((d: { msg: string }) => /inbound binding/.test(d.msg)), JSON.stringify(p2.body.detail));
});
