// The carriers of the scenario table (Plivo, Telnyx, Vonage, Exotel), one table of scenarios run against
// each carrier's local fake (REST, signed callbacks and media stream in the carrier's own dialect): configuration
// probe / encryption / masking and number attachment with provider_sync; an outbound call answered, bridged to our
// stream, with a greeting and a full caller turn ending in a completed row; busy / no-answer / failed ending
// never-connected rows with call.ended and no call.started; an inbound call by number attachment; forged
// callbacks → 403 with nothing changed; another organization's configuration, number and binding → 404.
import test, { type ExecutionContext } from 'ava';
import WebSocket from 'ws';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import type { EngineFactory } from '../../media/deps.ts';
import { fakeEngines, type FakeScenario } from '../fakes/engines.ts';
import { endedRow, getCallRow } from '../helpers/calls.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { carrierDrivers, type CarrierDriver } from './carrier-drivers.ts';
import { callById, saveAgent } from './rest-helpers.ts';
import { agentQuiet, phoneAgent } from './media-helpers.ts';
import { answeringMachine } from '../fakes/answering-machine.ts';
import { until } from '../helpers/wait.ts';
import { startReceiver, type Receiver } from '../helpers/http.ts';

let s: TestServer;
let hooks: Receiver;
const scenarios = new Map<string, FakeScenario>();
const made = new Map<string, ReturnType<typeof fakeEngines>>();
let n = 0;
const drivers: CarrierDriver[] = carrierDrivers();

const factory: EngineFactory = async ({ config }) => {
  const e = fakeEngines(scenarios.get(config.name) ?? { stt: { utterances: [] }, llm: [] });
  made.set(config.name, e);
  return e;
};

test.before(async () => {
  for (const d of drivers) await d.start();
  hooks = await startReceiver();
  s = await startTestServer({
    temporal: false,
    env: Object.assign({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }, ...drivers.map((d) => d.env())),
    media: { engines: factory },
  });
  for (const d of drivers) d.setBase(s.baseUrl);
});
test.after.always(async () => {
  await s?.close();
  for (const d of drivers) await d.close();
  await hooks?.close();
});

const eventsOf = (callId: string) => hooks.bodies().filter((e) => e.callId === callId);

function agent(scenario: FakeScenario, over: Record<string, unknown> = {}): Record<string, unknown> {
  const name = `carrier-scenario-${++n}`;
  scenarios.set(name, scenario);
  return phoneAgent({ name, webhook: { url: `${hooks.url}/hook` }, ...over });
}

const FROM = '+14155550100';
const TO = '+14155550199';

async function setup(d: CarrierDriver) {
  const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
  const acc = d.account();
  d.addNumber(acc, FROM);
  return { ...org, acc };
}

