// Phone calls over Twilio end to end: POST /call dials the fake Twilio, the fake answers and opens the media stream
// our <Connect><Stream> TwiML names, and the call runs on the media side (µ-law both ways, marks, clear, DTMF,
// AMD, transfer, hang-up). The caller's speech is eSpeak audio sent as 8 kHz µ-law.
import test from 'ava';
import { z } from 'zod';
import { sql } from '../../core/db/pool.ts';
import { endedRow, getCallRow, until } from '../helpers/calls.ts';
import { FakeCarrierStream } from '../fakes/twilio-media.ts';
import { startReceiver } from '../post-call/helpers.ts';
import { insertConfig } from '../../core/telephony/store.ts';
import { carrierVoiceStatusUrl, carrierVoiceUrl } from '../../core/telephony/urls.ts';
import { agentQuiet, dialOf, dialTwilio, openStream, phoneAgent, speech, twilioDialBody, twilioLine } from './media-helpers.ts';
import { answeringMachine } from '../fakes/answering-machine.ts';
import { detectDtmf } from '../fakes/dtmf-detector.ts';
import { readWav } from '../../core/audio/wav.ts';

const line = twilioLine(test, 'telephony-media-twilio', '+15550001111', '+15557654321', { balanceUsd: 50, concurrency: 10 });

const agent = phoneAgent;

/** POST /call type=outbound, then the carrier rings and answers; returns the stream the answer TwiML named. */
async function dialAndAnswer(
  agentConfig: Record<string, unknown>,
  streamOpts: ConstructorParameters<typeof FakeCarrierStream>[2] = {},
  beforeStream?: () => void | Promise<void>,
) {
  const { callId, call, twiml, stream } = await dialTwilio(line, { agent: agentConfig });
  await beforeStream?.();
  const media = openStream(line.rig, call, stream, streamOpts);
  await media.opened;
  return { callId, call, media, twiml };
}

const extra = z.object({ carrier_call_id: z.string().nullable(), recording_url: z.string().nullable(), transfer_recording: z.unknown(), logs: z.any() });
const rowExtra = (callId: string) =>
  line.rig.s.db.one(sql.type(extra)`SELECT carrier_call_id, recording_url, transfer_recording, logs FROM calls WHERE id = ${callId}`);

test.serial('outbound: greeting, DTMF and a full spoken turn over µ-law; the caller hangs up; completed row with recording', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { callId, call, media, twiml } = await dialAndAnswer(agent({ webhook: { url: `${receiver.url}/events`, headers: {} } }), {}, async () => {
    // answered, but the media stream has not connected yet: no call.started
    await new Promise((r) => setTimeout(r, 300));
    t.deepEqual(receiver.events.map((e) => (e.json as { event: string }).event), [], 'no call.started before the stream connects');
  });
  t.truthy(twiml.stream!.parameters.token, 'the stream carries its signed token as a <Parameter>');
  await until(async () => (await getCallRow(line.rig.s.db, callId)).status === 'active', 10_000, 'call active');
  await until(() => media.heardMs > 300, 30_000, 'greeting heard');
  await agentQuiet(media);
  const greetingMs = media.heardMs;
  t.true(media.payloadSizes.every((n) => n === 160), 'agent audio arrives in 20 ms µ-law payloads');
  t.true(media.echoed.filter((e) => e.played).length > 10, 'marks echoed after playout');

  media.dtmf('5');
  media.dtmf('#'); // ends the keypad entry at once: one user turn '[keypad: 5#]' for the LLM
  await media.silence(300);
  await media.say(await speech('what time is it'), 24000);
  await media.silence(1500);
  await until(() => media.heardMs > greetingMs + 800, 30_000, 'spoken reply');
  await agentQuiet(media);
  media.hangup();
  await line.rig.twilio.finish(call.sid, 'completed', 8);

  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.status, 'completed');
  t.is(row.connection_status, 'completed');
  t.is(row.ended_reason, 'user_hangup');
  const transcript = row.transcript as Array<{ role: string; content?: string; digit?: string }>;
  t.deepEqual([...new Set(transcript.map((e) => e.role))].filter((r) => !['user', 'assistant', 'tool'].includes(r)), [], 'only the spec\'s transcript roles');
  // pocketsphinx hears the 8 kHz line less well than wideband audio: the words may differ, the turn must be there
  const userAt = transcript.findIndex((e) => e.role === 'user' && (e.content ?? '').trim().length > 0);
  t.true(userAt > 0, JSON.stringify(transcript));
  t.truthy(transcript.slice(userAt + 1).find((e) => e.role === 'assistant' && (e.content ?? '').length > 0), 'the agent answered the turn');
  const x = await rowExtra(callId);
  t.is(x.carrier_call_id, call.sid);
  t.deepEqual(x.logs.dtmf.map((d: { digit: string }) => d.digit), ['5', '#'], 'DTMF recorded on the call\'s logs');
  const events = await receiver.waitFor(3);
  t.deepEqual(events.map((e) => (e.json as { event: string }).event).sort(), ['call.completed', 'call.ended', 'call.started']);
  t.like(events.find((e) => (e.json as { event: string }).event === 'call.started')!.json, { callId, transport: 'outbound' });
  const rec = await until(async () => (await rowExtra(callId)).recording_url, 60_000, 'recording published by the post-call workflow');
  const wav = await fetch(rec);
  t.is(wav.status, 200);
  t.true((await wav.arrayBuffer()).byteLength > 16000 * 2, 'the recording holds the call');
});

