// A carrier that cannot be reached: the credential probe answers 502 and stores nothing; a dial answers 502
// provider_rejected and leaves a dial_failed row. Carrier requests also go through the outbound guard: without
// OUTBOUND_ALLOW_HOSTS a loopback carrier base is refused the same way.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { freePort } from '../../scripts/infra.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callById, inlineAgent } from './rest-helpers.ts';

let open: TestServer;
let guarded: TestServer;
test.before(async () => {
  const closed = `http://127.0.0.1:${await freePort()}`; // nothing listens there
  open = await startTestServer({ temporal: false, env: { TWILIO_API_BASE_URL: closed, OUTBOUND_ALLOW_HOSTS: '127.0.0.1' } });
  guarded = await startTestServer({ temporal: false, env: { TWILIO_API_BASE_URL: closed } });
});
test.after.always(async () => {
  await open?.close();
  await guarded?.close();
});

const SID = `AC${'0'.repeat(32)}`;

for (const which of ['unreachable', 'refused by the outbound guard'] as const) {
  test(`carrier ${which}: probe → 502, dial → 502 provider_rejected with a dial_failed row`, async (t) => {
    const s = which === 'unreachable' ? open : guarded;
    const { apiKey: key, orgId } = await s.createOrg();
    const cfg = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'x', config: { provider: 'twilio', account_sid: SID, auth_token: 'secret-token-1' } } });
    t.is(cfg.status, 502);
    t.regex(cfg.body.detail, /twilio/);
    t.false(cfg.body.detail.includes('secret-token-1'));
    t.is(await s.db.oneFirst(sql.type(z.object({ c: z.number() }))`SELECT count(*)::int AS c FROM telephony_configs WHERE organization_id = ${orgId}`), 0);

    const r = await s.request('POST', '/call', {
      key,
      body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: SID, auth_token: 'secret-token-1' } }, toNumber: '+14155550199', agent: inlineAgent() },
    });
    t.is(r.status, 502);
    t.like(r.body.detail, { code: 'provider_rejected', provider: 'twilio', providerStatus: 502 });
    t.false(JSON.stringify(r.body).includes('secret-token-1'));
    t.like(await callById(s, r.body.detail.callId), { organization_id: orgId, status: 'error', connection_status: 'dial_failed', ended_reason: null });
  });
}
