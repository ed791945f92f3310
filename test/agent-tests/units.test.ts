// The pure parts of agent tests: the judge's schema (a valid JSON Schema by ajv, the criteria as an enum, one item
// per criterion) and the check of its answers; the simulated caller's messages and what of its model's text is
// spoken; defaults and catalog checks of a test's engines; where the worker reaches a call's audio socket.
import test from 'ava';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { checkVerdicts, JudgeAnswerError, judgeUserPrompt, matchVerdicts, verdictsSchema } from '../../core/agent-tests/judge.ts';
import { callerMessages, cleanCallerReply } from '../../core/agent-tests/caller-prompt.ts';
import { catalogIssues, resolveCaller, resolveJudge } from '../../core/agent-tests/schemas.ts';
import { reachableAudioUrl } from '../../activities/agent-test.ts';
import { loadConfig } from '../../core/config.ts';

const ajv = new Ajv2020({ strict: true, allErrors: true });
const CRITERIA = ['Greets the caller', 'Confirms the booking'];

test('verdicts schema: valid JSON Schema; exactly one item per criterion, criterion from the test, nothing extra', (t) => {
  const schema = verdictsSchema(CRITERIA);
  t.true(ajv.validateSchema(schema) as boolean, JSON.stringify(ajv.errors));
  const validate = ajv.compile(schema);
  const ok = { verdicts: [{ criterion: CRITERIA[0], passed: true, reason: 'r' }, { criterion: CRITERIA[1], passed: false, reason: 'r' }] };
  t.true(validate(ok) as boolean);
  t.false(validate({ verdicts: [ok.verdicts[0]] }) as boolean, 'one verdict short');
  t.false(validate({ verdicts: [...ok.verdicts, ok.verdicts[0]] }) as boolean, 'one too many');
  t.false(validate({ verdicts: [{ ...ok.verdicts[0], criterion: 'Something else' }, ok.verdicts[1]] }) as boolean, 'an invented criterion');
  t.false(validate({ verdicts: [{ ...ok.verdicts[0], extra: 1 }, ok.verdicts[1]] }) as boolean, 'an extra field');
  t.false(validate({ ...ok, summary: 'x' }) as boolean);
});

test('judge answers: put in the test\'s order, matched by text or position, a missing one refused', (t) => {
  const a = { criterion: CRITERIA[0], passed: true, reason: ' said hello ' };
  const b = { criterion: CRITERIA[1], passed: false, reason: 'never confirmed' };
  t.deepEqual(checkVerdicts({ verdicts: [b, a] }, CRITERIA), [{ ...a, reason: 'said hello' }, b], 'reordered');
  t.deepEqual(checkVerdicts({ verdicts: [{ ...a, criterion: 'greets THE caller  ' }, b] }, CRITERIA)[0]!.criterion, CRITERIA[0], 'case and spaces');
  t.deepEqual(checkVerdicts({ verdicts: [{ ...a, criterion: 'paraphrased' }, b] }, CRITERIA).map((v) => v.passed), [true, false], 'by position when the count is right');
  t.deepEqual(matchVerdicts({ verdicts: [b] }, CRITERIA), [null, b]);
  t.throws(() => checkVerdicts({ verdicts: [b] }, CRITERIA), { instanceOf: JudgeAnswerError, message: /no verdict for criterion 1/ });
  t.throws(() => checkVerdicts({ verdicts: [{ criterion: 'x', passed: 'yes', reason: '' }] }, CRITERIA), { instanceOf: JudgeAnswerError, message: /does not match/ });
  t.throws(() => checkVerdicts(undefined, CRITERIA), { instanceOf: JudgeAnswerError });
});

