// End-to-end over a real WebSocket: handshake rules, greeting modes, a full turn, barge-in (both modes),
// idle → silence_timeout, max_duration, end-call farewell, user hang-up, pipeline_error, never-started calls.
import test from 'ava';
import { startTestServer, type TestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, getCallRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';
import { sql } from '../../../core/db/pool.ts';
import { z } from 'zod';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import { until } from '../../helpers/wait.ts';
// ajv-formats is CommonJS (module.exports is the plugin); its types describe the namespace
const addFormats = formatsPlugin as unknown as typeof formatsPlugin.default;

const book = new ScenarioBook();
let s: TestServer;
let org: { orgId: string; apiKey: string };
const QUEUE = 'media-ws-call-test';

test.before(async () => {
  s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: QUEUE }, media: { engines: book.factory } });
  org = await s.createOrg();
});
test.after.always(async () => {
  await s?.close();
});

async function call(config: Record<string, unknown>, o: { header?: boolean } = {}) {
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey, o);
  await caller.waitOpen();
  return { callId, caller };
}

test('handshake: unknown call, other org, webrtc call, non-pending call, second connection, missing key', async (t) => {
  const other = await s.createOrg({ name: 'other' });
  const otherCall = await insertPendingCall(s.db, { orgId: other.orgId, config: agentConfig() });
  const webrtc = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig(), transport: 'webrtc' });
  const done = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig() });
  await s.db.query(sql.type(z.object({}))`UPDATE calls SET status = 'completed' WHERE id = ${done}`);

  for (const [id, reason] of [
    ['7b0b7f5e-0000-4000-8000-000000000000', 'Invalid call'],
    ['not-a-uuid', 'Invalid call'],
    [otherCall, 'Invalid call'],
    [webrtc, 'Call transport mismatch'],
    [done, 'Call not available'],
  ] as const) {
    const c = TestCaller.connect(s.origin, id, org.apiKey);
    const closed = await c.closed;
    t.deepEqual(closed, { code: 1008, reason }, id);
  }
  // the other org's row is untouched
  t.is((await getCallRow(s.db, otherCall)).status, 'pending');

  const name = book.add({ llm: [] });
  const { callId, caller } = await call(agentConfig({ name }), { header: true });
  await until(async () => (await getCallRow(s.db, callId)).status === 'active', { what: 'the call to be active' });
  const second = TestCaller.connect(s.origin, callId, org.apiKey);
  t.deepEqual(await second.closed, { code: 1008, reason: 'Call not available' });
  caller.close();
  await endedRow(s.db, callId);

  const nokey = TestCaller.connect(s.origin, callId, null);
  await t.throwsAsync(nokey.waitOpen(), { message: /HTTP 401/ });
  const badkey = TestCaller.connect(s.origin, callId, 'vak_wrong');
  await t.throwsAsync(badkey.waitOpen(), { message: /HTTP 401/ });
});

