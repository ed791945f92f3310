// The `local` LLM's model qwen2.5-coder-0.5b-instruct (node-llama-cpp in process, `npm run setup:llm`) on a dental
// front-desk agent, through the engine's own interface (media/services/llm/llama.ts) as a call uses it: prefill at
// call start, then 10 scripted caller turns in two calls, each call ending with a goodbye.
//
// Latency: first token (first text or tool call) after the request, per turn, with the call's sequence kept between
// turns (what a call does) against the same turns with the sequence cleared before each request (the whole prompt
// evaluated every turn: what the engine did before), plus the prefill (system prompt + tools) at call start.
// Replies: per sampling setting, temperature and seed, each turn is scored on topic (spoken text, no code or
// markup, no talk of XML, functions or being an AI, at most 60 words), uses the prompt's facts (the turn's expected
// fact), and ends the call (end_call on the goodbyes, never before); and the length of the replies in words.
//
//   node --import tsx bench/local-llm.ts                          SEEDS=3 TEMPS=1,1.5,0 SAMPLING=qwen,none,minp
//   LATENCY_ONLY=1 / REPLIES_ONLY=1; LOCAL_LLM_THREADS=2 to compare threads
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { modelInstalled } from '../media/services/model-files.ts';
import { closeLocalModel, createSequencePool, DEFAULT_SAMPLING, LlamaLlm, llmThreads, loadLocalModel, type Sampling, type SequencePool } from '../media/services/llm/llama.ts';
import type { ChatMessage, ToolSpec } from '../media/services/types.ts';
import { pct } from './_stats.ts';

const log = (m: string) => process.stdout.write(`${m}\n`);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

if (!(await modelInstalled('qwen2.5-coder-0.5b-instruct'))) {
  log('qwen2.5-coder-0.5b-instruct is not installed (npm run setup:llm): nothing to measure');
  process.exit(0);
}

export const SYSTEM_PROMPT = [
  'You are Sam, the receptionist of Bright Smile Dental, answering the phone. Speak in one or two short sentences.',
  'Opening hours: Monday to Friday 8 am to 6 pm, Saturday 9 am to 1 pm, closed on Sunday.',
  'Address: 42 Elm Street, Springfield. Free parking behind the building.',
  'Dentists: Dr. Patel and Dr. Gomez. New patients are welcome.',
  'A cleaning costs 95 dollars and takes 45 minutes. To book, ask for the caller’s name and a preferred time.',
  'Insurance: most plans are accepted, including Delta Dental and Aetna.',
].join('\n');

const TOOLS: ToolSpec[] = [{ name: 'end_call', description: 'End the call. Use it when the conversation is complete or the caller wants to hang up.', parameters: { type: 'object', properties: {} } }];

interface Turn {
  say: string;
  /** the fact the reply should use; absent on a goodbye */
  fact?: RegExp;
  goodbye?: boolean;
}
const CALLS: Turn[][] = [
  [
    { say: 'Hi, what time do you open tomorrow morning?', fact: /\b(8|eight|9|nine)\b/i },
    { say: 'Can I book a cleaning on Tuesday?', fact: /\b(name|time|when)\b/i }, // the prompt: ask for a name and a time
    { say: 'How much does a cleaning cost?', fact: /\b(95|ninety[- ]five)\b/i },
    { say: 'Where are you located?', fact: /\b(42|forty[- ]two|elm)\b/i },
    { say: 'Great, thanks. Goodbye!', goodbye: true },
  ],
  [
    { say: 'Hello, do you take Delta Dental insurance?', fact: /\b(yes|delta)\b/i },
    { say: 'Are you open on Sundays?', fact: /\b(closed|no|not)\b/i },
    { say: 'Which dentists work there?', fact: /\b(patel|gomez)\b/i },
    { say: 'Is there parking?', fact: /\b(free|behind|parking)\b/i },
    // no farewell word: the model's own reply has to take leave
    { say: "No, that's everything. Thank you so much.", goodbye: true },
  ],
];

