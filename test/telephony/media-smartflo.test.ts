// Smartflo streams end to end on the media side: the static signed Voice Bot URL of a configuration; a signed
// custom_identifier correlates our outbound call; otherwise the dialled number's binding (wins) or its inbound
// agent answers; PATCH/DELETE of the binding change who answers; voicemail heuristics (no carrier AMD here);
// forged signatures and identifiers change nothing.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { upsertBinding } from '../../core/telephony/bindings.ts';
import { customIdentifier } from '../../core/telephony/signing.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { smartfloStreamUrl } from '../../core/telephony/urls.ts';
import type { AgentConfig } from '../../core/agent-config/index.ts';
import { endedRow, getCallRow } from '../helpers/calls.ts';
import { connectSmartfloStream } from '../fakes/smartflo-media.ts';
import { startPhoneRig, type PhoneRig } from './media-helpers.ts';
import { until } from '../helpers/wait.ts';

let rig: PhoneRig;
let org: { orgId: string; apiKey: string };
let configId: number;
let url: string;
const NUMBER = '+918035551234';

test.before(async () => {
  // no Smartflo REST fake is needed here: hang-ups go to a closed local port and fail fast (logged)
  rig = await startPhoneRig('telephony-media-smartflo', { SMARTFLO_API_BASE_URL: 'http://127.0.0.1:9' });
  org = await rig.s.createOrg({ balanceUsd: 50, concurrency: 10 });
  const cfg = await insertConfig(rig.s.db, rig.s.config, {
    orgId: org.orgId, name: 'smartflo', provider: 'smartflo', creds: { auth_token: 'sf-token', click_to_call_api_key: 'sf-c2c' },
    accountRef: null, amdEnabled: false, isDefault: true,
  });
  configId = cfg.id;
  url = smartfloStreamUrl(rig.s.config, configId);
});
test.after.always(async () => {
  await rig?.close();
});

async function createAgent(name: string, over: Record<string, unknown> = {}): Promise<{ uuid: string; id: number }> {
  const res = await rig.s.request('POST', '/agents', {
    key: org.apiKey,
    body: { name, llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' }, noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello.'] }, ...over },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  const id = await rig.s.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM agents WHERE uuid = ${res.body.uuid as string}`);
  return { uuid: res.body.uuid as string, id };
}

const callOf = z.object({ id: z.string(), agent_uuid: z.string().nullable(), transport: z.string(), status: z.string(), carrier_call_id: z.string().nullable() });
const callBySid = (sid: string) =>
  until(() => rig.s.db.maybeOne(sql.type(callOf)`SELECT id::text, agent_uuid::text, transport, status, carrier_call_id FROM calls WHERE carrier_call_id = ${sid}`), { what: `call of ${sid}`, timeoutMs: 15_000 });

let sidSeq = 0;
/** An inbound Smartflo call to NUMBER: who answers it (agent uuid), then hang up. */
async function inboundCall(): Promise<{ agentUuid: string | null; callId: string }> {
  const sid = `sf-in-${++sidSeq}`;
  const m = connectSmartfloStream(url, { callSid: sid, from: '+919800000001', to: NUMBER, direction: 'inbound' });
  const row = await callBySid(sid);
  t0Check(row.transport === 'inbound', 'inbound row');
  await until(async () => (await getCallRow(rig.s.db, row.id)).status !== 'pending', { what: 'claimed', timeoutMs: 15_000 });
  // hang up once the pipeline runs (the greeting is heard): a hang-up before that is a cancelled call, not this test's
  await until(() => m.heardMs > 0, { what: 'greeting audio', timeoutMs: 15_000 });
  m.hangup();
  await endedRow(rig.s.db, row.id);
  return { agentUuid: row.agent_uuid, callId: row.id };
}
function t0Check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

test.serial('inbound: number attachment, then a binding wins, PATCH swaps its agent, DELETE falls back to the number', async (t) => {
  const a = await createAgent(rig.scenarios.add({ llm: [] }));
  const b = await createAgent(rig.scenarios.add({ llm: [] }));
  const c = await createAgent(rig.scenarios.add({ llm: [] }));
  await rig.s.db.query(sql.type(z.object({}))`
    INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type, inbound_agent_id, inbound_assigned_at)
    VALUES (${org.orgId}, ${configId}, ${NUMBER}, ${NUMBER}, 'pstn', ${a.id}, now())`);

  const first = await inboundCall();
  t.is(first.agentUuid, a.uuid, 'the number attachment answers');
  const ended = await endedRow(rig.s.db, first.callId);
  t.is(ended.ended_reason, 'user_hangup');

  const snap = await rig.s.db.oneFirst(sql.type(z.object({ config: z.unknown() }))`SELECT config FROM agents WHERE id = ${b.id}`);
  const binding = await upsertBinding(rig.s.db, rig.s.config, {
    orgId: org.orgId, provider: 'smartflo', address: '08035551234', addressNormalized: NUMBER,
    agent: { id: b.id, uuid: b.uuid, name: 'b' }, snapshot: snap as AgentConfig, contextVariables: {}, credentials: null, accountRef: null, telephonyConfigId: configId,
  });
  t.is((await inboundCall()).agentUuid, b.uuid, 'the binding wins over the attachment');

  const patched = await rig.s.request('PATCH', `/telephony/inbound/bindings/${binding.id}`, { key: org.apiKey, body: { agentId: c.uuid } });
  t.is(patched.status, 200, JSON.stringify(patched.body));
  t.is((await inboundCall()).agentUuid, c.uuid, 'PATCH swapped the agent');

  const del = await rig.s.request('DELETE', `/telephony/inbound/bindings/${binding.id}`, { key: org.apiKey });
  t.is(del.status, 204);
  t.is((await inboundCall()).agentUuid, a.uuid, 'DELETE fell back to the number attachment');
});

async function pendingOutbound(config: Record<string, unknown>): Promise<string> {
  return rig.s.db.oneFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO calls (organization_id, agent_name, transport, status, call_source, config_snapshot, context_variables,
                       telephony_provider, telephony_config_id, platform_number, customer_number)
    VALUES (${org.orgId}, ${String(config.name)}, 'outbound', 'pending', 'api_outbound', ${JSON.stringify(config)}::jsonb, '{}'::jsonb,
            'smartflo', ${configId}, ${NUMBER}, '+919800000002')
    RETURNING id::text`);
}