test('greeting, a full turn with transcription events, then the caller hangs up', async (t) => {
  const name = book.add({
    stt: { utterances: ['what are your opening hours'] },
    llm: [{ text: 'We are open from nine to five. Anything else?', firstTokenMs: 50 }],
  });
  const { callId, caller } = await call(agentConfig({ name, systemPrompt: 'Caller number: {{user_number}}. Be brief.' }));
  // accepted first, then marked active (spec lifecycle)
  const row = await until(async () => {
    const r = await getCallRow(s.db, callId);
    return r.status === 'active' ? r : null;
  }, { what: 'active', timeoutMs: 5000 });
  t.is(row.connection_status, 'completed');
  t.truthy(row.media_node);

  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?');
  await caller.waitAgentQuiet();
  const greetingAudio = caller.audioSeconds;
  t.true(greetingAudio > 0.5, `greeting audio ${greetingAudio}s`);

  await caller.speak(900);
  await caller.silence(400);
  const final = await caller.waitEvent((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true);
  t.is(final.payload!.text, 'what are your opening hours');
  t.true(caller.events.some((e) => e.type === 'rtf-user-transcription' && e.payload?.final === false), 'interim transcripts');
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && /nine to five/.test(e.payload!.text));
  await caller.waitAgentQuiet();
  t.deepEqual(caller.botTexts(), ['Hello, how can I help?', 'We are open from nine to five.', 'Anything else?']);

  caller.close();
  const ended = await endedRow(s.db, callId);
  t.is(ended.status, 'completed');
  t.is(ended.ended_reason, 'user_hangup');
  t.is(ended.connection_status, 'completed');
  t.true((ended.duration_seconds ?? 0) > 1);
  t.deepEqual(
    ended.transcript.map((e: { role: string; content?: string }) => [e.role, e.content]),
    [
      ['assistant', 'Hello, how can I help?'],
      ['user', 'what are your opening hours'],
      ['assistant', 'We are open from nine to five. Anything else?'],
    ],
  );
  for (const e of ended.transcript) t.regex(e.timestamp, /^\d{4}-\d\d-\d\dT/);
  t.is(ended.usage.llm.provider, 'fake');
  t.true(ended.usage.llm.completion_tokens > 0);
  t.true(ended.usage.tts.characters >= 'Hello, how can I help?'.length);
  t.true(ended.usage.stt.seconds > 1);
  t.is(ended.logs.latency.length, 1);
  const lat = ended.logs.latency[0];
  const e0 = book.engines(name);
  for (const k of ['stt_ms', 'llm_ms', 'tts_ms', 'total_ms']) t.is(typeof lat[k], 'number', k);
  // the turn sits on the call's timeline (after the greeting) and names the provider of each stage
  t.is(lat.origin, 'user_stopped');
  t.true(lat.offset_ms > greetingAudio * 1000, `turn offset ${lat.offset_ms} ms`);
  t.true(Date.parse(lat.started_at) >= Date.parse(ended.transcript[0].timestamp));
  t.deepEqual(lat.providers, { stt: e0.engines.stt.provider, llm: 'fake', tts: e0.engines.tts.provider });
  // the stage events in pipeline order, as offsets from the end of speech
  const order = ['userStopped_ms', 'sttFinal_ms', 'llmRequest_ms', 'llmFirstToken_ms', 'ttsText_ms', 'ttsFirstByte_ms', 'firstFrame_ms'];
  t.deepEqual(Object.keys(lat.detail).sort((a, b) => order.indexOf(a) - order.indexOf(b)), order);
  t.is(lat.detail.userStopped_ms, 0);
  t.is(lat.detail.firstFrame_ms, lat.total_ms);
  t.true(lat.detail.llmFirstToken_ms >= lat.detail.llmRequest_ms && lat.detail.ttsFirstByte_ms >= lat.detail.ttsText_ms);

  // GET /calls/{callId} returns the same turns, and the record matches its OpenAPI schema
  const detail = await s.request('GET', `/calls/${callId}`, { key: org.apiKey });
  t.is(detail.status, 200);
  t.deepEqual(detail.body.logs.latency, ended.logs.latency);
  const doc = (await s.request('GET', '/openapi.json', { key: null })).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(doc.paths['/calls/{callId}'].get.responses['200'].content['application/json'].schema);
  t.true(validate(detail.body), JSON.stringify(validate.errors));
  t.false(validate({ ...detail.body, logs: { latency: [{ ...lat, providers: { stt: 'x' } }] } }), 'a turn without its llm/tts providers does not match');

  // per-turn latency and interruptions are exported to Prometheus, each stage labelled with its provider
  const metrics = await (await fetch(`${s.origin}/metrics`)).text();
  const p = lat.providers;
  const labels: Record<string, string> = { stt: p.stt, llm: p.llm, tts: p.tts, total: `${p.stt}+${p.llm}+${p.tts}`, overhead: `${p.stt}+${p.llm}+${p.tts}` };
  for (const [stage, provider] of Object.entries(labels)) t.regex(metrics, new RegExp(`voice_turn_stage_seconds_count\\{stage="${stage}",provider="${provider.replace(/[+]/g, '\\+')}"\\} [1-9]`), stage);
  t.regex(metrics, /voice_active_calls/);

  const e = e0;
  t.is(e.engines.llm.prewarmed, 1);
  const req = e.engines.llm.requests[0]!;
  t.is(req.temperature, 0.5);
  t.is(req.maxTokens, 100);
  t.deepEqual(req.messages[0], { role: 'system', content: 'Caller number: . Be brief.' });
  t.true(req.tools.includes('end_call'));

  // the recording is spooled for post-call, and postCall-<callId> was started
  const wav = await until(() => s.storage.get?.(`spool/recordings/${callId}.wav`).catch(() => null) ?? null, { what: 'recording', timeoutMs: 5000 });
  t.truthy(wav);
  if (s.temporal) {
    const d = await s.temporal.client.workflow.getHandle(`postCall-${callId}`).describe();
    t.is(d.taskQueue, QUEUE);
  }
});

