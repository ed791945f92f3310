// Pure functions of the contract: resolveSnapshot (precedence, built-ins, timezone), scrubCredentials, mergePatch.
import test from 'ava';
import { mergePatch, resolveSnapshot, scrubCredentials, validateAgentConfig, type AgentConfig } from '../../core/agent-config/index.ts';

// No saved tools or documents are referenced, so validation never touches the database.
const ctx = { db: {} as never, orgId: '00000000-0000-4000-8000-000000000000', policy: { allowHosts: [], blockHosts: [] } };

async function config(over: Record<string, unknown>): Promise<AgentConfig> {
  const r = await validateAgentConfig({ name: 'S', llm: { provider: 'local', model: null }, stt: { provider: 'local' }, tts: { provider: 'local' }, ...over }, ctx);
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.config;
}

test('resolveSnapshot: saved < call-time non-blank < built-ins; current_time/date in the config timezone', async (t) => {
  const c = await config({
    timezone: 'Asia/Tokyo',
    contextVariables: { a: 'saved-a', b: 'saved-b', c: 'saved-c' },
    systemPrompt: '{{a}}|{{b}}|{{c}}|{{current_date}}|{{current_time}}|{{user_number}}|{{agent_number}}|{{ a }}|{{missing}}',
    tools: [
      { type: 'endCall', config: { customMessages: ['Bye {{a}}'] } },
      { type: 'transferCall', name: 'x', config: { destination: '+14155550100', customMessage: 'Transferring {{b}}' } },
      { type: 'testTool', name: 't', config: { responseText: 'ok {{c}}', messages: ['m {{a}}'] } },
    ],
  });
  const now = new Date('2026-03-01T16:30:00Z'); // 01:30 on 2 March in Tokyo
  const snap = resolveSnapshot(c, {
    savedVariables: { b: 'saved2-b' },
    callVariables: { a: 'call-a', b: '', c: '   ', current_date: 'fake', agent_number: 'fake' },
    builtins: { userNumber: '+15550001111', agentNumber: '+15550002222' },
    now,
  });
  t.is(snap.systemPrompt, 'call-a|saved2-b|saved-c|2026-03-02|01:30|+15550001111|+15550002222|call-a|{{missing}}');
  t.deepEqual(snap.contextVariables, { a: 'call-a', b: 'saved2-b', c: 'saved-c' });
  const [end, xfer, sim] = snap.tools as Array<{ config: Record<string, unknown> }>;
  t.deepEqual(end!.config.customMessages, ['Bye call-a']);
  t.is(xfer!.config.customMessage, 'Transferring saved2-b');
  t.is(sim!.config.responseText, 'ok saved-c');
  t.deepEqual(sim!.config.messages, ['m call-a']);
  // the input config is not mutated
  t.is(c.systemPrompt.startsWith('{{a}}'), true);
  // without numbers the built-ins stay literal (previews)
  const preview = resolveSnapshot(c, { callVariables: null, builtins: {}, now });
  t.regex(preview.systemPrompt, /\|\{\{user_number\}\}\|\{\{agent_number\}\}\|/);
  // a snapshot is itself a valid config
  const again = await validateAgentConfig(JSON.parse(JSON.stringify(snap)), ctx);
  t.true(again.ok);
});

test('scrubCredentials removes inline carrier auth, webhookSecret and secret-looking header values', (t) => {
  const body = {
    type: 'outbound',
    callConfig: { provider: 'twilio', phoneNumber: '+1555', auth: { accountSid: 'AC1', authToken: 'tok' }, twilio: { auth: { x: 1 } } },
    agent: {
      name: 'A',
      webhook: { url: 'https://h.example.com', headers: { Authorization: 'Bearer s3cret', 'X-Api-Key': 'k', 'X-Trace': 'keep' } },
      tools: [{ type: 'function', name: 'f', config: { server: { url: 'https://x.example.com', headers: { 'X-Session-Token': 't', Accept: 'application/json' } } } }],
    },
    webhookSecret: 'whs',
  };
  const out = scrubCredentials(body) as any;
  t.deepEqual(out.callConfig, { provider: 'twilio', phoneNumber: '+1555', twilio: {} });
  t.false('webhookSecret' in out);
  t.deepEqual(out.agent.webhook.headers, { Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]', 'X-Trace': 'keep' });
  t.deepEqual(out.agent.tools[0].config.server.headers, { 'X-Session-Token': '[REDACTED]', Accept: 'application/json' });
  t.false(JSON.stringify(out).includes('s3cret'));
  t.false(JSON.stringify(out).includes('tok'));
  // the input is untouched; non-objects pass through
  t.is(body.callConfig.auth.authToken, 'tok');
  t.is(scrubCredentials('x'), 'x');
  t.is(scrubCredentials(null), null);
});

test('mergePatch: objects merge, lists/scalars/null replace, contextVariables wholesale', (t) => {
  const stored = { a: { b: 1, c: { d: 2, e: 3 } }, list: [1, 2], contextVariables: { x: '1', y: '2' }, s: 'v', o: { k: 1 } };
  const merged = mergePatch(stored, { a: { c: { e: 4 } }, list: [3], contextVariables: { z: '3' }, s: null, o: 'str', n: { new: true } });
  t.deepEqual(merged, { a: { b: 1, c: { d: 2, e: 4 } }, list: [3], contextVariables: { z: '3' }, s: null, o: 'str', n: { new: true } });
  t.deepEqual(stored.a.c, { d: 2, e: 3 });
});