test.serial('barge-in: the carrier gets `clear` and the interrupted greeting is cut to what the caller heard (marks)', async (t) => {
  const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango';
  const name = line.rig.scenarios.add({ stt: { utterances: ['wait a moment please'] }, llm: [{ text: 'Sure.' }], tts: { msPerChar: 40 } });
  // 400 ms of network + jitter buffer: the pacer's clock would count that audio as heard, the marks do not
  const { callId, media } = await dialAndAnswer(agent({ name, greeting: { firstMessages: [words], interruptible: true } }), { playoutDelayMs: 400 });
  await until(() => media.heardMs >= 2000, 20_000, 'two seconds of greeting heard');
  const speaking = media.tone(700);
  await until(() => media.clears > 0, 10_000, 'clear');
  const heardAtClear = media.heardMs;
  await speaking;
  await media.silence(600);
  await until(() => line.rig.scenarios.made.get(name)!.engines.llm.requests.length > 0, 10_000, 'reply requested');
  media.hangup();
  const row = await endedRow(line.rig.s.db, callId);
  const greeting = (row.transcript as Array<{ role: string; content: string; interrupted?: boolean }>).find((e) => e.role === 'assistant')!;
  t.true(greeting.interrupted, 'the greeting is marked interrupted');
  const total = words.length * 40; // FakeTts: 40 ms per character
  const expected = (words.split(' ').length * heardAtClear) / total;
  const kept = greeting.content.split(' ').length;
  t.true(words.startsWith(greeting.content), greeting.content);
  t.true(Math.abs(kept - expected) <= 1.5, `kept ${kept} words, the caller heard ≈${expected.toFixed(1)} (${heardAtClear} of ${total} ms)`);
  // the LLM's context holds the same truncated greeting
  const ctx = line.rig.scenarios.made.get(name)!.engines.llm.requests[0]!.messages;
  t.truthy(ctx.find((m) => m.role === 'assistant' && 'content' in m && m.content === greeting.content));
});

test.serial('AMD says machine: the call ends with endedReason voicemail and the carrier call is hung up', async (t) => {
  const name = line.rig.scenarios.add({ stt: { utterances: [] }, llm: [] });
  const { callId, call, media } = await dialAndAnswer(agent({ name, voicemailDetection: true }));
  t.is(call.params.get('AsyncAmd'), 'true', 'async AMD requested on the dial');
  await until(async () => (await getCallRow(line.rig.s.db, callId)).status === 'active', 10_000, 'call active');
  await line.rig.twilio.amd(call.sid, 'machine_end_beep');
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'voicemail');
  t.is(row.status, 'completed');
  await media.closed;
  await until(() => line.rig.twilio.requests.some((r) => r.path.endsWith(`/Calls/${call.sid}.json`) && r.params.get('Status') === 'completed'), 10_000, 'hang-up request');
  const x = await rowExtra(callId);
  t.like(x.logs.voicemail_detection, { result: 'voicemail', by: 'amd', answeredBy: 'machine_end_beep' });
});