test('usage: a service that emitted no metrics is absent (no stt entry when no caller audio reached STT, no llm entry without LLM usage)', async (t) => {
  const name = book.add({ llm: [] });
  const { callId, caller } = await call(agentConfig({ name }));
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hello, how can I help?');
  await caller.waitAgentQuiet();
  caller.close();
  const ended = await endedRow(s.db, callId);
  t.is(ended.ended_reason, 'user_hangup');
  t.deepEqual(Object.keys(ended.usage), ['tts'], JSON.stringify(ended.usage));
  t.like(ended.usage.tts, { provider: 'fake' });
  t.true(ended.usage.tts.characters >= 'Hello, how can I help?'.length);
});

test('barge-in with interruptionMinWords=0: caller speech stops the agent and the context keeps only what was heard', async (t) => {
  const long = 'This is a very long opening statement that keeps going and going so that the caller has time to interrupt it in the middle.';
  const name = book.add({ stt: { utterances: ['stop'] }, llm: [{ text: 'Sure, go ahead.' }], tts: { msPerChar: 40 } });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [long], interruptible: true } }));
  await until(() => caller.audioSeconds > 0.8, { what: 'greeting audio', timeoutMs: 10_000 });
  await caller.speak(300);
  await caller.silence(400);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Sure, go ahead.');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  const first = row.transcript[0];
  t.is(first.role, 'assistant');
  t.true(first.interrupted);
  t.true(first.content.length > 0 && first.content.length < long.length, first.content);
  t.true(long.startsWith(first.content));
  // the LLM saw the truncated opener, not the full text
  const req = book.engines(name).engines.llm.requests[0]!;
  const assistant = req.messages.find((m) => m.role === 'assistant');
  t.is(assistant && 'content' in assistant ? assistant.content : null, first.content);
  // the full greeting would have been ~5 s of audio
  t.true(caller.audioSeconds < 4, `agent audio ${caller.audioSeconds}s`);
});

test('barge-in with interruptionMinWords=3: "mhm" does not interrupt, three words do', async (t) => {
  const long = 'Let me tell you all about our products, our prices, our opening hours, our locations, and every single thing we do, which takes quite a while to say out loud.';
  const name = book.add({
    stt: { utterances: ['mhm', 'wait wait please stop'], wordMs: 150 },
    llm: [{ text: 'Of course.' }],
    tts: { msPerChar: 40 },
  });
  const { callId, caller } = await call(
    agentConfig({ name, greeting: { firstMessages: [long], interruptible: true }, stt: { provider: 'fake', interruptionMinWords: 3 } }),
  );
  await until(() => caller.audioSeconds > 0.5, { what: 'greeting audio', timeoutMs: 10_000 });
  await caller.speak(140); // one word
  await caller.silence(600);
  await caller.waitEvent((e) => e.type === 'rtf-user-transcription' && e.payload?.final === true && e.payload.text === 'mhm');
  const before = caller.audioBytes;
  await caller.silence(300);
  t.true(caller.audioBytes > before, 'agent kept talking after "mhm"');
  await caller.speak(700);
  await caller.silence(400);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Of course.');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  t.true(row.transcript[0].interrupted);
  const req = book.engines(name).engines.llm.requests[0]!;
  t.deepEqual(req.messages.filter((m) => m.role === 'user').map((m) => ('content' in m ? m.content : '')), ['wait wait please stop']);
});