async function snapshotOf(name: string, over: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const { agentConfigSchema } = await import('../../core/agent-config/schema.ts');
  return agentConfigSchema.parse({ name, llm: { provider: 'local', model: 'local-demo' }, stt: { provider: 'local' }, tts: { provider: 'local' }, noiseGate: { enabled: false }, greeting: { firstMessages: ['Hello.'] }, ...over }) as Record<string, unknown>;
}

test.serial('outbound: the stream is correlated by its signed custom identifier (the bot says connected first)', async (t) => {
  const name = rig.scenarios.add({ stt: { utterances: ['hello'] }, llm: [{ text: 'Hi there.' }] });
  const callId = await pendingOutbound(await snapshotOf(name, { voicemailDetection: false }));
  const m = connectSmartfloStream(url, { callSid: 'sf-out-1', from: NUMBER, to: '+919800000002', direction: 'outbound', customParameters: { custom_identifier: customIdentifier(rig.s.config, callId) } }, { connected: 'bot' });
  await until(async () => (await getCallRow(rig.s.db, callId)).status === 'active', { what: 'our outbound call claimed', timeoutMs: 15_000 });
  await until(() => m.heardMs > 200, { what: 'greeting', timeoutMs: 15_000 });
  await m.tone(500);
  await m.silence(500);
  await until(() => (rig.scenarios.made.get(name)?.engines.llm.requests.length ?? 0) > 0, { what: 'turn answered', timeoutMs: 15_000 });
  m.stop('hangup');
  const row = await endedRow(rig.s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  // the carrier's stop reason is logged once the row is final
  const x = await until(async () => {
    const r = await rig.s.db.one(sql.type(z.object({ carrier_call_id: z.string().nullable(), logs: z.any() }))`SELECT carrier_call_id, logs FROM calls WHERE id = ${callId}`);
    return r.logs.carrier_stop ? r : null;
  }, { what: 'carrier stop logged', timeoutMs: 10_000 });
  t.is(x.carrier_call_id, 'sf-out-1');
  t.is(x.logs.carrier_stop, 'hangup');
});

test.serial('what Smartflo cannot record is said in the call logs: recordInProviderConsole (carrier_recording_unsupported) and a transfer\'s recordTransfer (recordSkipped); a PJSIP/123 extension transfer is attempted', async (t) => {
  const name = rig.scenarios.add({ stt: { utterances: ['put me through'] }, llm: [{ toolCalls: [{ name: 'to_desk' }] }, { text: 'Sorry, I could not.' }] });
  const callId = await pendingOutbound(await snapshotOf(name, {
    voicemailDetection: false, recordInProviderConsole: true,
    tools: [{ type: 'transferCall', name: 'to_desk', description: 'Transfer to the desk', config: { destination: 'PJSIP/123' } }],
  }));
  const m = connectSmartfloStream(url, { callSid: 'sf-out-rec', from: NUMBER, to: '+919800000002', direction: 'outbound', customParameters: { custom_identifier: customIdentifier(rig.s.config, callId) } });
  await until(async () => (await getCallRow(rig.s.db, callId)).status === 'active', { what: 'our outbound call claimed', timeoutMs: 15_000 });
  await until(() => m.heardMs > 200, { what: 'greeting', timeoutMs: 15_000 });
  await m.tone(500);
  await m.silence(500);
  // the transfer goes to Smartflo's API (a closed port here: it fails, and the call goes on)
  const logs = await until(async () => {
    const l = (await getCallRow(rig.s.db, callId)).logs as Record<string, any>;
    return l.transfer?.error ? l : null;
  }, { what: 'the transfer attempt logged', timeoutMs: 20_000 });
  t.like(logs.transfer, { destination: 'PJSIP/123', record: false });
  t.regex(logs.transfer.recordSkipped, /^Smartflo's transfer API cannot record the transferred conversation/);
  t.regex(logs.carrier_recording_unsupported, /^Smartflo's API cannot start a recording of the call/);
  m.stop('hangup');
  t.is((await endedRow(rig.s.db, callId)).ended_reason, 'user_hangup');
});

test.serial('voicemail heuristics (no carrier AMD): a long first greeting ends the outbound call as voicemail', async (t) => {
  const name = rig.scenarios.add({
    stt: { utterances: ['hi you have reached the voicemail of john smith please leave a message after the tone'] },
    llm: [],
  });
  const callId = await pendingOutbound(await snapshotOf(name, { voicemailDetection: true }));
  const m = connectSmartfloStream(url, { callSid: 'sf-vm-1', from: NUMBER, to: '+919800000002', direction: 'outbound', customParameters: { custom_identifier: customIdentifier(rig.s.config, callId) } });
  await until(async () => (await getCallRow(rig.s.db, callId)).status === 'active', { what: 'active', timeoutMs: 15_000 });
  await m.tone(2000);
  await m.silence(600);
  const row = await endedRow(rig.s.db, callId);
  t.is(row.ended_reason, 'voicemail');
  const logs = (await rig.s.db.oneFirst(sql.type(z.object({ logs: z.any() }))`SELECT logs FROM calls WHERE id = ${callId}`)) as { voicemail_detection: unknown };
  t.like(logs.voicemail_detection, { result: 'voicemail', by: 'phrases' });
  await m.closed;
});

test.serial('voicemail heuristics: a short "hello?" is a person; the call goes on', async (t) => {
  const name = rig.scenarios.add({ stt: { utterances: ['hello'] }, llm: [{ text: 'Hi, this is the agent.' }] });
  const callId = await pendingOutbound(await snapshotOf(name, { voicemailDetection: true }));
  const m = connectSmartfloStream(url, { callSid: 'sf-vm-2', from: NUMBER, to: '+919800000002', direction: 'outbound', customParameters: { custom_identifier: customIdentifier(rig.s.config, callId) } });
  await until(async () => (await getCallRow(rig.s.db, callId)).status === 'active', { what: 'active', timeoutMs: 15_000 });
  await m.tone(400);
  await m.silence(600);
  const logs = await until(async () => {
    const l = (await rig.s.db.oneFirst(sql.type(z.object({ logs: z.any() }))`SELECT logs FROM calls WHERE id = ${callId}`)) as { voicemail_detection?: unknown };
    return l.voicemail_detection;
  }, { what: 'verdict', timeoutMs: 20_000 });
  t.like(logs, { result: 'human' });
  t.is((await getCallRow(rig.s.db, callId)).status, 'active');
  m.hangup();
  t.is((await endedRow(rig.s.db, callId)).ended_reason, 'user_hangup');
});

test.serial('a forged URL signature is refused (1008) and a forged identifier never opens our outbound call', async (t) => {
  const before = await rig.s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`);
  const forged = connectSmartfloStream(url.replace(/sig=[^&]+/, 'sig=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), { callSid: 'sf-x', from: '+1', to: NUMBER, direction: 'inbound' });
  t.deepEqual(await forged.closed, { code: 1008, reason: 'Invalid stream signature' });
  const missing = connectSmartfloStream(url.replace(/\?sig=[^&]+/, ''), { callSid: 'sf-y', from: '+1', to: NUMBER, direction: 'inbound' });
  t.deepEqual(await missing.closed, { code: 1008, reason: 'Invalid stream signature' });
  t.is(await rig.s.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calls`), before, 'no row was created');

  const name = rig.scenarios.add({ llm: [] });
  const callId = await pendingOutbound(await snapshotOf(name, { voicemailDetection: false }));
  const other = '+919811111111'; // no binding or number: the stream is refused with a spoken message and closed
  const m = connectSmartfloStream(url, { callSid: 'sf-forged', from: NUMBER, to: other, direction: 'outbound', customParameters: { custom_identifier: `${callId}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA` } });
  await m.closed;
  t.true(m.heardMs > 500, 'the refusal was spoken before hanging up');
  t.is((await getCallRow(rig.s.db, callId)).status, 'pending', 'our outbound call was not touched');
});
