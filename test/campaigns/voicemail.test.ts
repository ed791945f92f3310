// A connected campaign call: the fake Twilio answers, its media stream connects and the call runs on the media side;
// answering-machine detection says "machine", the call ends with endedReason voicemail, the media side signals the
// campaign workflow, and the contact is dialed again after voicemail_delay_seconds; the second call is a person who
// hangs up, which ends the campaign.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { getCallRow, until } from '../helpers/calls.ts';
import type { FakeCall } from '../fakes/twilio.ts';
import { openStream, startPhoneRig, type PhoneRig } from '../telephony/media-helpers.ts';
import { attempts, csvOf, isolateCampaignIds, uploadCsv, waitForState } from './helpers.ts';

let rig: PhoneRig;
test.before(async () => {
  rig = await startPhoneRig('campaigns-voicemail-test');
  await isolateCampaignIds(rig.s);
});
test.after.always(async () => {
  await rig?.close();
});

test('voicemail (AMD machine) on a connected call is retried after voicemail_delay_seconds; a person answering ends it', async (t) => {
  t.timeout(180_000);
  const { s, twilio } = rig;
  const { orgId, apiKey } = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
  const name = rig.scenarios.add({ stt: { utterances: [] }, llm: [] });
  const agent = await s.request('POST', '/agents', {
    key: apiKey,
    body: { name, systemPrompt: 'You are a phone test agent.', llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' },
      noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello.'], interruptible: false }, voicemailDetection: true },
  });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const acc = twilio.addAccount();
  const cfg = await insertConfig(s.db, s.config, { orgId, name: 'Line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: true, isDefault: true });
  const FROM = '+15550002222';
  twilio.addNumber(acc.sid, FROM);
  await s.db.query(sql.unsafe`INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type) VALUES (${orgId}, ${cfg.id}, ${FROM}, ${FROM}, 'pstn')`);

  // The carrier: ring, answer, connect the media stream; the first call is a machine, the second a person who hangs up.
  let n = 0;
  const errors: string[] = [];
  const onDial = (call: FakeCall) => {
    if (call.accountSid !== acc.sid) return;
    const attempt = ++n;
    void (async () => {
      await twilio.ring(call.sid);
      const twiml = await twilio.answer(call.sid);
      if (!twiml.stream) throw new Error(`no <Stream> in ${twiml.xml}`);
      const media = openStream(rig, call, twiml.stream);
      const callId = twiml.stream.parameters.callId!;
      await until(async () => (await getCallRow(s.db, callId)).status === 'active', 20_000, 'call active');
      if (attempt === 1) await twilio.amd(call.sid, 'machine_end_beep');
      else {
        // a person: hears the greeting start, then hangs up (a hang-up before the pipeline has started is a call
        // that never connected, `cancelled`, which is not what this attempt is about)
        await until(async () => media.heardMs > 0, 20_000, 'greeting heard');
        media.hangup();
      }
    })().catch((err: unknown) => errors.push(String(err)));
  };
  twilio.on('dial', onDial);
  t.teardown(() => twilio.off('dial', onDial));

  const source = await uploadCsv(s, apiKey, csvOf(['+15557650001']));
  const c = await s.request('POST', '/campaign/create', {
    key: apiKey,
    body: { name: 'Voicemail', agent_uuid: agent.body.uuid, source_type: 'csv', source_id: source, retry_config: { max_retries: 2, voicemail_delay_seconds: 10, retry_delay_seconds: 600 } },
  });
  t.is(c.status, 200, JSON.stringify(c.body));
  t.is((await s.request('POST', `/campaign/${c.body.id}/start`, { key: apiKey })).status, 200);
  const done = await waitForState(s, apiKey, c.body.id, 'completed', 150_000);
  t.deepEqual(errors, []);
  t.is(done.executed_count, 1);
  const rows = await attempts(s, c.body.id);
  t.is(rows.length, 2);
  const ended = z.object({ connection_status: z.string().nullable(), ended_reason: z.string().nullable() });
  const first = await s.db.one(sql.type(ended)`SELECT connection_status, ended_reason FROM calls WHERE id = ${rows[0]!.call_id}`);
  const second = await s.db.one(sql.type(ended)`SELECT connection_status, ended_reason FROM calls WHERE id = ${rows[1]!.call_id}`);
  t.deepEqual(first, { connection_status: 'completed', ended_reason: 'voicemail' });
  t.is(second.connection_status, 'completed');
  t.not(second.ended_reason, 'voicemail');
  t.is(rows[1]!.retry_delay_seconds, 10, 'voicemail_delay_seconds, not retry_delay_seconds');
  t.is(new Date(rows[1]!.scheduled_at).getTime() - new Date(rows[0]!.ended_at!).getTime(), 10_000);
  const report = (await (await fetch(`${s.baseUrl}/campaign/${c.body.id}/report`, { headers: { 'x-api-key': apiKey } })).text()).trim().split('\r\n');
  t.regex(report[1]!, /^1,\+15557650001,done,2,completed,user_hangup,/);
});

test('voicemail-left is reported apart: a mailbox gets the agent\'s message; the call is tagged voicemail_left (GET /campaign/{id}/calls?tag=voicemail_left) and the report says so', async (t) => {
  t.timeout(180_000);
  const { s, twilio } = rig;
  const { orgId, apiKey } = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
  const name = rig.scenarios.add({ stt: { utterances: [] }, llm: [], tts: { msPerChar: 10 } });
  const agent = await s.request('POST', '/agents', {
    key: apiKey,
    body: { name, systemPrompt: 'You are a phone test agent.', llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' },
      noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello.'], interruptible: false }, voicemailDetection: true, voicemailMessage: 'Hi {{first_name}}, please call Acme back.' },
  });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const acc = twilio.addAccount();
  const cfg = await insertConfig(s.db, s.config, { orgId, name: 'Line', provider: 'twilio', creds: { account_sid: acc.sid, auth_token: acc.token }, accountRef: acc.sid, amdEnabled: true, isDefault: true });
  const FROM = '+15550003333';
  twilio.addNumber(acc.sid, FROM);
  await s.db.query(sql.unsafe`INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type) VALUES (${orgId}, ${cfg.id}, ${FROM}, ${FROM}, 'pstn')`);
  const errors: string[] = [];
  const onDial = (call: FakeCall) => {
    if (call.accountSid !== acc.sid) return;
    void (async () => {
      await twilio.ring(call.sid);
      const twiml = await twilio.answer(call.sid);
      const media = openStream(rig, call, twiml.stream!);
      await until(() => media.heardMs > 0, 20_000, 'greeting heard');
      await twilio.amd(call.sid, 'machine_end_beep'); // the end of the mailbox's greeting: the message goes now
    })().catch((err: unknown) => errors.push(String(err)));
  };
  twilio.on('dial', onDial);
  t.teardown(() => twilio.off('dial', onDial));
  const source = await uploadCsv(s, apiKey, 'phone_number,first_name\n+15557650009,Ada\n');
  const c = await s.request('POST', '/campaign/create', {
    key: apiKey, body: { name: 'Drop', agent_uuid: agent.body.uuid, source_type: 'csv', source_id: source, retry_config: { enabled: false } },
  });
  t.is(c.status, 200, JSON.stringify(c.body));
  t.is((await s.request('POST', `/campaign/${c.body.id}/start`, { key: apiKey })).status, 200);
  await waitForState(s, apiKey, c.body.id, 'completed', 150_000);
  t.deepEqual(errors, []);
  const left = await s.request('GET', `/campaign/${c.body.id}/calls?tag=voicemail_left`, { key: apiKey });
  t.is(left.body.total, 1, JSON.stringify(left.body));
  t.like(left.body.items[0], { endedReason: 'voicemail', connectionStatus: 'completed' });
  t.true((left.body.items[0].tags as string[]).includes('voicemail_left'));
  const transcript = await s.db.oneFirst(sql.type(z.object({ transcript: z.any() }))`SELECT transcript FROM calls WHERE id = ${left.body.items[0].callId}`) as Array<{ role: string; content?: string }>;
  t.is(transcript.filter((e) => e.role === 'assistant').at(-1)?.content, 'Hi Ada, please call Acme back.');
  const report = (await (await fetch(`${s.baseUrl}/campaign/${c.body.id}/report`, { headers: { 'x-api-key': apiKey } })).text()).trim().split('\r\n');
  t.regex(report[1]!, /^1,\+15557650009,done,1,completed,voicemail,[\d.]*,[0-9a-f-]{36},,true,/);
});
