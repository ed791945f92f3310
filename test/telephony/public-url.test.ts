// Behind a reverse proxy: every URL handed to Twilio is built from PUBLIC_URL (https → wss for the stream) and
// webhook signatures are checked against that public URL, not the address the request reached. Carrier callbacks
// are not subject to the organization's request-rate limit.
import test from 'ava';
import { FakeTwilio } from '../fakes/twilio.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callById, fakeEnv, inlineAgent } from './rest-helpers.ts';

const PUBLIC = 'https://voice.example.test';
let s: TestServer;
let twilio: FakeTwilio;

test.before(async () => {
  twilio = await FakeTwilio.start();
  s = await startTestServer({ temporal: false, env: { ...fakeEnv(twilio), PUBLIC_URL: PUBLIC } });
  twilio.proxy = (url) => url.replace(PUBLIC, s.origin);
});
test.after.always(async () => {
  await s?.close();
  await twilio?.close();
});

test('URLs from PUBLIC_URL, signatures over the public URL, callbacks not rate limited', async (t) => {
  const { apiKey: key } = await s.createOrg({ ratePerMinute: 3 });
  const acc = twilio.addAccount();
  const r = await s.request('POST', '/call', {
    key,
    body: { type: 'outbound', callConfig: { provider: 'twilio', phoneNumber: '+14155550100', auth: { account_sid: acc.sid, auth_token: acc.token } }, toNumber: '+14155550199', agent: inlineAgent() },
  });
  t.is(r.status, 200, JSON.stringify(r.body));
  const callId: string = r.body.callId;
  const call = twilio.calls.get(r.body.carrierCallId)!;
  t.is(call.url, `${PUBLIC}/api/v1/telephony/twilio/answer/${callId}`);
  t.is(call.statusCallback, `${PUBLIC}/api/v1/telephony/twilio/status/${callId}`);
  t.is(call.asyncAmdCallback, `${PUBLIC}/api/v1/telephony/twilio/amd/${callId}`);

  const answered = await twilio.answer(call.sid);
  t.is(answered.status, 200);
  t.is(answered.stream?.url, `wss://voice.example.test/api/v1/telephony/twilio/stream/${callId}`);

  // Signed over the address the request reached (not what Twilio was given): refused.
  const local = await twilio.webhook(acc.sid, `${s.baseUrl}/telephony/twilio/status/${callId}`, { CallSid: call.sid, CallStatus: 'busy', AccountSid: acc.sid });
  t.is(local.status, 403);

  // Many callbacks in a row: none is rate limited, while the organization's own API budget is spent.
  for (let i = 0; i < 6; i++) t.is((await twilio.ring(call.sid))!.status, 204);
  const spent = await Promise.all([1, 2, 3, 4].map(() => s.request('GET', '/calls', { key })));
  t.true(spent.some((x) => x.status === 429));
  t.is((await twilio.finish(call.sid, 'busy'))!.status, 204);
  t.like(await callById(s, callId), { connection_status: 'busy', status: 'error' });
});