test.serial('AMD says human: the call goes on', async (t) => {
  const name = line.rig.scenarios.add({ stt: { utterances: ['hello there'] }, llm: [{ text: 'Hi.' }] });
  const { callId, call, media } = await dialAndAnswer(agent({ name, voicemailDetection: true }));
  await until(async () => (await getCallRow(line.rig.s.db, callId)).status === 'active', 10_000, 'call active');
  await line.rig.twilio.amd(call.sid, 'human');
  await until(async () => (await rowExtra(callId)).logs.voicemail_detection, 10_000, 'verdict logged');
  await media.tone(500);
  await media.silence(500);
  await until(() => line.rig.scenarios.made.get(name)!.engines.llm.requests.length > 0, 10_000, 'reply requested');
  t.is((await getCallRow(line.rig.s.db, callId)).status, 'active');
  media.hangup();
  t.is((await endedRow(line.rig.s.db, callId)).ended_reason, 'user_hangup');
});

test.serial('voicemail drop (DetectMessageEnd): the agent stops at the greeting, its message is what the machine records after the beep, the row ends voicemail', async (t) => {
  const message = 'Hi {{first_name}}, this is Acme about your appointment tomorrow. Please call us back.';
  const said = 'Hi Ada, this is Acme about your appointment tomorrow. Please call us back.';
  const name = line.rig.scenarios.add({ stt: { utterances: ['hi you have reached ada please leave a message after the tone', 'beep'] }, llm: [{ text: 'Hello, is this Ada?' }], tts: { msPerChar: 20 } });
  const res = await line.rig.s.request('POST', '/call', {
    key: line.org.apiKey,
    body: { ...twilioDialBody(line, { agent: agent({ name, voicemailDetection: true, voicemailMessage: message }) }), contextVariables: { first_name: 'Ada' } },
  });
  t.is(res.status, 200, JSON.stringify(res.body));
  const callId = res.body.callId as string;
  const call = await dialOf(line.rig, callId);
  t.is(call.machineDetection, 'DetectMessageEnd');
  t.is(call.params.get('AsyncAmd'), 'true');
  const twiml = await line.rig.twilio.answer(call.sid);
  const media = openStream(line.rig, call, twiml.stream!);
  await until(() => media.heardMs > 100, 20_000, 'the opener');
  await agentQuiet(media, 300);
  // Twilio's AsyncAmd with DetectMessageEnd calls back once the greeting has ended: right after the beep
  const machine = await answeringMachine(media, { onBeep: async () => void (await line.rig.twilio.amd(call.sid, 'machine_end_beep')) });
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'voicemail');
  t.is(row.status, 'completed');
  t.is(row.connection_status, 'completed');
  t.true(machine.heardAtBeep - machine.heardAtGreeting < 400, `the agent kept quiet over the greeting (${machine.heardAtBeep - machine.heardAtGreeting} ms)`);
  await media.closed;
  const recorded = machine.recordedMs();
  t.true(recorded >= said.length * 20 - 200 && recorded <= said.length * 20 + 600, `the machine recorded the message after its beep: ${recorded} ms of ${said.length * 20}`);
  const transcript = row.transcript as Array<{ role: string; content?: string }>;
  t.is(transcript.filter((e) => e.role === 'assistant').at(-1)?.content, said, 'the message, variables resolved, is the last thing the agent said');
  t.false(line.rig.scenarios.made.get(name)!.engines.llm.requests.length > 0, 'the machine\'s greeting was never answered');
  const x = await until(async () => {
    const r = await rowExtra(callId);
    return r.logs.voicemail && r.recording_url ? r : null;
  }, 60_000, 'the drop on the logs and the recording published');
  t.like(x.logs.voicemail_detection, { result: 'voicemail' });
  t.like(x.logs.voicemail, { left: true });
  t.true(['carrier', 'beep'].includes(x.logs.voicemail.after), x.logs.voicemail.after);
  await until(() => line.rig.twilio.requests.some((r) => r.path.endsWith(`/Calls/${call.sid}.json`) && r.params.get('Status') === 'completed'), 10_000, 'hang-up request');
  // the call's recording ends with the message (FakeTts: a loud tone) over the machine's silence
  const wav = readWav(new Uint8Array(await (await fetch(x.recording_url!)).arrayBuffer()));
  const tail = wav.samples.subarray(wav.samples.length - Math.round(((said.length * 20) / 1000) * wav.sampleRate * 0.8));
  let e = 0;
  for (const v of tail) e += v * v;
  t.true(Math.sqrt(e / tail.length) > 1500, 'the message is in the recording');
});

