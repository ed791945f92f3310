// Telephony configurations and phone numbers through HTTP against a fake Twilio: credential probe, encryption at
// rest, masking, uniqueness, provider change, default outbound, E.164 / SIP normalisation, ownership probe, the
// inbound-agent attachment synced to Twilio (VoiceUrl) with provider_sync, and cross-organization 404s.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { addNumber, fakeEnv, saveAgent, twilioConfig } from './rest-helpers.ts';

let s: TestServer;
let twilio: FakeTwilio;
test.before(async () => {
  twilio = await FakeTwilio.start();
  s = await startTestServer({ temporal: false, env: fakeEnv(twilio) });
});
test.after.always(async () => {
  await s?.close();
  await twilio?.close();
});

test('create probes the account, stores the token encrypted and never shows it', async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const acc = twilio.addAccount();
  const before = twilio.requests.length;
  const r = await s.request('POST', '/organizations/telephony-configs', {
    key, body: { name: 'Main', is_default_outbound: true, config: { provider: 'twilio', account_sid: acc.sid, auth_token: acc.token, amd_enabled: true } },
  });
  t.is(r.status, 201, JSON.stringify(r.body));
  t.like(r.body, { name: 'Main', provider: 'twilio', is_default_outbound: true, config: { provider: 'twilio', account_sid: acc.sid, amd_enabled: true } });
  t.is(r.body.config.auth_token, `••••${acc.token.slice(-4)}`);
  t.false(JSON.stringify(r.body).includes(acc.token));
  // The probe was the account fetch, authenticated.
  const probe = twilio.requests.slice(before).find((q) => q.path === `/2010-04-01/Accounts/${acc.sid}.json`);
  t.truthy(probe);
  t.true(probe!.authorized);

  const stored = await s.db.one(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
    SELECT credentials FROM telephony_configs WHERE id = ${r.body.id} AND organization_id = ${orgId}`);
  t.false(stored.credentials.includes(Buffer.from(acc.token)), 'the stored bytes do not contain the token');
  t.false(stored.credentials.toString('latin1').includes(acc.token));

  for (const path of [`/organizations/telephony-configs/${r.body.id}`, `/telephony-configs/${r.body.id}`]) {
    const g = await s.request('GET', path, { key });
    t.is(g.status, 200);
    t.false(JSON.stringify(g.body).includes(acc.token));
    t.is(g.body.config.auth_token, `••••${acc.token.slice(-4)}`);
  }
  const list = await s.request('GET', '/organizations/telephony-configs', { key });
  t.is(list.status, 200);
  t.is(list.body.items.length, 1);
  t.false(JSON.stringify(list.body).includes(acc.token));
});

test('refused credentials → 400 invalid_credentials, nothing stored', async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const acc = twilio.addAccount();
  const r = await s.request('POST', '/organizations/telephony-configs', {
    key, body: { name: 'Wrong', config: { provider: 'twilio', account_sid: acc.sid, auth_token: 'not-the-token' } },
  });
  t.is(r.status, 400);
  t.true(typeof r.body.detail === 'string' && r.body.detail.startsWith('invalid_credentials: '), r.body.detail);
  t.true(r.body.detail.includes('20003'));
  t.false(r.body.detail.includes('not-the-token'));
  const n = await s.db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM telephony_configs WHERE organization_id = ${orgId}`);
  t.is(n, 0);
});

