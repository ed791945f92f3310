// A caller's farewell, for the small local model: when the caller's latest turn ends the conversation ("thanks,
// goodbye", "that's all, bye", "hang up") and the agent offers an end-call tool, the local engine calls that tool
// instead of asking the model. Qwen2.5 0.5B answers such a turn with "Goodbye!" as text and seldom with the tool
// call (bench/local-llm.ts), so the call stayed open and the idle prompt ("Are you still there?") followed; the
// tool's farewell is what the caller hears instead. A turn that asks something more (a question mark, or a farewell
// that is not at its end: "bye the way, ...") goes to the model as usual.
import type { ChatMessage, ToolSpec } from '../types.ts';

/** The end-call tool among the offered ones: the built-in `end_call` / `endCall`, or a tool named like it. */
export function endCallTool(tools: ToolSpec[]): ToolSpec | null {
  return tools.find((t) => /^end_?call$/i.test(t.name)) ?? tools.find((t) => /^(end|hang_?up)(_|$)|hang_?up|end_?(the_?)?call/i.test(t.name)) ?? null;
}

const CLOSING = new RegExp(
  [
    String.raw`good ?-?bye`,
    String.raw`bye(-| )?bye`,
    String.raw`bye( now| for now)?`,
    String.raw`see (you|ya)( later| soon)?`,
    String.raw`talk (to you )?(later|soon)`,
    String.raw`have a (good|nice|great|lovely) (day|one|evening|night|weekend)`,
    String.raw`(that'?s|that is) (all|it|everything)( for (now|today))?`,
    String.raw`i'?m (all set|done)`,
    String.raw`(please )?hang up`,
    String.raw`end (the|this) call`,
  ].join('|'),
  'i',
);
/** what may follow the closing expression: "bye, thanks", "that's all I needed", "goodbye then" */
const TAIL = String.raw`([\s,.!;]*(thanks|thank you( (so|very) much)?|then|now|again|for now|for today|i needed|i wanted|i need))?`;
const FAREWELL = new RegExp(String.raw`(^|[\s,.;!-])(${CLOSING.source})${TAIL}[\s.!]*$`, 'i');

/** Does `text` (a caller's turn) take leave: a closing expression at its end and no question? */
export function isFarewell(text: string): boolean {
  const t = text.trim();
  if (!t || t.includes('?')) return false;
  return FAREWELL.test(t);
}

/** The end-call tool call for a conversation whose latest message is the caller's farewell; else null. */
export function farewellCall(messages: ChatMessage[], tools: ToolSpec[]): { name: string; arguments: string } | null {
  const last = messages.at(-1);
  if (last?.role !== 'user' || !isFarewell(last.content)) return null;
  const tool = endCallTool(tools);
  return tool ? { name: tool.name, arguments: '{}' } : null;
}