test.serial('voicemail without a message: AMD machine_end_beep ends the call at once (no message, as before)', async (t) => {
  const name = line.rig.scenarios.add({ stt: { utterances: [] }, llm: [] });
  const { callId, call, media } = await dialAndAnswer(agent({ name, voicemailDetection: true }));
  await until(async () => (await getCallRow(line.rig.s.db, callId)).status === 'active', 10_000, 'call active');
  await line.rig.twilio.amd(call.sid, 'machine_end_beep');
  t.is((await endedRow(line.rig.s.db, callId)).ended_reason, 'voicemail');
  await media.closed;
  t.falsy((await rowExtra(callId)).logs.voicemail, 'no message was left');
});

test.serial('sendDtmf on Twilio: the keys reach the line as in-band tones (decoded by the fake\'s Goertzel receiver); the LLM, the transcript and the logs say what was sent', async (t) => {
  const name = line.rig.scenarios.add({
    stt: { utterances: ['for appointments press two then pound'] },
    llm: [{ toolCalls: [{ name: 'send_dtmf', arguments: JSON.stringify({ digits: '2w#' }) }] }, { text: '' }],
  });
  const { callId, media } = await dialAndAnswer(agent({ name, tools: [{ type: 'sendDtmf', config: {} }] }));
  await until(() => media.heardMs > 100, 20_000, 'greeting');
  await agentQuiet(media, 300);
  const spec = await until(() => line.rig.scenarios.made.get(name), 10_000, 'engines');
  await media.tone(800);
  await media.silence(500);
  await until(() => spec.engines.llm.requests.length >= 2, 20_000, 'the tool result went back to the LLM');
  await agentQuiet(media, 400);
  t.is(detectDtmf(media.heardPcm()), '2#', 'the keys, in order, as the line heard them');
  const toolResult = spec.engines.llm.requests[1]!.messages.find((m) => m.role === 'tool');
  t.regex(JSON.stringify(toolResult), /Pressed 2w# on the keypad \(as tones on the line\)/);
  t.deepEqual(spec.engines.llm.requests[0]!.tools.includes('send_dtmf'), true);
  t.false(spec.engines.llm.requests[0]!.messages.some((m) => m.role === 'system' && 'content' in m && /keypad|dtmf/i.test(m.content)), 'nothing added to the system prompt');
  media.hangup();
  const row = await endedRow(line.rig.s.db, callId);
  const transcript = row.transcript as Array<{ role: string; content?: string; name?: string; status?: string }>;
  t.like(transcript.find((e) => e.role === 'tool'), { name: 'send_dtmf', status: 'success' });
  t.truthy(transcript.find((e) => e.role === 'assistant' && e.content === '[keypad: 2w#]'));
  const x = await rowExtra(callId);
  t.like(x.logs.dtmf_sent[0], { digits: '2w#', via: 'in-band' });
});

test.serial('hold on: a phone menu read in several sentences is one turn (the agent waits for the menu\'s pause), the LLM may stay silent, no idle prompts while on hold', async (t) => {
  const name = line.rig.scenarios.add({
    stt: { utterances: ['thank you for calling acme for appointments press two', 'for billing press three'] },
    llm: [{ text: '' }],
  });
  const { callId, media } = await dialAndAnswer(agent({ name, voicemailDetection: true, userIdleTimeoutS: 3, userIdleMaxRetries: 1, tools: [{ type: 'sendDtmf', config: {} }] }));
  await until(() => media.heardMs > 100, 20_000, 'greeting');
  await agentQuiet(media, 300);
  const spec = await until(() => line.rig.scenarios.made.get(name), 10_000, 'engines');
  const before = media.heardMs;
  await media.tone(1200);
  await media.silence(500); // the first sentence ends (VAD stop, final): held, the menu is not answered yet
  await media.tone(900);
  await media.silence(500);
  await until(() => spec.engines.llm.requests.length >= 1, 20_000, 'the menu answered once it paused');
  const turn = spec.engines.llm.requests[0]!.messages.filter((m) => m.role === 'user').at(-1)!;
  t.is('content' in turn ? turn.content : '', 'thank you for calling acme for appointments press two for billing press three', 'both sentences are one turn');
  await media.silence(4500); // longer than userIdleTimeoutS × (retries + 1): on hold, no prompt and no silence_timeout
  t.is(spec.engines.llm.requests.length, 1);
  t.is(media.heardMs, before, 'the agent stayed silent: the LLM chose to say nothing, and no idle prompt played');
  t.is((await getCallRow(line.rig.s.db, callId)).status, 'active');
  const logs = (await rowExtra(callId)).logs;
  t.like(logs.voicemail_detection, { result: 'ivr', by: 'phrases' });
  media.hangup();
  t.is((await endedRow(line.rig.s.db, callId)).ended_reason, 'user_hangup');
});

test.serial('transfer: message, Twilio call update with <Dial>, endedReason transferred, recording callback starts the transfer-recording workflow', async (t) => {
  const name = line.rig.scenarios.add({
    stt: { utterances: ['put me through to sales'] },
    llm: [{ toolCalls: [{ name: 'transfer_to_sales' }] }],
  });
  const tools = [{ type: 'transferCall', name: 'transfer_to_sales', description: 'Transfer to sales', config: { destination: '+15550009999', customMessage: 'Connecting you to sales now.', timeout: 20, recordTransfer: true } }];
  const { callId, call, media } = await dialAndAnswer(agent({ name, tools }));
  await until(() => media.heardMs > 300, 20_000, 'greeting');
  await agentQuiet(media);
  const before = media.heardMs;
  await media.tone(600);
  await media.silence(500);
  const update = await until(() => call.updates[0], 20_000, 'call update');
  t.true(media.heardMs - before >= 'Connecting you to sales now.'.length * 40 - 200, 'the transfer message played before the update');
  t.regex(update, /<Dial\b[^>]*timeout="20"/);
  t.regex(update, /<Number>\+15550009999<\/Number>/);
  t.regex(update, new RegExp(`recordingStatusCallback="[^"]*/telephony/twilio/recording/${callId}"`));
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'transferred');
  const x = await rowExtra(callId);
  t.like(x.logs.transfer, { destination: '+15550009999', record: true });
  const tool = (row.transcript as Array<{ role: string; name?: string; status?: string }>).find((e) => e.role === 'tool');
  t.like(tool, { name: 'transfer_to_sales', status: 'success' });

  const cb = await line.rig.twilio.recordingCallback(call.sid, { status: 'completed', durationS: 4 });
  t.true(cb.status < 300, `recording callback answered ${cb.status}`);
  const outcome = await until(async () => (await rowExtra(callId)).transfer_recording, 60_000, 'transfer recording workflow outcome');
  t.truthy(outcome);
  t.regex(JSON.stringify(outcome), /completed|recordingUrl|url/);
});

