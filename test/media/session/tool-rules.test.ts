// Tool-runtime rules that need no call: farewell choice per endCall messageType, the always-present end_call,
// URL/header substitution, in-order message rotation, and the calculator's refusals.
import test from 'ava';
import { buildToolSet, BUILTIN_FAREWELL, substituteUrl, substituteVars, type Spoken, type ToolRunContext } from '../../../media/tools/runtime.ts';
import { calculate } from '../../../media/tools/calculator.ts';
import { createLogger } from '../../../core/logger.ts';
import { policyFromConfig } from '../../../core/net/ssrf.ts';

const ctx: ToolRunContext = {
  db: undefined as never, // inline tools only: no database access
  orgId: '00000000-0000-4000-8000-000000000000',
  callId: 'c',
  transport: 'websocket',
  contextVariables: { region: 'eu', token: 't0k' },
  policy: policyFromConfig({ OUTBOUND_ALLOW_HOSTS: '', OUTBOUND_BLOCK_HOSTS: '' }),
  logger: createLogger({ level: 'silent' }),
};
const signal = new AbortController().signal;

test('endCall farewells: custom picks one of its messages, none speaks the built-in line, audio plays the recording (built-in line as its fallback)', async (t) => {
  const set = await buildToolSet(ctx, [
    { type: 'endCall', name: 'bye_custom', description: '', config: { messageType: 'custom', customMessages: ['See you!', ' '] } },
    { type: 'endCall', name: 'bye_none', description: '', config: { messageType: 'none' } },
    { type: 'endCall', name: 'bye_audio', description: '', config: { messageType: 'audio', audioRecordingId: 'rec-1' } },
  ]);
  t.deepEqual((await set.get('bye_custom')!.run({}, signal)).endCall?.farewell, { kind: 'text', text: 'See you!' });
  t.deepEqual((await set.get('bye_none')!.run({}, signal)).endCall?.farewell, { kind: 'text', text: BUILTIN_FAREWELL });
  // no recording store in this context: the fallback is said
  t.deepEqual((await set.get('bye_audio')!.run({}, signal)).endCall?.farewell, { kind: 'text', text: BUILTIN_FAREWELL });
  const played = await buildToolSet({ ...ctx, recordings: async (id) => ({ name: `rec ${id}`, pcm: new Int16Array(480) }) }, [
    { type: 'endCall', name: 'bye_audio', description: '', config: { messageType: 'audio', audioRecordingId: 'rec-1' } },
  ]);
  const farewell = (await played.get('bye_audio')!.run({}, signal)).endCall?.farewell;
  t.like(farewell, { kind: 'recording', recordingId: 'rec-1', fallback: BUILTIN_FAREWELL });
  t.is((await (farewell as Extract<Spoken, { kind: 'recording' }>).audio)?.name, 'rec rec-1');
  t.false(set.specs.some((s) => s.name === 'end_call'), 'an endCall tool is present, no extra end_call added');
  const bare = await buildToolSet(ctx, []);
  t.deepEqual(bare.specs.map((s) => s.name), ['end_call']);
});

test('substitution: {param} is URL-encoded and consumed, {{var}} comes from the context variables', (t) => {
  const r = substituteUrl('https://api.example.com/{{region}}/users/{id}/x?q={missing}', { id: 'a/b c', other: 1 }, ctx.contextVariables);
  t.is(r.url, 'https://api.example.com/eu/users/a%2Fb%20c/x?q={missing}');
  t.deepEqual([...r.used], ['id']);
  t.is(substituteVars('Bearer {{token}} {{nope}}', ctx.contextVariables), 'Bearer t0k ');
});

test('tool messages: in-order wraps around, random picks from the list, blank lists are silent', async (t) => {
  const set = await buildToolSet(ctx, [
    { type: 'testTool', name: 'ordered', description: '', config: { delaySeconds: 0.5, messages: ['one', 'two'], messagesOrder: 'in-order' } },
    { type: 'testTool', name: 'random', description: '', config: { delaySeconds: 0.5, messages: ['a', 'b', 'c'] } },
    { type: 'testTool', name: 'quiet', description: '', config: { delaySeconds: 0.5, messages: [] } },
  ]);
  const ordered = set.get('ordered')!;
  const said = () => (set.pickMessage(ordered) as { text: string }).text;
  t.deepEqual([said(), said(), said()], ['one', 'two', 'one']);
  t.true(['a', 'b', 'c'].includes((set.pickMessage(set.get('random')!) as { text: string }).text));
  t.is(set.pickMessage(set.get('quiet')!), null);
});

test('safe_calculator evaluates expressions and refuses code', (t) => {
  t.deepEqual(calculate('2 * (3 + 4) ^ 2'), { ok: true, result: '98' });
  t.false(calculate('import({x: 1}, {override: true})').ok);
  t.false(calculate('evaluate("1+1")').ok);
  t.false(calculate('').ok);
  t.false(calculate('process.exit(1)').ok);
});