test('a non-interruptible greeting plays out; the caller is answered after it', async (t) => {
  const name = book.add({ stt: { utterances: ['hi there'] }, llm: [{ text: 'Hi! What do you need?' }], tts: { msPerChar: 30 } });
  const greeting = 'Welcome to the test line, this message cannot be interrupted by the caller.';
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [greeting], interruptible: false } }));
  await until(() => caller.audioSeconds > 0.3, { what: 'greeting audio', timeoutMs: 10_000 });
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'What do you need?');
  caller.close();
  const row = await endedRow(s.db, callId);
  t.is(row.transcript[0].content, greeting);
  t.falsy(row.transcript[0].interrupted);
  t.deepEqual(row.transcript.map((e: { role: string }) => e.role).slice(0, 3), ['assistant', 'user', 'assistant']);
});

test('speakFirst=user: the agent opens after userTimeoutS of silence; empty firstMessages lets the LLM open', async (t) => {
  const name = book.add({ llm: [{ text: 'Good morning from the model.' }] });
  const { callId, caller } = await call(
    agentConfig({ name, greeting: { firstMessages: [], speakFirst: 'user', userTimeoutS: 1 }, llm: { provider: 'fake', model: 'm', temperature: 1, maxTokens: 50, prewarm: false } }),
  );
  const ev = await caller.waitEvent((e) => e.type === 'rtf-bot-text');
  t.is(ev.payload!.text, 'Good morning from the model.');
  caller.close();
  await endedRow(s.db, callId);
  const req = book.engines(name).engines.llm.requests[0]!;
  t.false(req.messages.some((m) => m.role === 'user'));
  t.is(book.engines(name).engines.llm.prewarmed, 0, 'llm.prewarm=false: no hidden request');
});

test('speakFirst=user: when the caller speaks first the agent answers instead of greeting', async (t) => {
  const name = book.add({ stt: { utterances: ['hello is anyone there'] }, llm: [{ text: 'Yes, I am here.' }] });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: ['Greeting that must not play'], speakFirst: 'user', userTimeoutS: 5 } }));
  await caller.speak(500);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text');
  caller.close();
  await endedRow(s.db, callId);
  t.deepEqual(caller.botTexts(), ['Yes, I am here.']);
});

test('idle: prompts per retry (default line past the list), then silence_timeout and a clean close', async (t) => {
  const name = book.add({});
  const { callId, caller } = await call(
    agentConfig({ name, greeting: { firstMessages: ['Hi.'] }, userIdleTimeoutS: 3, userIdleMessages: ['Hello? Still with me?'], userIdleMaxRetries: 2 }),
  );
  const closed = await caller.closed;
  t.deepEqual(closed, { code: 1000, reason: '' });
  // rtf-bot-text streams sentence by sentence
  t.deepEqual(caller.botTexts(), ['Hi.', 'Hello?', 'Still with me?', 'Are you still there?']);
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'silence_timeout');
  t.is(row.status, 'completed');
});

test('maxCallDurationS ends the call with max_duration and close 1000', async (t) => {
  const name = book.add({});
  const { callId, caller } = await call(agentConfig({ name, maxCallDurationS: 10 }));
  // keep the caller "present" so idle never fires
  const talking = (async () => {
    while (caller.isOpen) await caller.silence(200);
  })();
  const closed = await caller.closed;
  await talking;
  t.is(closed.code, 1000);
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'max_duration');
  t.true(row.duration_seconds! >= 9.5 && row.duration_seconds! < 14, String(row.duration_seconds));
});