test('body errors: 422 shapes (each carrier its own), unknown provider 400, duplicate name 409', async (t) => {
  const { apiKey: key } = await s.createOrg();
  const acc = twilio.addAccount();
  const bad = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: '', config: { provider: 'twilio', account_sid: 'nope', auth_token: '' } } });
  t.is(bad.status, 422);
  t.true(Array.isArray(bad.body.detail));
  const locs = bad.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
  t.true(locs.includes('body.name'));
  t.true(locs.includes('body.config.account_sid'));
  const unknown = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'x', config: { provider: 'carrier-pigeon' } } });
  t.deepEqual([unknown.status, unknown.body.detail], [400, 'unknown_provider: carrier-pigeon']);
  const plivo = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'x', config: { provider: 'plivo', auth_id: 'a', auth_token: 'b' } } });
  t.is(plivo.status, 422);
  t.true(plivo.body.detail.some((d: { loc: unknown[] }) => d.loc.join('.') === 'body.config.auth_id'));
  await twilioConfig(s, key, acc, 'Same');
  const dup = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'Same', config: { provider: 'twilio', account_sid: acc.sid, auth_token: acc.token } } });
  t.deepEqual([dup.status, dup.body.detail], [409, "A telephony configuration named 'Same' already exists in this organization."]);
});

test('PUT is partial, re-probes new credentials, refuses a provider change; set-default moves the default; DELETE', async (t) => {
  const { apiKey: key } = await s.createOrg();
  const acc = twilio.addAccount();
  const a = await twilioConfig(s, key, acc, 'A', { amd_enabled: false });
  const b = await twilioConfig(s, key, acc, 'B');
  const renamed = await s.request('PUT', `/organizations/telephony-configs/${a.id}`, { key, body: { name: 'A2', config: { amd_enabled: true } } });
  t.is(renamed.status, 200, JSON.stringify(renamed.body));
  t.like(renamed.body, { name: 'A2', config: { account_sid: acc.sid, amd_enabled: true } });
  const change = await s.request('PUT', `/organizations/telephony-configs/${a.id}`, { key, body: { config: { provider: 'smartflo', auth_token: 'x' } } });
  t.is(change.status, 400);
  t.regex(change.body.detail, /provider/);
  const wrong = await s.request('PUT', `/organizations/telephony-configs/${a.id}`, { key, body: { config: { auth_token: 'wrong-token' } } });
  t.is(wrong.status, 400);
  t.regex(wrong.body.detail, /^invalid_credentials: /);
  const clash = await s.request('PUT', `/organizations/telephony-configs/${a.id}`, { key, body: { name: 'B' } });
  t.is(clash.status, 409);
  // Unchanged after the refusals.
  const still = await s.request('GET', `/organizations/telephony-configs/${a.id}`, { key });
  t.like(still.body, { name: 'A2', provider: 'twilio' });

  const d1 = await s.request('POST', `/organizations/telephony-configs/${a.id}/set-default-outbound`, { key });
  t.is(d1.status, 200);
  t.true(d1.body.is_default_outbound);
  const d2 = await s.request('POST', `/organizations/telephony-configs/${b.id}/set-default-outbound`, { key });
  t.true(d2.body.is_default_outbound);
  const list = await s.request('GET', '/organizations/telephony-configs', { key });
  t.deepEqual(list.body.items.filter((c: { is_default_outbound: boolean }) => c.is_default_outbound).map((c: { id: number }) => c.id), [b.id]);

  const del = await s.request('DELETE', `/organizations/telephony-configs/${a.id}`, { key });
  t.is(del.status, 204);
  const gone = await s.request('GET', `/organizations/telephony-configs/${a.id}`, { key });
  t.deepEqual([gone.status, gone.body.detail], [404, 'Telephony configuration not found']);
});