test.serial('the agent ends the call: farewell played, stream closed, carrier hang-up, agent_hangup', async (t) => {
  const name = line.rig.scenarios.add({ stt: { utterances: ['bye now'] }, llm: [{ toolCalls: [{ name: 'end_call' }] }] });
  const { callId, call, media } = await dialAndAnswer(agent({ name }));
  await until(() => media.heardMs > 300, 20_000, 'greeting');
  await agentQuiet(media);
  const before = media.heardMs;
  await media.tone(500);
  await media.silence(500);
  const { code } = await media.closed;
  t.is(code, 1000);
  t.true(media.heardMs - before >= 'Goodbye!'.length * 40 - 100, `the farewell played out before the stream closed (${media.heardMs - before} ms)`);
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'agent_hangup');
  await until(() => line.rig.twilio.requests.some((r) => r.path.endsWith(`/Calls/${call.sid}.json`) && r.params.get('Status') === 'completed'), 10_000, 'hang-up request');
});

test.serial('a forged or missing stream token is refused with 1008 and the call stays pending', async (t) => {
  const name = line.rig.scenarios.add({ llm: [] });
  const res = await line.rig.s.request('POST', '/call', {
    key: line.org.apiKey,
    body: twilioDialBody(line, { agent: agent({ name }) }),
  });
  const callId = res.body.callId as string;
  const call = await dialOf(line.rig, callId);
  const twiml = await line.rig.twilio.answer(call.sid);
  const variants: Array<Record<string, string>> = [{ ...twiml.stream!.parameters, token: 'forged-token-forged-token-forged1' }, { callId }];
  for (const params of variants) {
    const m = FakeCarrierStream.connect(twiml.stream!.url, { callSid: call.sid, customParameters: params });
    const closed = await m.closed;
    t.deepEqual(closed, { code: 1008, reason: 'Invalid stream token' });
  }
  // another call's genuine token does not open this one
  const r = await getCallRow(line.rig.s.db, callId);
  t.is(r.status, 'pending');
  t.is(r.started_at, null);
  // the genuine stream still works afterwards
  const ok = openStream(line.rig, call, twiml.stream!);
  await until(async () => (await getCallRow(line.rig.s.db, callId)).status === 'active', 10_000, 'active');
  // the row turns active when the stream is claimed, before the engines open; a hang-up in that window is a call
  // that never started (cancelled, endedReason null). Hang up once the pipeline runs: the greeting is heard.
  await until(() => ok.heardMs > 0, 20_000, 'the greeting');
  ok.hangup();
  t.is((await endedRow(line.rig.s.db, callId)).ended_reason, 'user_hangup');
});