test('end_call: the reply plays, then the farewell, then agent_hangup', async (t) => {
  const name = book.add({
    stt: { utterances: ['thanks that is all'] },
    llm: [{ text: 'Glad I could help.', toolCalls: [{ name: 'end_call' }] }],
  });
  const { callId, caller } = await call(
    agentConfig({ name, tools: [{ type: 'endCall', name: 'end_call', description: 'hang up', config: { messageType: 'custom', customMessages: ['Bye for now!'] } }] }),
  );
  await caller.waitAgentQuiet();
  await caller.speak(500);
  await caller.silence(300);
  const closed = await caller.closed;
  t.is(closed.code, 1000);
  t.deepEqual(caller.botTexts().slice(-2), ['Glad I could help.', 'Bye for now!']);
  const row = await endedRow(s.db, callId);
  t.is(row.ended_reason, 'agent_hangup');
  const tool = row.transcript.find((e: { role: string }) => e.role === 'tool');
  t.like(tool, { name: 'end_call', status: 'success' });
  t.is(typeof tool.durationMs, 'number');
  t.is(typeof tool.t_ms, 'number');
  t.is(row.transcript[row.transcript.length - 1].content, 'Bye for now!');
});

test('an unhandled exception after connect: error event, close 1011, row status error / pipeline_error', async (t) => {
  const name = book.add({ stt: { utterances: ['boom'] }, llm: [{ fail: 'crash' }] });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [] } }));
  const closed = await caller.closed;
  t.is(closed.code, 1011);
  t.true(caller.events.some((e) => e.type === 'error'));
  const row = await endedRow(s.db, callId);
  t.is(row.status, 'error');
  t.is(row.ended_reason, 'pipeline_error');
  t.is(row.connection_status, 'completed');
});

test('a transient LLM error is sent again (twice) before the caller loses the turn: then an error event, and the call goes on', async (t) => {
  const name = book.add({ stt: { utterances: ['try again'] }, llm: [{ fail: 'transient' }, { fail: 'transient' }, { fail: 'transient' }, { text: 'Now it works.' }] });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [] } }));
  await caller.waitEvent((e) => e.type === 'error');
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Now it works.');
  t.is(caller.events.filter((e) => e.type === 'error').length, 1, 'one error event, after the third refusal');
  t.true(caller.isOpen);
  caller.close();
  t.is((await endedRow(s.db, callId)).ended_reason, 'user_hangup');
});

test('a transient LLM error on one request is retried: the caller is answered with no error event', async (t) => {
  const name = book.add({ stt: { utterances: ['hello there'] }, llm: [{ fail: 'transient' }, { text: 'Answered after a retry.' }] });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [] } }));
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Answered after a retry.');
  t.is(caller.events.filter((e) => e.type === 'error').length, 0);
  caller.close();
  t.is((await endedRow(s.db, callId)).ended_reason, 'user_hangup');
});

test('a fatal LLM error is never retried', async (t) => {
  const name = book.add({ stt: { utterances: ['hello there'] }, llm: [{ fail: 'fatal' }, { text: 'must not be heard' }] });
  const { callId, caller } = await call(agentConfig({ name, greeting: { firstMessages: [] } }));
  await caller.closed;
  t.false(caller.events.some((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'must not be heard'));
  t.is((await endedRow(s.db, callId)).ended_reason, 'pipeline_error');
});

test('a call whose pipeline never starts: connectionStatus cancelled, endedReason null, nothing left pending', async (t) => {
  const name = book.add({ failBuild: true } as never);
  const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name }) });
  const caller = TestCaller.connect(s.origin, callId, org.apiKey);
  const closed = await caller.closed;
  t.is(closed.code, 1011);
  const row = await endedRow(s.db, callId);
  t.is(row.connection_status, 'cancelled');
  t.is(row.ended_reason, null);
  t.is(row.status, 'completed');
});