test('DELETE of a configuration with live calls or unfinished campaigns → 409 naming them, nothing deleted; once they are done → 204', async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const acc = twilio.addAccount();
  const cfg = await twilioConfig(s, key, acc, 'Busy line');
  const other = await twilioConfig(s, key, twilio.addAccount(), 'Other line');
  const agent = await saveAgent(s, orgId);
  const insertCall = (status: string, configId: number) => s.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO calls (organization_id, transport, status, call_source, telephony_provider, telephony_config_id, config_snapshot)
    VALUES (${orgId}, 'outbound', ${status}, 'api_outbound', 'twilio', ${configId}, '{}'::jsonb) RETURNING id::text`);
  const insertCampaign = (name: string, state: string, configId: number) => s.db.oneFirst(sql.type(z.object({ id: z.number() }))`
    INSERT INTO campaigns (organization_id, name, state, agent_id, source_type, source_id, source_key, telephony_configuration_id,
                           max_concurrency, retry_config, circuit_breaker)
    VALUES (${orgId}, ${name}, ${state}, ${agent.id}, 'csv', 'x', 'x', ${configId}, 1, '{}'::jsonb, '{}'::jsonb) RETURNING id`);
  const pending = await insertCall('pending', cfg.id);
  const active = await insertCall('active', cfg.id);
  await insertCall('completed', cfg.id); // finished calls do not hold it
  await insertCall('active', other.id); // nor calls of another configuration
  const paused = await insertCampaign('Spring recall', 'paused', cfg.id);
  const created = await insertCampaign('Later', 'created', cfg.id);
  await insertCampaign('Done', 'completed', cfg.id);
  await insertCampaign('Broken', 'failed', cfg.id);
  const exists = async () => (await s.request('GET', `/organizations/telephony-configs/${cfg.id}`, { key })).status === 200;

  const r = await s.request('DELETE', `/organizations/telephony-configs/${cfg.id}`, { key });
  t.is(r.status, 409);
  t.is(typeof r.body.detail, 'string');
  t.true(r.body.detail.startsWith("Telephony configuration 'Busy line' is in use by 2 live call(s) ("), r.body.detail);
  for (const id of [pending, active]) t.true(r.body.detail.includes(id), id);
  t.true(r.body.detail.includes(`2 campaign(s) not completed or failed (${paused} 'Spring recall' paused, ${created} 'Later' created)`), r.body.detail);
  t.false(r.body.detail.includes("'Done'"));
  t.true(await exists());

  // the calls end: the campaigns alone still hold it
  await s.db.query(sql.unsafe`UPDATE calls SET status = 'completed' WHERE id IN (${pending}, ${active})`);
  const r2 = await s.request('DELETE', `/organizations/telephony-configs/${cfg.id}`, { key });
  t.is(r2.status, 409);
  t.false(r2.body.detail.includes('live call'), r2.body.detail);
  t.true(await exists());

  await s.db.query(sql.unsafe`UPDATE campaigns SET state = 'completed' WHERE id IN (${paused}, ${created})`);
  t.is((await s.request('DELETE', `/organizations/telephony-configs/${cfg.id}`, { key })).status, 204);
  t.false(await exists());
  t.is((await s.request('DELETE', `/organizations/telephony-configs/${other.id}`, { key })).status, 409, 'the other configuration has a live call');
});

test("another organization's configuration and numbers → 404", async (t) => {
  const mine = await s.createOrg();
  const other = await s.createOrg();
  const acc = twilio.addAccount();
  twilio.addNumber(acc.sid, '+14155550123');
  const cfg = await twilioConfig(s, mine.apiKey, acc);
  const num = await addNumber(s, mine.apiKey, cfg.id, { address: '+14155550123' });
  t.is(num.status, 200);
  for (const [method, path, body] of [
    ['GET', `/organizations/telephony-configs/${cfg.id}`, undefined],
    ['GET', `/telephony-configs/${cfg.id}`, undefined],
    ['PUT', `/organizations/telephony-configs/${cfg.id}`, { name: 'stolen' }],
    ['DELETE', `/organizations/telephony-configs/${cfg.id}`, undefined],
    ['POST', `/organizations/telephony-configs/${cfg.id}/set-default-outbound`, undefined],
    ['POST', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { address: '+14155550199' }],
    ['GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, undefined],
    ['PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${num.body.id}`, { label: 'x' }],
    ['DELETE', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${num.body.id}`, undefined],
  ] as const) {
    const r = await s.request(method, path, { key: other.apiKey, ...(body ? { body } : {}) });
    t.deepEqual([r.status, r.body?.detail], [404, 'Telephony configuration not found'], `${method} ${path}`);
  }
  const still = await s.request('GET', `/organizations/telephony-configs/${cfg.id}`, { key: mine.apiKey });
  t.is(still.body.name, 'Main Twilio');
});

test('numbers: E.164 normalisation, bare digits need country_code, SIP kept, 409, not owned → 400', async (t) => {
  const { apiKey: key } = await s.createOrg();
  const acc = twilio.addAccount();
  twilio.addNumber(acc.sid, '+14155550100');
  twilio.addNumber(acc.sid, '+442071838750');
  const cfg = await twilioConfig(s, key, acc);

  const spaced = await addNumber(s, key, cfg.id, { address: '+1 (415) 555-0100', label: 'Support' });
  t.is(spaced.status, 200, JSON.stringify(spaced.body));
  t.like(spaced.body, {
    telephony_configuration_id: cfg.id, address: '+1 (415) 555-0100', address_normalized: '+14155550100', address_type: 'pstn',
    label: 'Support', is_active: true, is_default_caller_id: false, extra_metadata: {}, inbound_agent_uuid: null,
  });
  t.false('provider_sync' in spaced.body, 'no agent attached: no provider_sync');

  const bare = await addNumber(s, key, cfg.id, { address: '02071838750' });
  t.is(bare.status, 400);
  t.regex(bare.body.detail, /country_code/);
  const uk = await addNumber(s, key, cfg.id, { address: '02071838750', country_code: 'GB' });
  t.is(uk.status, 200, JSON.stringify(uk.body));
  t.is(uk.body.address_normalized, '+442071838750');

  const sip = await addNumber(s, key, cfg.id, { address: 'sip:support@pbx.example.com' });
  t.is(sip.status, 200);
  t.like(sip.body, { address_normalized: 'sip:support@pbx.example.com', address_type: 'sip' });

  const dup = await addNumber(s, key, cfg.id, { address: '+14155550100' });
  t.deepEqual([dup.status, dup.body.detail], [409, 'This phone number is already added in this organization.']);

  const notOwned = await addNumber(s, key, cfg.id, { address: '+14155550999' });
  t.deepEqual([notOwned.status, notOwned.body.detail], [400, 'Phone number +14155550999 is not owned by this Twilio account']);

  const numericAgent = await addNumber(s, key, cfg.id, { address: '+14155550101', inbound_agent_uuid: '12' });
  t.is(numericAgent.status, 422);

  const list = await s.request('GET', `/organizations/telephony-configs/${cfg.id}/phone-numbers`, { key });
  t.is(list.status, 200);
  t.like(list.body, { total: 3, page: 1, perPage: 50, totalPages: 1 });

  // Same number in another organization is fine.
  const other = await s.createOrg();
  const cfg2 = await twilioConfig(s, other.apiKey, acc);
  const again = await addNumber(s, other.apiKey, cfg2.id, { address: '+14155550100' });
  t.is(again.status, 200);
});

test('inbound agent attachment: VoiceUrl synced to Twilio (provider_sync ok), PUT swaps, unknown agent 404, sync failure is a warning', async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const acc = twilio.addAccount();
  const pn = twilio.addNumber(acc.sid, '+14155550142');
  const cfg = await twilioConfig(s, key, acc);
  const agent = await saveAgent(s, orgId, { name: 'Receptionist', llm: { provider: 'openai', model: 'gpt-4.1-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } });

  const missing = await addNumber(s, key, cfg.id, { address: '+14155550142', inbound_agent_uuid: '00000000-0000-4000-8000-000000000000' });
  t.deepEqual([missing.status, missing.body.detail], [404, 'Agent not found']);

  const r = await addNumber(s, key, cfg.id, { address: '+14155550142', inbound_agent_uuid: agent.uuid });
  t.is(r.status, 200, JSON.stringify(r.body));
  t.like(r.body, { inbound_agent_uuid: agent.uuid, inbound_agent_id: agent.id, inbound_agent_name: 'Receptionist', provider_sync: { ok: true } });
  t.is(pn.voiceUrl, `${s.baseUrl}/telephony/twilio/voice`);
  t.is(pn.voiceMethod, 'POST');
  t.is(pn.statusCallback, `${s.baseUrl}/telephony/twilio/voice-status`);

  const agent2 = await saveAgent(s, orgId, { name: 'Night shift', llm: { provider: 'openai', model: 'gpt-4.1-mini' }, stt: { provider: 'deepgram' }, tts: { provider: 'elevenlabs' } });
  const put = await s.request('PUT', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${r.body.id}`, { key, body: { inbound_agent_uuid: agent2.uuid } });
  t.is(put.status, 200);
  t.like(put.body, { inbound_agent_uuid: agent2.uuid, inbound_agent_name: 'Night shift', provider_sync: { ok: true } });

  // The number left the Twilio account: the row is saved, provider_sync says Twilio was not updated.
  const acc2 = twilio.addAccount();
  const cfg2 = await twilioConfig(s, key, acc2, 'Second');
  twilio.addNumber(acc2.sid, '+14155550143');
  const sip = await addNumber(s, key, cfg2.id, { address: 'sip:desk@pbx.example.com', inbound_agent_uuid: agent.uuid });
  t.is(sip.status, 200);
  t.false(sip.body.provider_sync.ok);
  t.is(typeof sip.body.provider_sync.message, 'string');

  const del = await s.request('DELETE', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${r.body.id}`, { key });
  t.is(del.status, 204);
  const del2 = await s.request('DELETE', `/organizations/telephony-configs/${cfg.id}/phone-numbers/${r.body.id}`, { key });
  t.deepEqual([del2.status, del2.body.detail], [404, 'Phone number not found']);
});

test('the OpenAPI document lists the telephony endpoints and carrier webhooks', async (t) => {
  const r = await s.request('GET', '/openapi.json', { key: null });
  t.is(r.status, 200);
  for (const p of ['/organizations/telephony-configs', '/organizations/telephony-configs/{config_id}/phone-numbers', '/telephony-configs/{config_id}', '/telephony/inbound/bindings/{id}', '/telephony/{carrier}/voice', '/telephony/{carrier}/answer/{callId}']) {
    t.truthy(r.body.paths[p], p);
  }
  // the one set of carrier webhooks names every carrier that has webhooks (Smartflo has none)
  t.deepEqual(r.body.paths['/telephony/{carrier}/voice'].post.parameters[0].schema.enum, ['twilio', 'plivo', 'telnyx', 'vonage', 'exotel']);
  t.truthy(r.body.paths['/telephony/inbound/bindings/{id}'].patch);
  // every carrier's config body is documented, the schema-generated ones with the adapters' own fields
  const configs = r.body.paths['/organizations/telephony-configs'].post.requestBody.content['application/json'].schema.properties.config.oneOf as Array<{ title: string; properties: Record<string, unknown>; required: string[] }>;
  t.deepEqual(configs.map((c) => c.title), ['twilio', 'smartflo', 'plivo', 'telnyx', 'vonage', 'exotel']);
  const byId = Object.fromEntries(configs.map((c) => [c.title, c]));
  t.deepEqual(byId.plivo!.required, ['provider', 'auth_id', 'auth_token']);
  t.deepEqual(byId.telnyx!.required, ['provider', 'api_key', 'public_key', 'connection_id']);
  t.deepEqual(byId.vonage!.required, ['provider', 'api_key', 'api_secret', 'application_id', 'private_key', 'signature_secret']);
  t.deepEqual(byId.exotel!.required, ['provider', 'api_key', 'api_token', 'account_sid']);
  t.like(byId.exotel!.properties, { provider: { const: 'exotel' }, subdomain: { default: 'api.exotel.com' }, stream_encoding: { enum: ['pcm16', 'mulaw'] } });
  t.falsy(byId.plivo!.properties.amd_enabled, 'amd_enabled is Twilio only');
  const record = r.body.paths['/organizations/telephony-configs'].get.responses[200].content['application/json'].schema.properties.items.items;
  t.deepEqual(record.properties.provider.enum, ['twilio', 'smartflo', 'plivo', 'telnyx', 'vonage', 'exotel']);
});
