// The simulated caller's instructions (pure): its system prompt from the test's scenario, the conversation as chat
// messages from the caller's side (the agent's lines are the "user" turns), and the clean-up of what its model
// wrote before it is spoken. The caller ends the call by writing HANG_UP_MARKER after its goodbye.
import type { TranscriptLine } from './schemas.ts';

export const HANG_UP_MARKER = '[HANG UP]';

export type CallerMessage = { role: 'system' | 'user' | 'assistant'; content: string };

export function callerSystemPrompt(scenario: string): string {
  return [
    'You are role-playing a person who phoned a business and is talking to its voice agent.',
    `Who you are and what you want:\n${scenario}`,
    'Speak only as this caller, in the first person, in plain spoken language: one or two short sentences per turn, no lists, no stage directions, no emojis, no speaker names.',
    'Never say you are an AI, a simulation or a test. Answer what the agent asks; pursue your goal. When you need a detail the description does not give (a name, a number), make one up: never write a placeholder.',
    `When your goal is reached, or the agent says goodbye, say a short goodbye and end that message with ${HANG_UP_MARKER}`,
  ].join('\n\n');
}

/** Chat messages for the caller's next turn. */
export function callerMessages(scenario: string, transcript: readonly TranscriptLine[]): CallerMessage[] {
  const messages: CallerMessage[] = [{ role: 'system', content: callerSystemPrompt(scenario) }];
  if (!transcript.some((l) => l.role === 'agent')) {
    messages.push({ role: 'user', content: '(The call has connected but the agent has not said anything yet. Start the conversation.)' });
  }
  for (const l of transcript) {
    const role = l.role === 'agent' ? 'user' : 'assistant';
    const prev = messages[messages.length - 1]!;
    // consecutive lines of one side are one turn for the model
    if (prev.role === role) prev.content = `${prev.content} ${l.text}`;
    else messages.push({ role, content: l.text });
  }
  if (messages[messages.length - 1]!.role === 'assistant') messages.push({ role: 'user', content: '(The agent is silent. Say something to continue.)' });
  return messages;
}

/**
 * What the caller says of its model's text, and whether it hangs up (the marker after a goodbye): the marker, a
 * speaker label and a second speaker's line (the small local model writes them) are not spoken; stage directions
 * in brackets, parentheses or asterisks go.
 */
export function cleanCallerReply(raw: string): { text: string; hangUp: boolean } {
  let t = raw.replace(/\r/g, '');
  // the marker ends the call only after a goodbye: small models copy it from the instructions into any line
  const hangUp = /\[\s*hang\s*-?\s*up\s*\]/i.test(t) && /\b(bye|goodbye|thanks|thank you|take care)\b/i.test(t);
  t = t.replace(/\[\s*hang\s*-?\s*up\s*\]/gi, ' ');
  t = t.replace(/^\s*(caller|customer|me|you)\s*:\s*/i, '');
  // a second speaker's line written by the model: only the caller's part is spoken
  const other = t.search(/\n\s*(agent|assistant|caller|customer)\s*:/i);
  if (other >= 0) t = t.slice(0, other);
  t = t.replace(/\*[^*]{0,200}\*/g, ' ').replace(/\[[^\]]{0,200}\]/g, ' ').replace(/\([^)]{0,200}\)/g, ' ');
  t = t.replace(/[`#_~]/g, '').replace(/^["'“”\s]+|["'“”\s]+$/g, '').replace(/\s+/g, ' ').trim();
  if (t.length > 400) {
    const cut = t.slice(0, 400);
    const end = Math.max(cut.lastIndexOf('. '), cut.lastIndexOf('? '), cut.lastIndexOf('! '));
    t = end > 40 ? cut.slice(0, end + 1) : cut;
  }
  return { text: t, hangUp };
}
