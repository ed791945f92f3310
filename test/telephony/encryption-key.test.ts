// A changed TELEPHONY_ENCRYPTION_KEY: credentials sealed with the previous key stay in the database, and every read of
// a telephony configuration, its numbers, an inbound binding or a stored HTTP-tool credential answers 200 with the
// record and `credentials_state: 'credentials_unreadable'` (never a 500); whatever needs the secret is refused with a
// 409 `credentials_unreadable: …` naming the record and the fix; saving the credentials again repairs it.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { encryptJson } from '../../core/secrets.ts';
import { placeOutboundCall } from '../../core/telephony/outbound.ts';
import { OutboundInvalid } from '../../core/telephony/errors.ts';
import { createLogger } from '../../core/logger.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { addNumber, callsOf, fakeEnv, inlineAgent, saveAgent, twilioConfig } from './rest-helpers.ts';

let s: TestServer;
let twilio: FakeTwilio;
test.before(async () => {
  twilio = await FakeTwilio.start();
  s = await startTestServer({ temporal: false, env: { ...fakeEnv(twilio), TELEPHONY_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
});
test.after.always(async () => {
  await s?.close();
  await twilio?.close();
});

/** What a restart with another key does to rows sealed before: they were sealed with a key the server no longer has. */
const previousKey = randomBytes(32);
const resealed = (value: unknown) => sql.binary(encryptJson(previousKey, value));

test('telephony configurations, numbers and bindings sealed with a previous key: reads answer 200 with credentials_unreadable; uses answer 409 naming the fix', async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const acc = twilio.addAccount();
  twilio.addNumber(acc.sid, '+14155550100');
  twilio.addNumber(acc.sid, '+14155550101');
  const cfg = await twilioConfig(s, key, acc, 'Old key line');
  const agent = await saveAgent(s, orgId, inlineAgent({ name: 'Front desk' }));
  const num = await addNumber(s, key, cfg.id, { address: '+14155550100', inbound_agent_uuid: agent.uuid });
  t.is(num.status, 200, JSON.stringify(num.body));
  const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, agent: inlineAgent() } });
  t.is(reg.status, 200, JSON.stringify(reg.body));
  const fresh = await s.request('GET', `/organizations/telephony-configs/${cfg.id}`, { key });
  t.is(fresh.body.credentials_state, 'ok');
  t.is((await s.request('GET', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key })).body.credentials_state, 'ok');

  const creds = { account_sid: acc.sid, auth_token: acc.token };
  await s.db.query(sql.unsafe`UPDATE telephony_configs SET credentials = ${resealed(creds)} WHERE id = ${cfg.id}`);
  await s.db.query(sql.unsafe`UPDATE inbound_bindings SET credentials = ${resealed(creds)} WHERE id = ${reg.body.bindingId}`);

  // every read: 200, the record, no credentials, the state
  for (const path of [`/organizations/telephony-configs/${cfg.id}`, `/telephony-configs/${cfg.id}`]) {
    const g = await s.request('GET', path, { key });
    t.is(g.status, 200, path);
    t.like(g.body, { id: cfg.id, name: 'Old key line', provider: 'twilio', credentials_state: 'credentials_unreadable', config: { provider: 'twilio' } });
    t.false('account_sid' in g.body.config);
    t.false('auth_token' in g.body.config);
  }
  const list = await s.request('GET', '/organizations/telephony-configs', { key });
  t.is(list.status, 200);
  t.is(list.body.items[0].credentials_state, 'credentials_unreadable');
  const numbers = await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { key });
  t.is(numbers.status, 200);
  t.is(numbers.body.items[0].address_normalized, '+14155550100');
  t.is((await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${num.body.id}`, { key })).status, 200);
  const bindings = await s.request('GET', '/telephony/inbound/bindings', { key });
  t.is(bindings.status, 200);
  t.like(bindings.body.items[0], { id: reg.body.bindingId, credentials: null, credentials_state: 'credentials_unreadable' });
  const binding = await s.request('GET', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key });
  t.like(binding.body, { credentials: null, credentials_state: 'credentials_unreadable' });
  // the binding's agent can still be swapped (its credentials are untouched)
  const swapped = await s.request('PATCH', `/telephony/inbound/bindings/${reg.body.bindingId}`, { key, body: { agentId: agent.uuid } });
  t.is(swapped.status, 200, JSON.stringify(swapped.body));
  t.is(swapped.body.credentials_state, 'credentials_unreadable');

  // whatever needs the secret: 409 naming the configuration and the fix, nothing changed
  const expected = `credentials_unreadable: the stored credentials of telephony configuration 'Old key line' (id ${cfg.id}) cannot be decrypted with the current TELEPHONY_ENCRYPTION_KEY`;
  const addOther = await addNumber(s, key, cfg.id, { address: '+14155550101' });
  t.is(addOther.status, 409);
  t.true(addOther.body.detail.startsWith(expected), addOther.body.detail);
  t.true(addOther.body.detail.includes(`PUT /organizations/telephony-configs/${cfg.id}`));
  t.is((await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { key })).body.total, 1);
  // the attachment is saved, the carrier sync is the warning
  const attach = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${num.body.id}`, { key, body: { inbound_agent_uuid: agent.uuid } });
  t.is(attach.status, 200, JSON.stringify(attach.body));
  t.false(attach.body.provider_sync.ok);
  t.true(attach.body.provider_sync.message.startsWith(expected));
  // an outbound call from the number: 409 and the rejected row (missing_credentials)
  const before = (await callsOf(s, orgId)).length;
  const dial = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100' }, toNumber: '+14155550199', agentId: agent.uuid } });
  t.is(dial.status, 409, JSON.stringify(dial.body));
  t.true(dial.body.detail.startsWith(expected), dial.body.detail);
  const rows = await callsOf(s, orgId);
  t.is(rows.length, before + 1);
  t.like(rows.at(-1), { status: 'error', connection_status: 'missing_credentials' });
  t.true(rows.at(-1)!.tags.includes('rejected'));
  t.false([...twilio.calls.values()].some((c) => c.to === '+14155550199'), 'nothing dialled');
  // a campaign dial (placeOutboundCall with the configuration): OutboundInvalid 409
  const err = await t.throwsAsync(placeOutboundCall({ db: s.db, config: s.config, logger: createLogger({ level: 'silent' }), temporal: null }, {
    orgId, agentUuid: agent.uuid, telephonyConfigId: cfg.id, fromNumber: '+14155550100', toNumber: '+14155550198',
  }));
  t.true(err instanceof OutboundInvalid);
  t.is((err as OutboundInvalid).status, 409);
  t.true(String((err as OutboundInvalid).detail).startsWith(expected));
  // Twilio's inbound webhook for the number: the binding and the number verify nothing → 403, never a 500
  const inbound = await twilio.inbound(acc.sid, '+14155550100', '+14155550177');
  t.is(inbound.status, 403);

  // a PUT that leaves the credentials alone keeps them (still unreadable); one with the whole credentials repairs it
  const renamed = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}`, { key, body: { name: 'Renamed line' } });
  t.is(renamed.status, 200, JSON.stringify(renamed.body));
  t.is(renamed.body.credentials_state, 'credentials_unreadable');
  const partial = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}`, { key, body: { config: { provider: 'twilio', auth_token: acc.token } } });
  t.is(partial.status, 422, 'stored fields cannot be merged: the whole credentials are needed');
  t.deepEqual(partial.body.detail.map((d: { loc: string[] }) => d.loc.join('.')), ['body.config.account_sid']);
  const repaired = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}`, { key, body: { config: { provider: 'twilio', account_sid: acc.sid, auth_token: acc.token } } });
  t.is(repaired.status, 200, JSON.stringify(repaired.body));
  t.like(repaired.body, { name: 'Renamed line', credentials_state: 'ok', config: { account_sid: acc.sid } });
  t.is((await addNumber(s, key, cfg.id, { address: '+14155550101' })).status, 200);
});

test('stored HTTP-tool credentials sealed with a previous key: 200 with credentials_unreadable, a partial PATCH is 422, a full one repairs', async (t) => {
  const { apiKey: key } = await s.createOrg();
  const made = await s.request('POST', '/credentials', { key, body: { name: 'CRM', type: 'api_key', header_name: 'X-Key', api_key: 'secret-123456789' } });
  t.is(made.status, 201, JSON.stringify(made.body));
  t.is(made.body.credentials_state, 'ok');
  await s.db.query(sql.unsafe`UPDATE credentials SET secret = ${resealed({ header_name: 'X-Key', api_key: 'secret-123456789' })} WHERE uuid = ${made.body.credential_uuid}`);
  const one = await s.request('GET', `/credentials/${made.body.credential_uuid}`, { key });
  t.is(one.status, 200);
  t.like(one.body, { credential_uuid: made.body.credential_uuid, name: 'CRM', type: 'api_key', credentials_state: 'credentials_unreadable' });
  t.false('api_key' in one.body);
  t.false('header_name' in one.body);
  const list = await s.request('GET', '/credentials', { key });
  t.is(list.status, 200);
  t.is(list.body.items[0].credentials_state, 'credentials_unreadable');
  const partial = await s.request('PATCH', `/credentials/${made.body.credential_uuid}`, { key, body: { api_key: 'secret-abcdefghi' } });
  t.is(partial.status, 422);
  const fixed = await s.request('PATCH', `/credentials/${made.body.credential_uuid}`, { key, body: { header_name: 'X-Key', api_key: 'secret-abcdefghi' } });
  t.is(fixed.status, 200, JSON.stringify(fixed.body));
  t.like(fixed.body, { credentials_state: 'ok', header_name: 'X-Key', api_key: '••••fghi' });
  const n = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM credentials WHERE uuid = ${made.body.credential_uuid}`);
  t.is(n, 1);
});