test('judge prompt: the scenario, the transcript by speaker, how it ended, the numbered criteria and the answer skeleton', (t) => {
  const p = judgeUserPrompt({ scenario: 'You are Sam.', criteria: CRITERIA, transcript: [{ role: 'agent', text: 'Hi.', at: '' }, { role: 'caller', text: 'Hello.', at: '' }], endedBy: 'agent' });
  t.regex(p, /You are Sam\./);
  t.regex(p, /Agent: Hi\.\nCaller: Hello\./);
  t.regex(p, /ended because the agent hung up/);
  t.regex(p, /1\. Greets the caller\n2\. Confirms the booking/);
  t.regex(p, /"criterion":"Confirms the booking"/);
  t.regex(judgeUserPrompt({ scenario: 's', criteria: CRITERIA, transcript: [], endedBy: null }), /\(nothing was said\)/);
});

test('caller messages: the scenario as system prompt, the agent as user, the caller as assistant, consecutive lines joined', (t) => {
  const m = callerMessages('You are Sam.', [
    { role: 'agent', text: 'Hello.', at: '' }, { role: 'agent', text: 'How can I help?', at: '' }, { role: 'caller', text: 'A cleaning.', at: '' },
  ]);
  t.is(m[0]!.role, 'system');
  t.regex(m[0]!.content, /You are Sam\./);
  t.deepEqual(m.slice(1), [{ role: 'user', content: 'Hello. How can I help?' }, { role: 'assistant', content: 'A cleaning.' }, { role: 'user', content: '(The agent is silent. Say something to continue.)' }]);
  t.regex(callerMessages('s', [])[1]!.content, /has not said anything yet/);
});

test('caller replies: marker, labels, stage directions and a second speaker are not spoken; the marker hangs up only after a goodbye', (t) => {
  t.deepEqual(cleanCallerReply('Thanks, bye! [HANG UP]'), { text: 'Thanks, bye!', hangUp: true });
  t.deepEqual(cleanCallerReply('Caller: I need a cleaning. [hang-up]'), { text: 'I need a cleaning.', hangUp: false });
  t.deepEqual(cleanCallerReply('*smiles* Yes (pause) please [laughs]'), { text: 'Yes please', hangUp: false });
  t.deepEqual(cleanCallerReply('Tuesday works.\nAgent: Great, see you.'), { text: 'Tuesday works.', hangUp: false });
  t.deepEqual(cleanCallerReply('"Okay, goodbye."'), { text: 'Okay, goodbye.', hangUp: false });
  t.true(cleanCallerReply(`${'word '.repeat(200)}`).text.length <= 400);
});

test('engines: local by default, catalog defaults per provider, off-catalog models and the demo responder refused', (t) => {
  t.deepEqual(resolveCaller(undefined).stt, { provider: 'local', model: 'whisper-tiny.en' });
  t.deepEqual(resolveCaller({ tts: { provider: 'cartesia' } }).tts, { provider: 'cartesia', model: 'sonic-3', voice: resolveCaller({ tts: { provider: 'cartesia' } }).tts.voice });
  t.is(resolveJudge(null), null);
  t.deepEqual(catalogIssues(resolveCaller(undefined), null), []);
  const bad = catalogIssues(resolveCaller({ llm: { provider: 'openai', model: 'gpt-0' }, stt: { provider: 'deepgram', model: 'nova-0' } }), { provider: 'local', model: 'local-demo' });
  t.deepEqual(bad.map((i) => i.path.join('.')), ['caller.llm.model', 'caller.stt.model', 'judge.model']);
});

test('the audio URL the worker joins: a URL on PUBLIC_URL moves to AGENT_TEST_API_URL; a media node\'s own address stays', (t) => {
  const c = loadConfig({ PUBLIC_URL: 'https://voice.example.com', AGENT_TEST_API_URL: 'http://proxy:8080' });
  t.is(reachableAudioUrl(c, 'wss://voice.example.com/api/v1/ws/audio/abc'), 'ws://proxy:8080/api/v1/ws/audio/abc');
  t.is(reachableAudioUrl(c, 'wss://media-2.example.com/api/v1/ws/audio/abc'), 'wss://media-2.example.com/api/v1/ws/audio/abc');
  t.is(reachableAudioUrl(loadConfig({ PUBLIC_URL: 'https://voice.example.com' }), 'wss://voice.example.com/api/v1/ws/audio/abc'), 'wss://voice.example.com/api/v1/ws/audio/abc');
});