test.serial('inbound: a call to a number with an inbound agent runs that agent over the stream of the voice webhook TwiML; recordInProviderConsole starts Twilio\'s recording of the live call', async (t) => {
  const name = line.rig.scenarios.add({ stt: { utterances: ['hi'] }, llm: [{ text: 'Hello caller.' }] });
  const created = await line.rig.s.request('POST', '/agents', { key: line.org.apiKey, body: agent({ name, recordInProviderConsole: true }) });
  t.is(created.status, 201, JSON.stringify(created.body));
  const agentId = await line.rig.s.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM agents WHERE uuid = ${created.body.uuid as string}`);
  const INBOUND = '+15550002222';
  const number = line.rig.twilio.addNumber(line.acc.sid, INBOUND);
  const cfg = await insertConfig(line.rig.s.db, line.rig.s.config, {
    orgId: line.org.orgId, name: 'twilio inbound', provider: 'twilio', creds: { account_sid: line.acc.sid, auth_token: line.acc.token }, accountRef: line.acc.sid, amdEnabled: false, isDefault: false,
  });
  await line.rig.s.db.query(sql.type(z.object({}))`
    INSERT INTO phone_numbers (organization_id, telephony_config_id, address, address_normalized, address_type, inbound_agent_id, inbound_assigned_at, carrier_ref)
    VALUES (${line.org.orgId}, ${cfg.id}, ${INBOUND}, ${INBOUND}, 'pstn', ${agentId}, now(), ${number.sid})`);
  // what the number's provisioning sets on Twilio (the api's phone-number endpoints do it through the REST API)
  number.voiceUrl = carrierVoiceUrl(line.rig.s.config, 'twilio');
  number.statusCallback = carrierVoiceStatusUrl(line.rig.s.config, 'twilio');

  const { call, twiml } = await line.rig.twilio.inbound(line.acc.sid, INBOUND, '+15553334444');
  t.truthy(twiml.stream, twiml.xml);
  const media = openStream(line.rig, call, twiml.stream!);
  await until(() => media.heardMs > 200, 20_000, 'greeting');
  // the <Connect><Stream> TwiML cannot record: the Call Recordings API is asked on the live call, both channels
  const rec = await until(() => line.rig.twilio.requests.find((r) => r.method === 'POST' && r.path.endsWith(`/Calls/${call.sid}/Recordings.json`)), 10_000, 'the recording request');
  t.true(rec.authorized);
  t.is(rec.params.get('RecordingChannels'), 'dual');
  await agentQuiet(media);
  await media.tone(400);
  await media.silence(500);
  await until(() => (line.rig.scenarios.made.get(name)?.engines.llm.requests.length ?? 0) > 0, 15_000, 'the inbound agent answered the turn');
  media.hangup();
  const callId = twiml.stream!.parameters.callId!;
  const row = await endedRow(line.rig.s.db, callId);
  t.is(row.ended_reason, 'user_hangup');
  const r = await line.rig.s.db.one(sql.type(z.object({ transport: z.string(), agent_uuid: z.string().nullable(), carrier_call_id: z.string().nullable() }))`
    SELECT transport, agent_uuid::text, carrier_call_id FROM calls WHERE id = ${callId}`);
  t.deepEqual(r, { transport: 'inbound', agent_uuid: created.body.uuid as string, carrier_call_id: call.sid });
});