async function dial(d: CarrierDriver, key: string, acc: unknown, agentConfig: Record<string, unknown>) {
  const seen = d.dialCount();
  const r = await s.request('POST', '/call', {
    key, body: { type: 'outbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, toNumber: TO, agent: agentConfig },
  });
  if (r.status !== 200) throw new Error(`POST /call: ${r.status} ${JSON.stringify(r.body)}`);
  const call = await until(() => d.dialAt(seen), { what: 'the dial to reach the fake carrier', timeoutMs: 10_000 });
  return { callId: r.body.callId as string, call, body: r.body };
}

for (const d of drivers) {
  test.serial(`${d.id}: configuration probed, encrypted and masked; number ownership and inbound attachment; other organizations get 404`, async (t) => {
    const { apiKey: key, orgId, acc } = await setup(d);
    const creds = d.creds(acc);
    const bad = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'Wrong', config: { provider: d.id, ...d.wrongCreds(acc) } } });
    t.is(bad.status, 400, JSON.stringify(bad.body));
    t.regex(String(bad.body.detail), /^invalid_credentials: /);
    const r = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'Main', config: { provider: d.id, ...creds } } });
    t.is(r.status, 201, JSON.stringify(r.body));
    for (const secret of d.secrets(acc)) {
      t.false(JSON.stringify(r.body).includes(secret), 'secrets are masked');
      const stored = await s.db.one(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT credentials FROM telephony_configs WHERE id = ${r.body.id}`);
      t.false(stored.credentials.includes(Buffer.from(secret)), 'secrets are encrypted at rest');
    }
    t.is(r.body.config.provider, d.id);
    d.configured?.(acc, r.body);

    const agentRow = await saveAgent(s, orgId, agent({}));
    const notOwned = await s.request('POST', `/organizations/telephony-configs/${r.body.id}/phone-numbers`, { key, body: { address: '+14155550777' } });
    t.deepEqual([notOwned.status, notOwned.body.detail], [400, `Phone number +14155550777 is not owned by this ${d.name} account`]);
    const num = await s.request('POST', `/organizations/telephony-configs/${r.body.id}/phone-numbers`, { key, body: { address: FROM, inbound_agent_uuid: agentRow.uuid } });
    t.is(num.status, 200, JSON.stringify(num.body));
    t.true(num.body.provider_sync.ok, JSON.stringify(num.body.provider_sync));
    t.true(d.inboundPointsAt(acc, FROM, `${s.baseUrl}/telephony/${d.id}/voice`), 'the carrier answers the number with our voice webhook');

    const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: creds }, agent: agent({}) } });
    t.is(reg.status, 200, JSON.stringify(reg.body));
    t.like(reg.body, { status: 'registered', provider: d.id, provider_sync: { ok: true } });

    const other = await s.createOrg();
    for (const [method, path] of [
      ['GET', `/organizations/telephony-configs/${r.body.id}`],
      ['GET', `/organizations/telephony-configs/${r.body.id}/phone-numbers/${num.body.id}`],
      ['PUT', `/organizations/telephony-configs/${r.body.id}/phone-numbers/${num.body.id}`],
      ['GET', `/telephony/inbound/bindings/${reg.body.bindingId}`],
    ] as const) {
      const res = await s.request(method, path, { key: other.apiKey, ...(method === 'PUT' ? { body: { label: 'x' } } : {}) });
      t.is(res.status, 404, `${method} ${path}`);
    }
  });

  test.serial(`${d.id}: outbound call answered and bridged to the stream, greeting and a full caller turn → completed row`, async (t) => {
    const { apiKey: key, orgId, acc } = await setup(d);
    const a = agent({ stt: { utterances: ['what time is it'] }, llm: [{ text: 'It is noon.' }], tts: { msPerChar: 20 } });
    const { callId, call } = await dial(d, key, acc, a);
    const row0 = await callById(s, callId);
    t.like(row0, { organization_id: orgId, status: 'pending', transport: 'outbound', telephony_provider: d.id, platform_number: FROM, customer_number: TO });
    d.checkDial(t, call, s.baseUrl, callId);
    const phone = await d.answerAndConnect(acc, call);
    await phone.opened;
    await until(async () => (await getCallRow(s.db, callId)).status === 'active', { what: 'call active', timeoutMs: 10_000 });
    await until(() => phone.heardMs > 300, { what: 'greeting heard', timeoutMs: 20_000 });
    await agentQuiet(phone);
    const greetingMs = phone.heardMs;
    d.checkMedia(t, phone);
    await phone.tone(600);
    await phone.silence(700);
    await until(() => made.get(a.name as string)!.engines.llm.requests.length > 0, { what: 'reply requested', timeoutMs: 20_000 });
    await until(() => phone.heardMs > greetingMs + 300, { what: 'spoken reply', timeoutMs: 20_000 });
    await agentQuiet(phone);
    phone.hangup();
    await d.completed(acc, call, 5);
    const row = await endedRow(s.db, callId);
    t.is(row.status, 'completed');
    t.is(row.connection_status, 'completed');
    t.is(row.ended_reason, 'user_hangup');
    const transcript = row.transcript as Array<{ role: string; content?: string }>;
    t.truthy(transcript.find((e) => e.role === 'user' && e.content === 'what time is it'), JSON.stringify(transcript));
    t.truthy(transcript.find((e) => e.role === 'assistant' && e.content === 'It is noon.'), JSON.stringify(transcript));
    t.truthy((await callById(s, callId))!.carrier_call_id);
    const started = await until(() => eventsOf(callId).find((e) => e.event === 'call.ended'), { what: 'call.ended', timeoutMs: 10_000 });
    t.like(started, { connectionStatus: 'completed', endedReason: 'user_hangup' });
  });

  for (const [raw, expected] of d.terminal) {
    test.serial(`${d.id}: outbound ${raw} → row ${expected}, call.ended without call.started`, async (t) => {
      const { apiKey: key, acc } = await setup(d);
      const { callId, call } = await dial(d, key, acc, agent({}));
      const cb = await d.finish(acc, call, raw);
      t.true(cb.status < 300, `callback answered ${cb.status}`);
      const row = await callById(s, callId);
      t.like(row, { status: 'error', connection_status: expected, ended_reason: null, started_at: null });
      t.true(row!.tags.includes('not_connected'));
      const ended = await until(() => eventsOf(callId).find((e) => e.event === 'call.ended'), { what: 'call.ended', timeoutMs: 10_000 });
      t.like(ended, { event: 'call.ended', callId, endedReason: null, connectionStatus: expected, duration: 0 });
      t.false(eventsOf(callId).some((e) => e.event === 'call.started'));
    });
  }

  if (d.failNextDial) {
    const fail = d.failNextDial;
    test.serial(`${d.id}: carrier 4xx → 400 provider_rejected, 5xx → 502; both leave dial_failed rows`, async (t) => {
      const { apiKey: key, acc } = await setup(d);
      for (const [status, expected] of [[400, 400], [503, 502]] as const) {
        fail(acc, status, `refused with ${status}`);
        const r = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, toNumber: TO, agent: agent({}) } });
        t.is(r.status, expected, JSON.stringify(r.body));
        t.like(r.body.detail, { code: 'provider_rejected', provider: d.id, providerStatus: status });
        t.regex(r.body.detail.message, new RegExp(`refused with ${status}`));
        t.like(await callById(s, r.body.detail.callId), { status: 'error', connection_status: 'dial_failed', ended_reason: null });
      }
      const wrong = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.wrongCreds(acc) }, toNumber: TO, agent: agent({}) } });
      t.is(wrong.status, 400);
      t.like(wrong.body.detail, { code: 'provider_rejected', providerStatus: 401 });
      for (const secret of d.secrets(acc)) t.false(JSON.stringify(wrong.body).includes(secret));
    });
  }

  test.serial(`${d.id}: forged or unsigned callbacks → 403 and nothing changes`, async (t) => {
    const { apiKey: key, acc } = await setup(d);
    const { callId, call } = await dial(d, key, acc, agent({}));
    for (const how of ['forged', 'unsigned'] as const) {
      const r = await d.finish(acc, call, d.terminal[0]![0], how);
      t.is(r.status, 403, how);
    }
    t.like(await callById(s, callId), { status: 'pending', connection_status: null, ended_at: null });
    t.deepEqual(eventsOf(callId), []);
    const inbound = await d.inbound(acc, FROM, '+14155550123', 'forged');
    t.is(inbound.status, 403);
    // the media stream: a forged token is refused before anything else (1008), the call stays pending
    const ws = new WebSocket(`${s.baseUrl.replace(/^http/, 'ws')}/telephony/${d.id}/stream/${callId}?token=${'A'.repeat(32)}`);
    ws.on('error', () => {});
    const code = await new Promise<number>((ok) => ws.on('close', (c) => ok(c)));
    t.is(code, 1008);
    t.is((await callById(s, callId))!.status, 'pending');
    t.is((await d.finish(acc, call, d.terminal[0]![0])).status < 300, true, 'the genuine callback is accepted');
    t.is((await callById(s, callId))!.connection_status, d.terminal[0]![1]);
  });

  test.serial(`${d.id}: barge-in — the caller talks over the greeting: ${d.clear ? 'the carrier gets its clear message' : 'no clear message exists, sending stops'}; the greeting is cut to what was played`, async (t) => {
    const { apiKey: key, acc } = await setup(d);
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo';
    const a = agent({ stt: { utterances: ['wait a moment'] }, llm: [{ text: 'Sure.' }], tts: { msPerChar: 40 } }, { greeting: { firstMessages: [words], interruptible: true } });
    const { callId, call } = await dial(d, key, acc, a);
    const phone = await d.answerAndConnect(acc, call);
    await until(() => phone.heardMs >= 1500, { what: 'greeting playing', timeoutMs: 20_000 });
    const speaking = phone.tone(700);
    await until(async () => ((await getCallRow(s.db, callId)).transcript as unknown[] | null)?.length || made.get(a.name as string)!.engines.llm.requests.length > 0 || (d.clear && phone.clears > 0), { what: 'barge-in', timeoutMs: 15_000 });
    await speaking;
    await phone.silence(600);
    await until(() => made.get(a.name as string)!.engines.llm.requests.length > 0, { what: 'reply requested', timeoutMs: 15_000 });
    if (d.clear) t.true(phone.clears > 0, 'clear sent');
    else t.is(phone.received.length, 0, 'no text message at all (Vonage has no clear)');
    phone.hangup();
    await d.completed(acc, call, 5);
    const row = await endedRow(s.db, callId);
    const greeting = (row.transcript as Array<{ role: string; content: string; interrupted?: boolean }>).find((e) => e.role === 'assistant')!;
    t.true(greeting.interrupted, 'the greeting is marked interrupted');
    t.true(words.startsWith(greeting.content) && greeting.content.length < words.length, greeting.content);
  });

  if (d.amd) {
    const amd = d.amd;
    test.serial(`${d.id}: carrier answering-machine detection says machine → endedReason voicemail, the carrier call is hung up`, async (t) => {
      const { apiKey: key, acc } = await setup(d);
      const { callId, call } = await dial(d, key, acc, agent({}, { voicemailDetection: true }));
      t.true(amd.requested(call), 'AMD requested on the dial');
      const phone = await d.answerAndConnect(acc, call);
      await until(async () => (await getCallRow(s.db, callId)).status === 'active', { what: 'call active', timeoutMs: 10_000 });
      await amd.machine(call);
      const row = await endedRow(s.db, callId);
      t.is(row.ended_reason, 'voicemail');
      // the verdict is written to the call's logs beside the ending (not before it): wait for it
      const verdict = await until(async () => (await callById(s, callId))!.logs.voicemail_detection, { what: 'voicemail verdict on the logs', timeoutMs: 10_000 });
      t.like(verdict, { result: 'voicemail', by: 'amd' });
      await until(() => amd.hungUp(call), { what: 'carrier hang-up', timeoutMs: 10_000 });
      phone.hangup();
    });
  }

  if (d.transferred) {
    const transferred = d.transferred;
    for (const [destination, expected] of [['+15550009999', '15550009999'], ['SIP/alice@pbx.example.com', 'sip:alice@pbx.example.com']] as const) {
      test.serial(`${d.id}: transferCall to ${destination} moves the call through the carrier${expected.startsWith('sip:') ? ' as a SIP dial' : ''} → endedReason transferred`, async (t) => {
        const { apiKey: key, acc } = await setup(d);
        const tools = [{ type: 'transferCall', name: 'transfer_to_sales', description: 'Transfer to sales', config: { destination, timeout: 20, recordTransfer: false } }];
        const a = agent({ stt: { utterances: ['put me through to sales'] }, llm: [{ toolCalls: [{ name: 'transfer_to_sales' }] }, { text: 'I cannot transfer you.' }] }, { tools });
        const { callId, call } = await dial(d, key, acc, a);
        const phone = await d.answerAndConnect(acc, call);
        await until(() => phone.heardMs > 300, { what: 'greeting', timeoutMs: 20_000 });
        await agentQuiet(phone);
        await phone.tone(600);
        await phone.silence(600);
        const seen = await until(() => transferred(call), { what: 'transfer at the carrier', timeoutMs: 20_000 });
        t.true(seen.includes(expected), seen);
        if (expected.startsWith('sip:')) t.false(/<Number>|"type":"phone"|"to":"\+/.test(seen), `never dialled as a phone number: ${seen}`);
        phone.hangup(); // the call leaves the stream for the transfer
        const row = await endedRow(s.db, callId);
        t.is(row.ended_reason, 'transferred');
        t.like((await callById(s, callId))!.logs.transfer, { destination });
      });
    }
  }

  // A destination this carrier cannot reach: Exotel transfers nothing, the dial-out carriers no host-less extension.
  const unreachable = d.transferred ? 'PJSIP/123' : '+15550009999';
  const carrierLabel = { plivo: 'Plivo', telnyx: 'Telnyx', vonage: 'Vonage', exotel: 'Exotel' }[d.id] ?? d.id;
  test.serial(`${d.id}: an agent whose transfer to ${unreachable} this carrier cannot make → POST /call 400 naming the carrier and destination, nothing dialled`, async (t) => {
    const { apiKey: key, orgId, acc } = await setup(d);
    const tools = [{ type: 'transferCall', name: 'transfer_to_desk', description: 'Transfer to the desk', config: { destination: unreachable } }];
    const seen = d.dialCount();
    const r = await s.request('POST', '/call', { key, body: { type: 'outbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, toNumber: TO, agent: agent({}, { tools }) } });
    t.is(r.status, 400, JSON.stringify(r.body));
    t.is(r.body.detail.error, 'Agent configuration validation failed');
    t.like(r.body.detail.details[0], { path: 'agent.tools.0.config.destination', type: 'value_error' });
    t.true(r.body.detail.details[0].message.startsWith(`${carrierLabel} cannot`), r.body.detail.details[0].message);
    t.true(r.body.detail.details[0].message.includes(unreachable), r.body.detail.details[0].message);
    t.is(d.dialCount(), seen, 'nothing dialled');
    const rows = await s.db.any(sql.type(z.object({ connection_status: z.string().nullable(), tags: z.array(z.string()) }))`
      SELECT connection_status, tags FROM calls WHERE organization_id = ${orgId}`);
    t.deepEqual(rows.map((x) => x.connection_status), ['provider_not_supported']);
    t.true(rows[0]!.tags.includes('rejected'));
  });

  test.serial(`${d.id}: sendDtmf — the keys reach the carrier ${d.id === 'exotel' ? 'as in-band tones (Goertzel)' : 'through its DTMF API, the stream going on'}; the LLM and the logs say what was sent`, async (t) => {
    const { apiKey: key, acc } = await setup(d);
    const a = agent({ stt: { utterances: ['for appointments press two then pound'] }, llm: [{ toolCalls: [{ name: 'send_dtmf', arguments: JSON.stringify({ digits: '2w#' }) }] }, { text: 'Done.' }] }, { tools: [{ type: 'sendDtmf', config: {} }] });
    const { callId, call } = await dial(d, key, acc, a);
    const phone = await d.answerAndConnect(acc, call);
    await until(() => phone.heardMs > 200, { what: 'greeting', timeoutMs: 20_000 });
    await agentQuiet(phone);
    await phone.tone(700);
    await phone.silence(600);
    const llm = made.get(a.name as string)!.engines.llm;
    await until(() => llm.requests.length >= 2, { what: 'the tool result back at the LLM', timeoutMs: 20_000 });
    const via = d.id === 'exotel' ? 'in-band' : 'carrier';
    t.regex(JSON.stringify(llm.requests[1]!.messages.find((m) => m.role === 'tool')), via === 'carrier' ? /Pressed 2w# on the keypad \(sent by the phone carrier\)/ : /as tones on the line/);
    await agentQuiet(phone);
    t.is(d.keys(call, phone), '2#');
    phone.hangup();
    await d.completed(acc, call, 5);
    await endedRow(s.db, callId);
    const logs = await until(async () => (await callById(s, callId))!.logs.dtmf_sent, { what: 'keys on the logs', timeoutMs: 10_000 });
    t.like(logs[0], { digits: '2w#', via });
  });

  test.serial(`${d.id}: voicemail drop ${d.amd ? 'after the carrier says machine' : 'without carrier AMD'}: the agent stops, the machine records the message after its beep, the row ends voicemail`, async (t) => {
    const { apiKey: key, acc } = await setup(d);
    const message = 'This is Acme calling about your order. Please call us back.';
    const a = agent({ stt: { utterances: ['hi you have reached the voicemail of ada please leave a message after the tone'] }, llm: [{ text: 'Hello?' }], tts: { msPerChar: 20 } }, { voicemailDetection: true, voicemailMessage: message });
    const { callId, call } = await dial(d, key, acc, a);
    const phone = await d.answerAndConnect(acc, call);
    await until(async () => (await getCallRow(s.db, callId)).status === 'active', { what: 'call active', timeoutMs: 10_000 });
    await until(() => phone.heardMs > 100, { what: 'the opener', timeoutMs: 20_000 });
    await agentQuiet(phone, 300);
    if (d.amd) await d.amd.machine(call);
    const machine = await answeringMachine(phone, { onBeep: async () => void (await d.amd?.messageEnd?.(call)) });
    const row = await endedRow(s.db, callId);
    t.is(row.ended_reason, 'voicemail');
    t.is(row.connection_status, 'completed');
    t.true(machine.heardAtBeep - machine.heardAtGreeting < 400, 'quiet over the greeting');
    await until(() => machine.recordedMs() >= message.length * 20 - 200, { what: 'the message recorded after the beep', timeoutMs: 10_000 });
    t.is((row.transcript as Array<{ role: string; content?: string }>).filter((e) => e.role === 'assistant').at(-1)?.content, message);
    const logs = await until(async () => (await callById(s, callId))!.logs.voicemail, { what: 'the drop on the logs', timeoutMs: 10_000 });
    t.like(logs, { left: true });
    t.true(d.amd?.messageEnd ? ['carrier', 'beep'].includes(logs.after) : logs.after === 'beep', logs.after);
    phone.hangup();
  });

  test.serial(`${d.id}: a live call whose transfer to ${unreachable} this carrier cannot make: refused before the transfer message is said, the LLM hears why, the call goes on`, async (t) => {
    const { apiKey: key, acc } = await setup(d);
    const a = agent({ stt: { utterances: ['put me through to the desk'] }, llm: [{ toolCalls: [{ name: 'transfer_to_desk' }] }, { text: 'I cannot transfer you, but I can help.' }] });
    const { callId, call } = await dial(d, key, acc, a);
    // an agent that met the carrier before the API refused such agents: the call's snapshot carries the transfer
    const tool = { type: 'transferCall', name: 'transfer_to_desk', description: 'Transfer to the desk', config: { destination: unreachable, customMessage: 'Connecting you to the desk now.', timeout: 30, recordTransfer: true } };
    await s.db.query(sql.unsafe`UPDATE calls SET config_snapshot = jsonb_set(config_snapshot, '{tools}', (config_snapshot->'tools') || ${sql.jsonb([tool] as never)}) WHERE id = ${callId}`);
    const phone = await d.answerAndConnect(acc, call);
    await until(() => phone.heardMs > 300, { what: 'greeting', timeoutMs: 20_000 });
    await agentQuiet(phone);
    await phone.tone(600);
    await phone.silence(600);
    await until(() => made.get(a.name as string)!.engines.llm.requests.length > 1, { what: 'the LLM hears the refusal', timeoutMs: 20_000 });
    t.is((await getCallRow(s.db, callId)).status, 'active', 'the call goes on');
    phone.hangup();
    await d.completed(acc, call, 5);
    const row = await endedRow(s.db, callId);
    t.is(row.ended_reason, 'user_hangup');
    const entry = (row.transcript as Array<{ role: string; name?: string; status?: string }>).find((e) => e.role === 'tool');
    t.like(entry, { name: 'transfer_to_desk', status: 'failed' });
    const told = JSON.stringify(made.get(a.name as string)!.engines.llm.requests[1]!.messages);
    t.regex(told, /provider_not_supported/);
    t.true(told.includes(`${carrierLabel} cannot`), told);
    t.false(made.get(a.name as string)!.engines.tts.texts.some((x) => x.includes('Connecting you to the desk')), 'the transfer message was never said');
    t.is((await callById(s, callId))!.logs.transfer, undefined, 'no transfer was asked of the carrier');
  });

  /** An organization whose number FROM answers with a saved agent (configuration + number attachment). */
  async function inboundSetup(t: ExecutionContext, org: { apiKey: string; orgId: string }, a: Record<string, unknown>) {
    const acc = d.account();
    d.addNumber(acc, FROM);
    const cfg = await s.request('POST', '/organizations/telephony-configs', { key: org.apiKey, body: { name: 'In', config: { provider: d.id, ...d.creds(acc) } } });
    t.is(cfg.status, 201, JSON.stringify(cfg.body));
    d.configured?.(acc, cfg.body);
    const saved = await saveAgent(s, org.orgId, a);
    const num = await s.request('POST', `/organizations/telephony-configs/${cfg.body.id}/phone-numbers`, { key: org.apiKey, body: { address: FROM, inbound_agent_uuid: saved.uuid } });
    t.true(num.body.provider_sync?.ok, JSON.stringify(num.body));
    return acc;
  }
  const inboundRows = (orgId: string, customer: string) => s.db.any(sql.type(z.object({ id: z.string(), status: z.string(), connection_status: z.string().nullable(), tags: z.array(z.string()) }))`
    SELECT id::text, status, connection_status, tags FROM calls WHERE organization_id = ${orgId} AND transport = 'inbound' AND customer_number = ${customer}`);

  test.serial(`${d.id}: an inbound webhook the carrier delivers twice (same call id) → one row, one slot, the same stream answer`, async (t) => {
    // concurrency 1: a second admission of the retry would be refused (concurrency_limit_reached) and answer otherwise
    const org = await s.createOrg({ balanceUsd: 50, concurrency: 1 });
    const acc = await inboundSetup(t, org, agent({ tts: { msPerChar: 20 } }));
    const r = await d.inboundRetried(acc, FROM, '+14155550131');
    t.true(r.statuses.every((x) => x < 300), JSON.stringify(r.statuses));
    t.truthy(r.answers[0], 'bridged to our stream');
    t.is(r.answers[1], r.answers[0], 'the retry gets the same stream instruction');
    const rows = await inboundRows(org.orgId, '+14155550131');
    t.is(rows.length, 1, JSON.stringify(rows));
    t.is(rows[0]!.status, 'pending');
    const phone = r.phone!;
    await phone.opened;
    await until(async () => (await getCallRow(s.db, rows[0]!.id)).status === 'active', { what: 'call active', timeoutMs: 10_000 });
    await until(() => phone.heardMs > 300, { what: 'greeting heard', timeoutMs: 20_000 });
    phone.hangup();
    t.is((await endedRow(s.db, rows[0]!.id)).status, 'completed');
    t.is((await inboundRows(org.orgId, '+14155550131')).length, 1);
  });

  if (d.inboundConcurrent) {
    const concurrent = d.inboundConcurrent;
    test.serial(`${d.id}: the same inbound webhook delivered 4 times at once → one row, one slot (the unique carrier call id), every answer the same stream`, async (t) => {
      const org = await s.createOrg({ balanceUsd: 50, concurrency: 1 });
      const acc = await inboundSetup(t, org, agent({ tts: { msPerChar: 20 } }));
      const r = await concurrent(acc, FROM, '+14155550135', 4);
      t.true(r.statuses.every((x) => x < 300), JSON.stringify(r.statuses));
      t.truthy(r.answers[0]);
      t.deepEqual(new Set(r.answers), new Set([r.answers[0]]), JSON.stringify(r.answers));
      const rows = await inboundRows(org.orgId, '+14155550135');
      t.is(rows.length, 1, JSON.stringify(rows));
      await r.phone!.opened;
      await until(async () => (await getCallRow(s.db, rows[0]!.id)).status === 'active', { what: 'call active', timeoutMs: 10_000 });
      r.phone!.hangup();
      await endedRow(s.db, rows[0]!.id);
    });
  }

  if (d.failNextBridge) {
    const failBridge = d.failNextBridge;
    test.serial(`${d.id}: the carrier refuses the bridge command of an inbound call → the carrier's answer form (never a 500), the row ends connection_failed`, async (t) => {
      const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
      const acc = await inboundSetup(t, org, agent({}));
      failBridge(acc, 422);
      const r = await d.inbound(acc, FROM, '+14155550133');
      t.true(r.status < 300, `answered ${r.status}`);
      t.is(r.phone, null);
      const rows = await inboundRows(org.orgId, '+14155550133');
      t.is(rows.length, 1);
      t.like(rows[0], { status: 'error', connection_status: 'connection_failed' });
    });
  }

  test.serial(`${d.id}: an inbound binding made with agentId follows the agent's later PATCH (spec: PATCH affects bound inbound numbers)`, async (t) => {
    const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
    const acc = d.account();
    d.addNumber(acc, FROM);
    d.configured?.(acc, (await s.request('POST', '/organizations/telephony-configs', { key: org.apiKey, body: { name: 'In', config: { provider: d.id, ...d.creds(acc) } } })).body);
    const saved = await saveAgent(s, org.orgId, agent({ tts: { msPerChar: 20 } }, { systemPrompt: 'Before the patch.' }));
    const reg = await s.request('POST', '/call', { key: org.apiKey, body: { type: 'inbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, agentId: saved.uuid, contextVariables: { city: 'Lyon' } } });
    t.is(reg.status, 200, JSON.stringify(reg.body));
    const patched = await s.request('PATCH', `/agents/${saved.uuid}`, { key: org.apiKey, body: { systemPrompt: 'After the patch in {{city}}.' } });
    t.is(patched.status, 200, JSON.stringify(patched.body));
    const r = await d.inbound(acc, FROM, '+14155550134');
    t.truthy(r.phone, `bridged (${r.status})`);
    const row = await until(async () => s.db.maybeOne(sql.type(z.object({ id: z.string(), prompt: z.string().nullable(), city: z.string().nullable() }))`
      SELECT id::text, config_snapshot->>'systemPrompt' AS prompt, config_snapshot->'contextVariables'->>'city' AS city FROM calls
      WHERE organization_id = ${org.orgId} AND transport = 'inbound' AND customer_number = '+14155550134'`), { what: 'the inbound row', timeoutMs: 10_000 });
    t.is(row.prompt?.startsWith('After the patch'), true, String(row.prompt));
    t.is(row.city, 'Lyon', "the binding's contextVariables still apply");
    await r.phone!.opened;
    r.phone!.hangup();
    await endedRow(s.db, row.id);
  });

  if (d.recorded) {
    const recorded = d.recorded;
    test.serial(`${d.id}: recordInProviderConsole → the carrier is asked to record the whole call with the dial (only then)`, async (t) => {
      const { apiKey: key, acc } = await setup(d);
      const on = await dial(d, key, acc, agent({}, { recordInProviderConsole: true }));
      t.true(await recorded(on.call), 'recording requested');
      await d.finish(acc, on.call, d.terminal[0]![0]);
      const off = await dial(d, key, acc, agent({}));
      t.false(await recorded(off.call), 'no recording by default');
      await d.finish(acc, off.call, d.terminal[0]![0]);
    });
  }

  if (d.recordedInbound) {
    const recordedInbound = d.recordedInbound;
    test.serial(`${d.id}: recordInProviderConsole on an inbound call → the carrier is asked to record it when it is answered (only then)`, async (t) => {
      for (const [on, caller] of [[true, '+14155550141'], [false, '+14155550142']] as const) {
        const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
        const acc = await inboundSetup(t, org, agent({}, on ? { recordInProviderConsole: true } : {}));
        const r = await d.inbound(acc, FROM, caller);
        t.true(r.status < 300, String(r.status));
        t.truthy(r.phone, 'answered onto the stream');
        t.is(recordedInbound(acc), on, on ? 'recording requested' : 'no recording by default');
        await r.phone!.opened;
        r.phone!.hangup();
        const row = await until(() => inboundRows(org.orgId, caller).then((x) => x[0] ?? null), { what: 'the inbound row', timeoutMs: 10_000 });
        await endedRow(s.db, row.id);
      }
    });
  }

  if (d.accountWithoutApplication) {
    const noApp = d.accountWithoutApplication;
    test.serial(`${d.id}: inbound registration on an account with no application and no default_app → 400 "No applicationId supplied…", nothing saved`, async (t) => {
      const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
      const acc = noApp();
      d.addNumber(acc, FROM);
      const r = await s.request('POST', '/call', { key: org.apiKey, body: { type: 'inbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, agent: agent({}) } });
      t.is(r.status, 400, JSON.stringify(r.body));
      t.regex(String(r.body.detail), /^No applicationId supplied and no default_app found/);
      const n = await s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM inbound_bindings WHERE organization_id = ${org.orgId}`);
      t.is(n, 0);
    });
  }

  test.serial(`${d.id}: an inbound call on an agent whose engine has no credentials is refused up front with a missing_credentials row`, async (t) => {
    const org = await s.createOrg({ balanceUsd: 50, concurrency: 10 });
    const acc = await inboundSetup(t, org, agent({}, { stt: { provider: 'deepgram' } }));
    const r = await d.inbound(acc, FROM, '+14155550132');
    t.true(r.status < 300, `answered ${r.status}`);
    t.is(r.phone, null, 'never bridged to a stream');
    const rows = await until(async () => {
      const x = await inboundRows(org.orgId, '+14155550132');
      return x.length ? x : null;
    }, { what: 'the rejected row', timeoutMs: 10_000 });
    t.is(rows.length, 1);
    t.like(rows[0], { status: 'error', connection_status: 'missing_credentials' });
    t.true(rows[0]!.tags.includes('rejected'));
  });

  test.serial(`${d.id}: inbound call by number attachment runs on the stream; an unrouted genuine call is refused`, async (t) => {
    const { apiKey: key, orgId, acc } = await setup(d);
    const cfg = await s.request('POST', '/organizations/telephony-configs', { key, body: { name: 'In', config: { provider: d.id, ...d.creds(acc) } } });
    t.is(cfg.status, 201, JSON.stringify(cfg.body));
    d.configured?.(acc, cfg.body);
    const a = agent({ stt: { utterances: ['hello'] }, llm: [{ text: 'Hi there.' }], tts: { msPerChar: 20 } });
    const saved = await saveAgent(s, orgId, a);
    const num = await s.request('POST', `/organizations/telephony-configs/${cfg.body.id}/phone-numbers`, { key, body: { address: FROM, inbound_agent_uuid: saved.uuid } });
    t.true(num.body.provider_sync.ok, JSON.stringify(num.body));
    t.true(d.inboundPointsAt(acc, FROM, `${s.baseUrl}/telephony/${d.id}/voice`));
    const inbound = await d.inbound(acc, FROM, '+14155550123');
    t.true(inbound.status < 300, `inbound webhook answered ${inbound.status}`);
    t.truthy(inbound.phone, 'the call is bridged to our stream');
    const phone = inbound.phone!;
    await phone.opened;
    const row0 = await until(async () => (await s.db.maybeOne(sql.type(z.object({ id: z.string(), status: z.string() }))`
      SELECT id::text, status FROM calls WHERE organization_id = ${orgId} AND transport = 'inbound' AND status = 'active'`)), { what: 'inbound call active', timeoutMs: 10_000 });
    await until(() => phone.heardMs > 300, { what: 'greeting heard', timeoutMs: 20_000 });
    phone.hangup();
    const row = await endedRow(s.db, row0.id);
    t.is(row.status, 'completed');
    t.like(await callById(s, row0.id), { transport: 'inbound', call_source: 'api_inbound', telephony_provider: d.id, platform_number: FROM, customer_number: '+14155550123' });

    // a binding registered by POST /call type=inbound wins over the number's agent
    const reg = await s.request('POST', '/call', { key, body: { type: 'inbound', callConfig: { provider: d.id, phoneNumber: FROM, auth: d.creds(acc) }, agent: agent({}, { name: 'Binding agent' }) } });
    t.is(reg.status, 200, JSON.stringify(reg.body));
    const second = await d.inbound(acc, FROM, '+14155550125');
    t.truthy(second.phone);
    await second.phone!.opened;
    const bound = await until(async () => s.db.maybeOne(sql.type(z.object({ id: z.string(), agent_name: z.string().nullable() }))`
      SELECT id::text, agent_name FROM calls WHERE organization_id = ${orgId} AND transport = 'inbound' AND customer_number = '+14155550125' AND status = 'active'`), { what: 'bound call active', timeoutMs: 10_000 });
    t.is(bound.agent_name, 'Binding agent');
    second.phone!.hangup();
    await endedRow(s.db, bound.id);

    // a genuine call to a number nobody routes: refused (spoken), no stream
    d.addNumber(acc, '+14155550155');
    const unrouted = await d.inbound(acc, '+14155550155', '+14155550124');
    t.true(unrouted.status < 300);
    t.is(unrouted.phone, null);
  });
}
