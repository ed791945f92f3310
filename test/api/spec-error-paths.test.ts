// The spec's error paths no other test reaches: 500 'Failed to reactivate API key' (the database refuses the write),
// 500 'Failed to generate presigned upload URL' (an S3 bucket configured without credentials) and 400
// 'smartflo_config_missing_token: …' (POST /call type=inbound on a number whose Smartflo configuration holds no token).
// Each answers the spec's status and detail, changes nothing, and never shows a stack.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { FakeSmartflo } from '../fakes/smartflo.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callsOf, fakeEnv, inlineAgent } from '../telephony/rest-helpers.ts';

// no AWS credentials from the environment or an instance role: the S3 server below has a bucket and nothing to sign with
for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI', 'AWS_WEB_IDENTITY_TOKEN_FILE']) delete process.env[k];
process.env.AWS_EC2_METADATA_DISABLED = 'true';
process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/credentials';
process.env.AWS_CONFIG_FILE = '/nonexistent/config';

let s: TestServer;
let noCreds: TestServer;
let twilio: FakeTwilio;
let smartflo: FakeSmartflo;
test.before(async () => {
  twilio = await FakeTwilio.start();
  smartflo = await FakeSmartflo.start();
  s = await startTestServer({ temporal: false, env: fakeEnv(twilio, smartflo.origin) });
  noCreds = await startTestServer({ temporal: false, env: { S3_BUCKET: 'documents', S3_ENDPOINT: 'http://127.0.0.1:9' } });
});
test.after.always(async () => {
  await s?.close();
  await noCreds?.close();
  await twilio?.close();
  await smartflo?.close();
});

test("PUT /user/api-keys/{id}/reactivate when the database refuses the write → 500 'Failed to reactivate API key', the key stays archived", async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  const made = await s.request('POST', '/user/api-keys', { key, body: { name: 'second' } });
  t.is(made.status, 200, JSON.stringify(made.body));
  t.is((await s.request('DELETE', `/user/api-keys/${made.body.id}`, { key })).status, 200);
  // the database refuses to reactivate this one key (a constraint an operator added, a read-only replica, …)
  await s.db.query(sql.unsafe`CREATE TABLE refused_reactivations (id bigint PRIMARY KEY)`);
  await s.db.query(sql.unsafe`INSERT INTO refused_reactivations (id) VALUES (${made.body.id})`);
  await s.db.query(sql.unsafe`
    CREATE FUNCTION refuse_reactivation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.status = 'archived' AND NEW.status = 'active' AND EXISTS (SELECT 1 FROM refused_reactivations WHERE id = OLD.id) THEN
        RAISE EXCEPTION 'reactivation refused';
      END IF;
      RETURN NEW;
    END $$`);
  await s.db.query(sql.unsafe`CREATE TRIGGER refuse_reactivation BEFORE UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION refuse_reactivation()`);
  t.teardown(async () => {
    await s.db.query(sql.unsafe`DROP TRIGGER IF EXISTS refuse_reactivation ON api_keys`);
    await s.db.query(sql.unsafe`DROP FUNCTION IF EXISTS refuse_reactivation()`);
    await s.db.query(sql.unsafe`DROP TABLE IF EXISTS refused_reactivations`);
  });
  const r = await s.request('PUT', `/user/api-keys/${made.body.id}/reactivate`, { key });
  t.is(r.status, 500);
  t.is(r.body.detail, 'Failed to reactivate API key');
  t.false(JSON.stringify(r.body).includes('reactivation refused'), 'no database message or stack');
  const status = await s.db.oneFirst(sql.type(z.object({ status: z.string() }))`SELECT status FROM api_keys WHERE id = ${made.body.id} AND organization_id = ${orgId}`);
  t.is(status, 'archived');
  t.is((await s.request('GET', '/agents', { key: made.body.api_key })).status, 401, 'the archived key still does not work');
});

test("POST /knowledge-base/upload-url when the S3 bucket cannot be signed for → 500 'Failed to generate presigned upload URL', no document", async (t) => {
  const { apiKey: key, orgId } = await noCreds.createOrg();
  const r = await noCreds.request('POST', '/knowledge-base/upload-url', { key, body: { filename: 'manual.pdf', mime_type: 'application/pdf' } });
  t.is(r.status, 500);
  t.deepEqual(r.body, { detail: 'Failed to generate presigned upload URL' });
  const n = await noCreds.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM documents WHERE organization_id = ${orgId}`);
  t.is(n, 0);
});

test("POST /call type=inbound on a Smartflo number whose configuration holds no auth token → 400 'smartflo_config_missing_token: …' and a rejected row", async (t) => {
  const { apiKey: key, orgId } = await s.createOrg();
  // a configuration stored without its token (written by an older version, or by hand): the API itself never saves one
  const cfg = await insertConfig(s.db, s.config, { orgId, name: 'Tokenless', provider: 'smartflo', creds: { click_to_call_api_key: 'c2c-key' }, accountRef: null, amdEnabled: false, isDefault: true });
  await s.db.query(sql.unsafe`
    INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type)
    VALUES (${orgId}, ${cfg.id}, '+914045678901', '+914045678901', 'pstn')`);
  const before = smartflo.requests.length;
  const r = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: 'smartflo', phoneNumber: '+914045678901' }, agent: inlineAgent() } });
  t.is(r.status, 400);
  t.is(r.body.detail, 'smartflo_config_missing_token: the configuration owning +914045678901 has no auth token');
  t.is(smartflo.requests.length, before, 'nothing asked of Smartflo');
  const rows = await callsOf(s, orgId);
  t.is(rows.length, 1);
  t.like(rows[0], { status: 'error', transport: 'inbound', connection_status: 'missing_credentials' });
  t.true(rows[0]!.tags.includes('rejected'));
  t.is((await s.request('GET', '/telephony/inbound/bindings', { key })).body.total, 0, 'no binding');
});
