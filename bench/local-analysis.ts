// How good the `local` model's post-call analysis is: 10 scripted appointment-confirmation calls with known answers,
// analysed exactly as the post-call activity does (core/agent-config/analysis.ts prompt and answer schema, the
// in-process Qwen2.5-Coder-0.5B under its JSON-schema grammar, temperature 0). Reports how many answers validate,
// how many values are right per field, whether the pass/fail verdict matches, and the time per call (which depends
// on machine load: the load average is printed beside it).
//   node_modules/.bin/node --import tsx bench/local-analysis.ts
import os from 'node:os';
import { analysisMessages, answerSchema, checkAnswer, type AnalysisConfig } from '../core/agent-config/analysis.ts';
import { closeLocalModel, LlamaLlm } from '../media/services/llm/llama.ts';
import { closeSchemaContext } from '../media/services/llm/llama-schema.ts';
import { modelInstalled } from '../media/services/model-files.ts';

const SCHEMA = {
  type: 'object',
  properties: {
    confirmed: { type: 'boolean', description: 'Did the patient confirm the appointment?' },
    day: { type: 'string', enum: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'], description: 'The day the patient will come' },
    wants_callback: { type: 'boolean', description: 'Did the patient ask to be called back?' },
  },
  required: ['confirmed', 'wants_callback'],
  additionalProperties: false,
};
const ANALYSIS: AnalysisConfig = {
  structuredData: { schema: SCHEMA, prompt: null },
  successEvaluation: { rubric: 'pass_fail', prompt: 'The patient confirmed a day for the appointment.' },
  llm: null,
};
const AGENT_PROMPT = 'You are Ava from Bright Smile Dental. Call the patient to confirm their cleaning appointment this week and note the day.';

interface Case { turns: Array<[role: 'assistant' | 'user', text: string]>; truth: { confirmed: boolean; day?: string; wants_callback: boolean; passed: boolean } }
const opener: [role: 'assistant', text: string] = ['assistant', 'Hi, this is Ava from Bright Smile Dental, calling about your cleaning appointment this week. Does Tuesday still work?'];
const CASES: Case[] = [
  { turns: [opener, ['user', 'Yes, Tuesday is perfect.'], ['assistant', 'Great, see you Tuesday.']], truth: { confirmed: true, day: 'tuesday', wants_callback: false, passed: true } },
  { turns: [opener, ['user', 'Tuesday is bad. Can we do Thursday instead?'], ['assistant', 'Thursday works, you are booked.'], ['user', 'Thanks, Thursday then.']], truth: { confirmed: true, day: 'thursday', wants_callback: false, passed: true } },
  { turns: [opener, ['user', 'I am driving right now, please call me back later.'], ['assistant', 'Of course, we will call you back.']], truth: { confirmed: false, wants_callback: true, passed: false } },
  { turns: [opener, ['user', 'No, I want to cancel, I am moving away.'], ['assistant', 'Understood, I cancelled it.']], truth: { confirmed: false, wants_callback: false, passed: false } },
  { turns: [opener, ['user', 'Monday would be better for me.'], ['assistant', 'Monday at 10 is free. Shall I book it?'], ['user', 'Yes please, Monday at 10.']], truth: { confirmed: true, day: 'monday', wants_callback: false, passed: true } },
  { turns: [opener, ['user', 'Who is this? I did not book anything.'], ['assistant', 'Sorry for the confusion, I will check our records.'], ['user', 'Call me back when you know.']], truth: { confirmed: false, wants_callback: true, passed: false } },
  { turns: [opener, ['user', 'Friday please, Tuesday I work.'], ['assistant', 'Friday is booked for you.'], ['user', 'Perfect.']], truth: { confirmed: true, day: 'friday', wants_callback: false, passed: true } },
  { turns: [opener, ['user', 'Yes I will come on Tuesday, and can someone call me back about my bill?'], ['assistant', 'Yes, billing will call you. See you Tuesday.']], truth: { confirmed: true, day: 'tuesday', wants_callback: true, passed: true } },
  { turns: [opener, ['user', 'I am not sure yet. Maybe Wednesday, I have to check.'], ['assistant', 'No problem, let us know.']], truth: { confirmed: false, wants_callback: false, passed: false } },
  { turns: [opener, ['user', 'Wednesday works better. Book me for Wednesday.'], ['assistant', 'Done, Wednesday it is.']], truth: { confirmed: true, day: 'wednesday', wants_callback: false, passed: true } },
];

if (!(await modelInstalled('qwen2.5-coder-0.5b-instruct'))) {
  console.log('qwen2.5-coder-0.5b-instruct is not installed (npm run setup:llm): nothing to measure');
  process.exit(0);
}

const llm = new LlamaLlm();
await llm.prewarm();
const fields = { confirmed: 0, day: 0, wants_callback: 0, passed: 0 };
let valid = 0;
const times: number[] = [];
for (const [i, c] of CASES.entries()) {
  const transcript = c.turns.map(([role, content]) => ({ role, content }));
  const prompt = analysisMessages(ANALYSIS, { transcript, durationSeconds: 30, endedReason: 'user_hangup', agentPrompt: AGENT_PROMPT }, { transcriptChars: 12_000, agentPromptChars: 1500 });
  const started = performance.now();
  const answer = await llm.completeWithSchema({
    messages: [{ role: 'system', content: prompt.system }, { role: 'user', content: prompt.user }],
    schema: answerSchema(ANALYSIS), name: 'call_analysis', temperature: 0, maxTokens: 600, signal: new AbortController().signal,
  });
  times.push(performance.now() - started);
  const checked = checkAnswer(ANALYSIS, answer.value);
  if (!checked.ok) {
    console.log(`#${i + 1} invalid: ${checked.error}`);
    continue;
  }
  valid++;
  const d = checked.structuredData as { confirmed: boolean; day?: string; wants_callback: boolean };
  const v = checked.successEvaluation as { passed: boolean; reason: string };
  if (d.confirmed === c.truth.confirmed) fields.confirmed++;
  if ((d.day ?? null) === (c.truth.day ?? null)) fields.day++;
  if (d.wants_callback === c.truth.wants_callback) fields.wants_callback++;
  if (v.passed === c.truth.passed) fields.passed++;
  console.log(`#${i + 1} ${JSON.stringify(d)} passed=${v.passed} (truth ${JSON.stringify(c.truth)}) ${Math.round(times.at(-1)!)} ms`);
}
const n = CASES.length;
const sorted = [...times].sort((a, b) => a - b);
console.log(`\nvalid answers: ${valid}/${n}`);
console.log(`right values: confirmed ${fields.confirmed}/${n}, day ${fields.day}/${n}, wants_callback ${fields.wants_callback}/${n}, verdict ${fields.passed}/${n}`);
console.log(`time per call: median ${Math.round(sorted[Math.floor(n / 2)]!)} ms, max ${Math.round(sorted[n - 1]!)} ms (LOCAL_LLM_THREADS=${process.env.LOCAL_LLM_THREADS ?? 'default'})`);
console.log(`load average: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.availableParallelism()} cores`);
await closeSchemaContext();
await closeLocalModel();
