// Call summaries: the prompt sent to the agent's LLM, the clean-up of its answer to 3-5 sentences, and the
// extractive summary used by the `local` LLM provider when no LOCAL_LLM_BASE_URL is configured (the built-in demo
// engine cannot summarise) and for calls in which nobody spoke. The extractive summary is deterministic: it states
// the length and ending of the call, quotes the caller's first and last utterance, names the tools that ran, and
// the agent's closing line.

export interface TranscriptEntry {
  role: string;
  content?: string;
  name?: string;
  status?: string;
  timestamp?: string;
}

export const SUMMARY_SYSTEM_PROMPT =
  'You summarise phone calls between an AI voice agent and a caller. Write a plain-prose summary of 3 to 5 ' +
  'sentences: who called about what, the key facts and decisions, any actions or tools used, and how the call ended. ' +
  'No lists, no headings, no preamble.';

const MAX_PROMPT_CHARS = 24_000;

export function transcriptAsText(transcript: readonly TranscriptEntry[], maxChars = MAX_PROMPT_CHARS): string {
  const lines = transcript.map((e) => {
    if (e.role === 'user') return `Caller: ${e.content ?? ''}`;
    if (e.role === 'assistant') return `Agent: ${e.content ?? ''}`;
    if (e.role === 'tool') return `[tool ${e.name ?? '?'}: ${e.status ?? '?'}]`;
    return `${e.role}: ${e.content ?? ''}`;
  });
  let text = lines.join('\n');
  if (text.length > maxChars) text = `[... earlier part omitted ...]\n${text.slice(-maxChars)}`;
  return text;
}

export function summaryUserPrompt(transcript: readonly TranscriptEntry[], meta: { durationSeconds: number | null; endedReason: string | null }): string {
  return (
    `Call length: ${meta.durationSeconds ?? 0} seconds. Ended because: ${meta.endedReason ?? 'unknown'}.\n` +
    `Transcript:\n${transcriptAsText(transcript)}\n\nSummary (3-5 sentences):`
  );
}

export function splitSentences(text: string): string[] {
  return (text.replace(/\s+/g, ' ').trim().match(/[^.!?]+(?:[.!?]+["')\]]*|$)/g) ?? []).map((s) => s.trim()).filter(Boolean);
}

/** Normalise an LLM answer: one paragraph, at most 5 sentences. */
export function cleanSummary(text: string): string | null {
  const sentences = splitSentences(text.replace(/^\s*(summary\s*:)\s*/i, ''));
  if (sentences.length === 0) return null;
  return sentences.slice(0, 5).join(' ');
}

const ENDINGS: Record<string, string> = {
  user_hangup: 'the caller hung up',
  agent_hangup: 'the agent ended the call',
  silence_timeout: 'the caller stayed silent',
  max_duration: 'it reached the maximum call duration',
  voicemail: 'it reached voicemail',
  transferred: 'it was transferred',
  pipeline_error: 'of an internal error',
  cancelled: 'it was cancelled',
};

const quote = (s: string, max = 160) => {
  // Inner sentence ends become commas so the summary's sentence count stays what this function decides.
  const t = s.replace(/\s+/g, ' ').trim().replace(/[.!?]+$/, '').replace(/[.!?]+(?=\s)/g, ',');
  return `"${t.length > max ? `${t.slice(0, max - 1)}…` : t}"`;
};

export function extractiveSummary(
  transcript: readonly TranscriptEntry[],
  meta: { durationSeconds: number | null; endedReason: string | null },
): string {
  const user = transcript.filter((e) => e.role === 'user' && e.content?.trim());
  const agent = transcript.filter((e) => e.role === 'assistant' && e.content?.trim());
  const tools = [...new Set(transcript.filter((e) => e.role === 'tool' && e.name).map((e) => e.name!))];
  const seconds = Math.round(meta.durationSeconds ?? 0);
  const ending = ENDINGS[meta.endedReason ?? ''] ?? 'for an unrecorded reason';
  const sentences = [
    `The call lasted ${seconds} second${seconds === 1 ? '' : 's'} with ${user.length} caller turn${user.length === 1 ? '' : 's'} and ${agent.length} agent turn${agent.length === 1 ? '' : 's'}.`,
  ];
  if (user.length === 0) sentences.push('The caller did not say anything that was transcribed.');
  else {
    sentences.push(`The caller opened with ${quote(user[0]!.content!)}.`);
    if (user.length > 1) sentences.push(`The caller's last words were ${quote(user[user.length - 1]!.content!)}.`);
  }
  if (tools.length) sentences.push(`The agent used ${tools.join(', ')} during the call.`);
  else if (agent.length) sentences.push(`The agent's last words were ${quote(agent[agent.length - 1]!.content!)}.`);
  sentences.push(`The call ended because ${ending}.`);
  return sentences.slice(0, 5).join(' ');
}
