// Context aggregator: the conversation the LLM sees. User turns are appended as they end; assistant messages are
// created per LLM round and rewritten to what the caller actually heard when an utterance is interrupted.
import type { ChatMessage, ToolCall } from '../services/types.ts';

export type AssistantMsg = { role: 'assistant'; content: string; toolCalls?: ToolCall[] };

export class ConversationContext {
  readonly messages: ChatMessage[] = [];
  constructor(systemPrompt: string) {
    if (systemPrompt.trim()) this.messages.push({ role: 'system', content: systemPrompt });
  }
  addUser(text: string): void {
    const last = this.messages[this.messages.length - 1];
    // two user turns in a row (the agent said nothing in between): merge them
    if (last && last.role === 'user') last.content = `${last.content} ${text}`.trim();
    else this.messages.push({ role: 'user', content: text });
  }
  /** A new assistant message (one LLM round); its content is filled as text is produced. */
  addAssistant(content = ''): AssistantMsg {
    const m: AssistantMsg = { role: 'assistant', content };
    this.messages.push(m);
    return m;
  }
  /** Tool results go right after the assistant message that asked for them (even if the caller spoke since). */
  addToolResult(toolCallId: string, name: string, content: string): void {
    const m: ChatMessage = { role: 'tool', toolCallId, name, content };
    const at = this.messages.findIndex((x) => x.role === 'assistant' && x.toolCalls?.some((c) => c.id === toolCallId));
    if (at < 0) {
      this.messages.push(m);
      return;
    }
    let i = at + 1;
    while (i < this.messages.length && this.messages[i]!.role === 'tool') i++;
    this.messages.splice(i, 0, m);
  }
  /** Drop assistant messages left empty (interrupted before any audio) unless they carry tool calls. */
  prune(): void {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i]!;
      if (m.role === 'assistant' && !m.content.trim() && !m.toolCalls?.length) this.messages.splice(i, 1);
    }
  }
  /** Snapshot for one LLM request. */
  forLlm(): ChatMessage[] {
    return this.messages
      .filter((m) => !(m.role === 'assistant' && !m.content.trim() && !m.toolCalls?.length))
      .map((m) => ({ ...m }));
  }
}