test('a call created through POST /call (saved agent) runs on its frozen snapshot', async (t) => {
  const name = book.add({ stt: { utterances: ['hello'] }, llm: [{ text: 'Hi from the snapshot.' }] });
  // its own organization: the concurrency gate counts live calls per organization
  const own = await s.createOrg({ name: 'api calls' });
  const agent = await s.request('POST', '/agents', {
    key: own.apiKey,
    body: {
      name,
      llm: { provider: 'local', model: 'local-demo' },
      stt: { provider: 'local' },
      tts: { provider: 'local' },
      greeting: { firstMessages: ['Welcome, {{customer}}.'] },
      contextVariables: { customer: 'guest' },
      noiseGate: { enabled: false },
    },
  });
  t.is(agent.status, 201, JSON.stringify(agent.body));
  const created = await s.request('POST', '/call', { key: own.apiKey, body: { agentId: agent.body.uuid, contextVariables: { customer: 'Ada' } } });
  t.true(created.status === 200 || created.status === 201, JSON.stringify(created.body));
  t.regex(created.body.audioUrl, new RegExp(`/api/v1/ws/audio/${created.body.callId}$`));
  const caller = TestCaller.connect(s.origin, created.body.callId, own.apiKey);
  await caller.waitOpen();
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Welcome, Ada.');
  await caller.waitAgentQuiet();
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'Hi from the snapshot.');
  caller.close();
  const row = await endedRow(s.db, created.body.callId);
  t.is(row.ended_reason, 'user_hangup');
  t.is(row.transcript[0].content, 'Welcome, Ada.');
});

test('eager end of turn: the LLM starts at the eager event and its reply is used when the turn really ends', async (t) => {
  const name = book.add({ stt: { utterances: ['what is the weather'], eager: true, finalDelayMs: 300 }, llm: [{ text: 'It is sunny.', firstTokenMs: 100 }] });
  const { callId, caller } = await call(agentConfig({ name }));
  await caller.waitAgentQuiet();
  await caller.speak(400);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'It is sunny.');
  await caller.waitAgentQuiet();
  caller.close();
  await endedRow(s.db, callId);
  const reqs = book.engines(name).engines.llm.requests;
  t.is(reqs.length, 1, 'one request: the speculative one was adopted');
  t.deepEqual(reqs[0]!.messages.filter((m) => m.role === 'user').map((m) => ('content' in m ? m.content : '')), ['what is the weather']);
});

test('eager end of turn followed by turn_resumed: the speculative request is cancelled, the full turn is answered', async (t) => {
  const name = book.add({
    stt: { utterances: ['I would like', 'to book a table'], eager: true, finalDelayMs: 200, resumeAfter: [0] },
    llm: [{ text: 'Never used.', firstTokenMs: 2000 }, { text: 'For how many people?' }],
  });
  const { callId, caller } = await call(agentConfig({ name }));
  await caller.waitAgentQuiet();
  await caller.speak(300);
  await caller.silence(400);
  await caller.speak(300);
  await caller.silence(300);
  await caller.waitEvent((e) => e.type === 'rtf-bot-text' && e.payload?.text === 'For how many people?');
  await caller.waitAgentQuiet();
  caller.close();
  const row = await endedRow(s.db, callId);
  const reqs = book.engines(name).engines.llm.requests;
  t.is(reqs.length, 2);
  t.true(reqs[0]!.signal.aborted, 'the first speculation was cancelled');
  t.deepEqual(reqs[1]!.messages.filter((m) => m.role === 'user').map((m) => ('content' in m ? m.content : '')), ['I would like to book a table']);
  t.false(caller.botTexts().includes('Never used.'));
  t.deepEqual(row.transcript.filter((e: { role: string }) => e.role === 'user').map((e: { content: string }) => e.content), ['I would like to book a table']);
});
