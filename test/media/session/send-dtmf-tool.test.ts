// The sendDtmf tool's function as the LLM sees it, and what it refuses (nothing is sent then).
import test from 'ava';
import { createLogger } from '../../../core/logger.ts';
import { MAX_DTMF_KEYS, sendDtmfTool } from '../../../media/tools/dtmf.ts';

const logger = createLogger({ level: 'silent', name: 'test' });
const sig = new AbortController().signal;

test('one function, one `digits` parameter; keys normalised; bad keys, pauses only and more than 32 refused without sending', async (t) => {
  const sent: string[] = [];
  const tool = sendDtmfTool({ logger, sendDtmf: async (d) => (sent.push(d), { via: 'in-band' }) }, 'send_dtmf', '');
  t.deepEqual(tool.spec.parameters.required, ['digits']);
  t.deepEqual(Object.keys(tool.spec.parameters.properties as object), ['digits']);
  t.regex(tool.spec.description, /keypad/);
  t.like(await tool.run({ digits: '1-2 3W#' }, sig), { status: 'success', content: 'Pressed 123w# on the keypad (as tones on the line).' });
  for (const digits of ['12a', '', 'www', '9'.repeat(MAX_DTMF_KEYS + 1), 42, undefined]) {
    const r = await tool.run({ digits }, sig);
    t.is(r.status, 'failed', String(digits));
  }
  t.deepEqual(sent, ['123w#'], 'only the valid keys were sent');
  t.like(await tool.run({ digits: '9'.repeat(MAX_DTMF_KEYS) }, sig), { status: 'success' });
  const noKeypad = sendDtmfTool({ logger }, 'send_dtmf', 'Keys.');
  t.like(await noKeypad.run({ digits: '1' }, sig), { status: 'failed', content: 'This call has no keypad: no keys were sent.' });
  const refused = sendDtmfTool({ logger, sendDtmf: async () => Promise.reject(new Error('the call has ended')) }, 'send_dtmf', 'Keys.');
  t.like(await refused.run({ digits: '1' }, sig), { status: 'failed', content: 'The keys could not be sent: the call has ended' });
});
