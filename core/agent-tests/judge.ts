// The judge of an agent test (pure parts): the Structured Outputs schema `{verdicts: [{criterion, reason, passed}]}`
// for one test's criteria, the prompt, and the check of what the model returned. The criterion field is an enum of
// the test's criteria and the array holds exactly one item per criterion, so a schema-following model cannot drop or
// invent one; the answer is still checked here (and put in the test's order) because not every engine enforces
// every keyword.
import { z } from 'zod';
import type { EndedBy, TranscriptLine, Verdict } from './schemas.ts';

export const VERDICTS_SCHEMA_NAME = 'agent_test_verdicts';

/** The JSON Schema of the judge's answer for these criteria (OpenAI strict-mode compatible). */
export function verdictsSchema(criteria: readonly string[]): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      verdicts: {
        type: 'array',
        minItems: criteria.length,
        maxItems: criteria.length,
        items: {
          type: 'object',
          // the reason before the verdict: a model that writes in order states its evidence first (small models
          // judge more accurately so, docs/benchmarks.md "Local post-call analysis")
          properties: {
            criterion: { type: 'string', enum: [...new Set(criteria)] },
            reason: { type: 'string' },
            passed: { type: 'boolean' },
          },
          required: ['criterion', 'reason', 'passed'],
          additionalProperties: false,
        },
      },
    },
    required: ['verdicts'],
    additionalProperties: false,
  };
}

const ENDINGS: Record<EndedBy, string> = {
  caller: 'the caller hung up',
  agent: 'the agent hung up',
  max_turns: 'the caller reached its turn limit and hung up',
  time_limit: "the test's time limit cut the call",
};

export const JUDGE_SYSTEM_PROMPT = [
  'You evaluate a phone conversation between a voice agent (the system under test) and a simulated caller.',
  'For each criterion, decide whether the AGENT met it in this conversation, judging only from the transcript.',
  'A criterion passes only when the transcript shows it; when the transcript gives no evidence, it fails.',
  "The agent's lines are what the caller heard (speech recognition), so ignore small transcription errors.",
  'Give one verdict per criterion, in the order given, copying the criterion text exactly: first a one-sentence reason that points at what was said, then whether it passed.',
].join(' ');

export function judgeUserPrompt(o: { scenario: string; criteria: readonly string[]; transcript: readonly TranscriptLine[]; endedBy: EndedBy | null }): string {
  const lines = o.transcript.length
    ? o.transcript.map((l) => `${l.role === 'agent' ? 'Agent' : 'Caller'}: ${l.text}`).join('\n')
    : '(nothing was said)';
  return [
    `The caller's persona and goal:\n${o.scenario}`,
    `Transcript:\n${lines}`,
    o.endedBy ? `The conversation ended because ${ENDINGS[o.endedBy]}.` : '',
    `Criteria:\n${o.criteria.map((c, i) => `${i + 1}. ${c}`).join('\n')}`,
    // the answer's skeleton, one object per criterion (small models otherwise stop after the first)
    `Answer with this JSON, filling in passed and reason for each of the ${o.criteria.length} criteria:\n${JSON.stringify({ verdicts: o.criteria.map((criterion) => ({ criterion, reason: '<one sentence>', passed: '<true or false>' })) })}`,
  ].filter(Boolean).join('\n\n');
}

const answerSchema = z.object({
  verdicts: z.array(z.object({ criterion: z.string(), passed: z.boolean(), reason: z.string() })),
});

export class JudgeAnswerError extends Error {
  override readonly name = 'JudgeAnswerError';
}

/**
 * The verdicts an answer gives for these criteria, in the criteria's order; null where it gives none. Throws
 * JudgeAnswerError when the answer does not have the schema's shape at all.
 */
export function matchVerdicts(value: unknown, criteria: readonly string[]): Array<Verdict | null> {
  const parsed = answerSchema.safeParse(value);
  if (!parsed.success) throw new JudgeAnswerError(`the judge's answer does not match the verdicts schema: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const given = parsed.data.verdicts;
  const norm = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();
  const used = new Set<number>();
  const byText = criteria.map((criterion) => {
    const k = given.findIndex((v, j) => !used.has(j) && norm(v.criterion) === norm(criterion));
    if (k >= 0) used.add(k);
    return k;
  });
  return criteria.map((criterion, i) => {
    // by text (the model may reorder), else the verdict in this criterion's position when the count is right
    let k = byText[i]!;
    if (k < 0 && given.length === criteria.length && !used.has(i)) {
      k = i;
      used.add(i);
    }
    if (k < 0) return null;
    const v = given[k]!;
    return { criterion, passed: v.passed, reason: v.reason.trim().slice(0, 2000) };
  });
}

/** The verdicts, one per criterion in order; JudgeAnswerError when the answer misses one. */
export function checkVerdicts(value: unknown, criteria: readonly string[]): Verdict[] {
  return matchVerdicts(value, criteria).map((v, i) => {
    if (!v) throw new JudgeAnswerError(`the judge gave no verdict for criterion ${i + 1} ("${criteria[i]!.slice(0, 80)}")`);
    return v;
  });
}