const OFF_TOPIC = /[<>{}`]|\bxml\b|\bfunctions?\b|\bjson\b|\bas an ai\b|language model|\bcode\b|\btool_call\b/i;

interface TurnResult {
  firstMs: number;
  /** CPU time of this process (llama.cpp's threads, mostly) from the request to the first token: what the wait would be on an idle machine with one thread */
  firstCpuMs: number;
  /** until the reply's first 26 characters (the Piper voice's first piece): when the first audio can start */
  pieceMs: number;
  pieceCpuMs: number;
  totalMs: number;
  totalCpuMs: number;
  text: string;
  calls: string[];
  promptTokens: number;
  reused: number;
}

const cpuSince = (c0: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(c0);
  return (u.user + u.system) / 1000;
};

async function runTurn(llm: LlamaLlm, messages: ChatMessage[], temperature: number): Promise<TurnResult> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let firstMs = NaN;
  let firstCpuMs = NaN;
  let pieceMs = NaN;
  let pieceCpuMs = NaN;
  let text = '';
  const calls: string[] = [];
  let promptTokens = 0;
  let reused = 0;
  for await (const c of llm.stream({ messages, tools: TOOLS, temperature, maxTokens: 251, signal: new AbortController().signal })) {
    if ((c.type === 'text' && c.delta) || c.type === 'tool_call')
      if (Number.isNaN(firstMs)) {
        firstMs = performance.now() - t0;
        firstCpuMs = cpuSince(c0);
      }
    if (c.type === 'text') text += c.delta;
    if (c.type === 'text' && text.length >= 26 && Number.isNaN(pieceMs)) {
      pieceMs = performance.now() - t0;
      pieceCpuMs = cpuSince(c0);
    }
    if (c.type === 'tool_call') calls.push(c.call.name);
    if (c.type === 'usage') {
      promptTokens = c.usage.promptTokens;
      reused = c.usage.cacheReadTokens ?? 0;
    }
  }
  const totalCpuMs = cpuSince(c0);
  return { firstMs, firstCpuMs, pieceMs: Number.isNaN(pieceMs) ? performance.now() - t0 : pieceMs, pieceCpuMs: Number.isNaN(pieceCpuMs) ? totalCpuMs : pieceCpuMs, totalCpuMs, totalMs: performance.now() - t0, text: text.trim(), calls, promptTokens, reused };
}

/** One call: prefill, then its turns with the model's replies in the history. `cold`: clear the sequence first each turn. */
async function runCall(pool: SequencePool, turns: Turn[], opts: { temperature: number; sampling: Sampling; cold?: boolean; farewell?: boolean }) {
  const llm = new LlamaLlm({ pool, sampling: opts.sampling, ...(opts.farewell === false ? { farewell: false } : {}) });
  const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }];
  const p0 = performance.now();
  if (!opts.cold) await llm.prefill({ messages: [...messages], tools: TOOLS });
  const prefillMs = performance.now() - p0;
  const results: Array<TurnResult & { turn: Turn }> = [];
  for (const turn of turns) {
    messages.push({ role: 'user', content: turn.say });
    if (opts.cold) await pool.heldBy(llm)?.clearHistory();
    const r = await runTurn(llm, [...messages], opts.temperature);
    results.push({ ...r, turn });
    messages.push({ role: 'assistant', content: r.text, ...(r.calls.length ? { toolCalls: r.calls.map((name, i) => ({ id: `c${results.length}_${i}`, name, arguments: '{}' })) } : {}) });
    for (const [i, name] of r.calls.entries()) messages.push({ role: 'tool', toolCallId: `c${results.length}_${i}`, name, content: 'The call is ending.' });
    if (r.calls.includes('end_call')) break;
  }
  await llm.close();
  return { prefillMs, results };
}

function score(results: Array<TurnResult & { turn: Turn }>, turns: Turn[]) {
  let onTopic = 0;
  let facts = 0;
  let factTurns = 0;
  let ended = 0;
  let earlyEnd = 0;
  const words: number[] = [];
  for (const [i, t] of turns.entries()) {
    const r = results[i];
    if (!r) continue; // the call ended before this turn
    const endedHere = r.calls.includes('end_call');
    if (t.goodbye) {
      if (endedHere) ended++;
      if (endedHere || (r.text && !OFF_TOPIC.test(r.text))) onTopic++;
      continue;
    }
    factTurns++;
    if (endedHere) earlyEnd++;
    const n = r.text.split(/\s+/).filter(Boolean).length;
    words.push(n);
    if (r.text && !OFF_TOPIC.test(r.text) && n <= 60) onTopic++;
    if (t.fact!.test(r.text)) facts++;
  }
  return { onTopic, facts, factTurns, ended, earlyEnd, words };
}

const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
const t0 = performance.now();
const m = await loadLocalModel();
log(`${new Date().toISOString()} · commit ${commit} · ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}) · LLM threads ${llmThreads()} · model load ${Math.round(performance.now() - t0)} ms · load average ${load()}`);
const pool = await createSequencePool(m, 2);
const turnsAll = CALLS.flat();

if (!process.env.REPLIES_ONLY) {
  const ROUNDS = Number(process.env.ROUNDS ?? 2);
  const sampling = { ...DEFAULT_SAMPLING, seed: 1 };
  for (const cold of [true, false]) {
    // a fresh context: the first call's prefill evaluates the system prompt, later calls find it in their sequence
    const pool = await createSequencePool(m, 2);
    const first: number[] = [];
    const firstCpu: number[] = [];
    const piece: number[] = [];
    const total: number[] = [];
    const pieceCpu: number[] = [];
    const totalCpu: number[] = [];
    const firstOfCall: number[] = [];
    const prefill: number[] = [];
    let prompt = 0;
    let evaluated = 0;
    for (let round = 0; round < ROUNDS; round++)
      for (const turns of CALLS) {
        const { prefillMs, results } = await runCall(pool, turns, { temperature: 0, sampling, cold });
        if (!cold) prefill.push(prefillMs);
        // the goodbye turn is answered without the model (farewell.ts): not a model latency
        const modelTurns = results.filter((r) => !r.turn.goodbye);
        first.push(...modelTurns.map((r) => r.firstMs));
        firstCpu.push(...modelTurns.map((r) => r.firstCpuMs));
        piece.push(...modelTurns.map((r) => r.pieceMs));
        total.push(...modelTurns.map((r) => r.totalMs));
        pieceCpu.push(...modelTurns.map((r) => r.pieceCpuMs));
        totalCpu.push(...modelTurns.map((r) => r.totalCpuMs));
        if (modelTurns[0]) firstOfCall.push(modelTurns[0].firstMs);
        for (const r of modelTurns) {
          prompt += r.promptTokens;
          evaluated += r.promptTokens - r.reused;
        }
      }
    log(
      `${cold ? 'whole prompt every turn' : 'sequence kept + prefill'}: first token p50 ${Math.round(pct(first, 50))} ms, p90 ${Math.round(pct(first, 90))} ms, max ${Math.round(Math.max(...first))} ms (${first.length} turns; CPU time to it p50 ${Math.round(pct(firstCpu, 50))} ms); first 26 characters p50 ${Math.round(pct(piece, 50))} ms (CPU ${Math.round(pct(pieceCpu, 50))} ms), whole reply p50 ${Math.round(pct(total, 50))} ms (CPU ${Math.round(pct(totalCpu, 50))} ms); first turn of a call p50 ${Math.round(pct(firstOfCall, 50))} ms` +
        `${prefill.length ? `; prefill ${Math.round(prefill[0]!)} ms for the first call (system prompt + tools evaluated), p50 ${Math.round(pct(prefill.slice(1), 50))} ms for the next ones (the prompt left in a sequence by the previous call)` : ''}; prompt tokens evaluated ${evaluated} of ${prompt} · load average ${load()}`,
    );
    await pool.context.dispose();
  }
}

if (!process.env.LATENCY_ONLY) {
  const SAMPLINGS: Record<string, Sampling> = {
    qwen: DEFAULT_SAMPLING,
    none: {},
    minp: { minP: 0.1 },
    topk40: { topK: 40, topP: 0.9, repeatPenalty: 1.1 },
    qwenminp: { ...DEFAULT_SAMPLING, minP: 0.05 },
  };
  const names = (process.env.SAMPLING ?? 'qwen,none,minp').split(',').filter((n) => n in SAMPLINGS);
  const temps = (process.env.TEMPS ?? '1,1.5,0').split(',').map(Number);
  const seeds = Number(process.env.SEEDS ?? 3);
  const farewell = process.env.FAREWELL !== '0';
  log(`\nreplies: ${turnsAll.length} turns per run (${turnsAll.filter((t) => !t.goodbye).length} with a fact, ${turnsAll.filter((t) => t.goodbye).length} goodbyes), ${seeds} seeds; caller farewell rule ${farewell ? 'on' : 'off'}`);
  log('| sampling | temperature | on topic | uses the fact | ends the call | ended early | words per reply mean / max | first token p50 ms |');
  log('|---|---|---|---|---|---|---|---|');
  for (const name of names)
    for (const temperature of temps) {
      const tot = { onTopic: 0, facts: 0, factTurns: 0, ended: 0, earlyEnd: 0, turns: 0, goodbyes: 0 };
      const first: number[] = [];
      const words: number[] = [];
      for (let seed = 1; seed <= (temperature === 0 ? 1 : seeds); seed++)
        for (const turns of CALLS) {
          const { results } = await runCall(pool, turns, { temperature, sampling: { ...SAMPLINGS[name], seed }, farewell });
          const s = score(results, turns);
          tot.onTopic += s.onTopic;
          tot.facts += s.facts;
          tot.factTurns += s.factTurns;
          tot.ended += s.ended;
          tot.earlyEnd += s.earlyEnd;
          words.push(...s.words);
          tot.turns += turns.length;
          tot.goodbyes += turns.filter((t) => t.goodbye).length;
          first.push(...results.filter((r) => !r.turn.goodbye).map((r) => r.firstMs));
          if (process.env.SHOW) for (const r of results) log(`    ${name} t=${temperature} s=${seed} | ${r.turn.say} → ${JSON.stringify(r.text)}${r.calls.length ? ` [${r.calls.join(',')}]` : ''}`);
        }
      const pc = (a: number, b: number) => `${Math.round((100 * a) / Math.max(b, 1))} % (${a}/${b})`;
      log(`| ${name} ${JSON.stringify(SAMPLINGS[name])} | ${temperature} | ${pc(tot.onTopic, tot.turns)} | ${pc(tot.facts, tot.factTurns)} | ${pc(tot.ended, tot.goodbyes)} | ${tot.earlyEnd} | ${(words.reduce((a, b) => a + b, 0) / Math.max(words.length, 1)).toFixed(1)} / ${Math.max(0, ...words)} | ${Math.round(pct(first, 50))} |`);
    }
  log(`load average ${load()}`);
}
await closeLocalModel();
