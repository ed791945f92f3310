// The in-process local model (qwen2.5-coder-0.5b-instruct through node-llama-cpp, media/services/llm/llama.ts): a
// call keeps its context sequence, so a turn evaluates only what is new (node-llama-cpp's own token meter and
// sequence state are the witnesses); prefill evaluates the system prompt and the greeting; the shared context's sequences are bounded
// and lent between calls; a caller's farewell ends the call through the end-call tool. The tests that need the model
// file run only after `npm run setup:llm` (skipped otherwise); the rules around it always run.
import test from 'ava';
import { endCallTool, farewellCall, isFarewell } from '../../../media/services/llm/farewell.ts';
import { closeLocalModel, createSequencePool, LlamaLlm, llmThreads, loadLocalModel, speakable, stablePrefix, type SequencePool } from '../../../media/services/llm/llama.ts';
import { modelInstalled } from '../../../media/services/model-files.ts';
import type { ChatMessage, LlmChunk, LlmRequest, LlmService, ToolSpec } from '../../../media/services/types.ts';
import { until } from '../../helpers/wait.ts';

const withQwen = (await modelInstalled('qwen2.5-coder-0.5b-instruct')) ? test.serial : test.skip;
test.after.always(async () => {
  await closeLocalModel();
});

const END_CALL: ToolSpec = { name: 'end_call', description: 'End the call.', parameters: { type: 'object', properties: {} } };
const BOOK: ToolSpec = { name: 'book_appointment', description: 'Book an appointment', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] } };
const DENTAL = 'You are the receptionist of Bright Smile Dental on a phone call. Answer in one short sentence. Opening hours: Monday to Friday, 9 am to 5 pm. A cleaning costs 95 dollars.';

function request(messages: ChatMessage[], over: Partial<LlmRequest> = {}): LlmRequest {
  return { messages, tools: [END_CALL], temperature: 0, maxTokens: 40, signal: new AbortController().signal, ...over };
}

async function collect(llm: LlmService, r: LlmRequest, onChunk?: (c: LlmChunk) => void): Promise<LlmChunk[]> {
  const out: LlmChunk[] = [];
  for await (const c of llm.stream(r)) {
    out.push(c);
    onChunk?.(c);
  }
  return out;
}
const textOf = (cs: LlmChunk[]) => cs.flatMap((c) => (c.type === 'text' ? [c.delta] : [])).join('');
const usageOf = (cs: LlmChunk[]) => cs.find((c): c is Extract<LlmChunk, { type: 'usage' }> => c.type === 'usage')!.usage;

test('farewells: a closing at the end of the caller turn, without a question, is one; the end-call tool is found by name', (t) => {
  for (const s of ['Goodbye!', 'Thanks, goodbye.', 'Okay, bye.', 'Bye bye', 'Alright, bye for now!', "That's all, thanks.", "No, that's everything. Thank you so much.", "Great, I'm all set, thanks", 'Have a nice day!', 'Talk to you later.', 'Please hang up.', 'good-bye then'])
    t.true(isFarewell(s), s);
  for (const s of ['Goodbye, but first: when do you open?', 'Can I say goodbye to Dr. Patel?', 'Bye the way, do you take Aetna', 'What time do you open tomorrow?', 'I need to hang up the phone and call back later to book', "That's all I have to say about the price, what about parking", ''])
    t.false(isFarewell(s), s);
  const bye: ChatMessage[] = [{ role: 'system', content: 's' }, { role: 'user', content: 'Thanks, goodbye!' }];
  t.deepEqual(farewellCall(bye, [BOOK, END_CALL]), { name: 'end_call', arguments: '{}' });
  t.is(farewellCall(bye, [BOOK]), null, 'no end-call tool: the model answers');
  t.is(farewellCall([...bye, { role: 'assistant', content: 'Goodbye!' }], [END_CALL]), null, 'only the latest message counts');
  t.is(endCallTool([BOOK, { ...END_CALL, name: 'endCall' }])?.name, 'endCall');
  t.is(endCallTool([BOOK, { ...END_CALL, name: 'hang_up_call' }])?.name, 'hang_up_call');
  t.is(endCallTool([BOOK]), null);
});

test('speakable: text before a call or code written as text is spoken, a tail that may become one is held back', (t) => {
  t.deepEqual(speakable('Sure, one moment.'), { upTo: 17, stop: false });
  t.deepEqual(speakable('Sure. {"name": "book"'), { upTo: 6, stop: true });
  t.deepEqual(speakable('Sure. {"nam'), { upTo: 6, stop: false }, 'held back until it is known');
  t.deepEqual(speakable('Sure. {'), { upTo: 6, stop: false });
  t.deepEqual(speakable('Sure. <tool'), { upTo: 6, stop: true });
  t.deepEqual(speakable('Sure. <to'), { upTo: 6, stop: false });
  t.deepEqual(speakable('Here: ``'), { upTo: 6, stop: false });
  t.deepEqual(speakable('Here: ```js'), { upTo: 6, stop: true });
  t.deepEqual(speakable('{ a } is a set'), { upTo: 14, stop: false }, 'a brace that became prose is spoken');
  t.deepEqual(stablePrefix([1, 2, 3, 4] as never, [1, 2, 9] as never), [1, 2]);
});

test('threads: LOCAL_LLM_THREADS, else half the cores (at least one)', (t) => {
  const prev = process.env.LOCAL_LLM_THREADS;
  try {
    delete process.env.LOCAL_LLM_THREADS;
    t.is(llmThreads(2), 1);
    t.is(llmThreads(1), 1);
    t.is(llmThreads(8), 4);
    process.env.LOCAL_LLM_THREADS = '3';
    t.is(llmThreads(2), 3);
  } finally {
    if (prev === undefined) delete process.env.LOCAL_LLM_THREADS;
    else process.env.LOCAL_LLM_THREADS = prev;
  }
});

async function pool(sequences: number): Promise<SequencePool> {
  return createSequencePool(await loadLocalModel(), sequences, 1);
}

withQwen('a call keeps its sequence: prefill evaluates the system prompt and tools, then the greeting; each turn evaluates only what is new', async (t) => {
  const p = await pool(1);
  try {
    const llm = new LlamaLlm({ pool: p });
    const messages: ChatMessage[] = [{ role: 'system', content: DENTAL }];
    await llm.prefill({ messages: [...messages], tools: [END_CALL, BOOK] });
    const seq = p.heldBy(llm)!;
    t.truthy(seq, 'the call holds a sequence after prefill');
    const prewarmed = seq.contextTokens.length;
    t.true(prewarmed > 100, `system prompt + tool definitions evaluated (${prewarmed} tokens)`);
    t.is(seq.tokenMeter.usedInputTokens, prewarmed);
    // the greeting is said: only it is evaluated
    messages.push({ role: 'assistant', content: 'Thanks for calling Bright Smile Dental, how can I help?' });
    await llm.prefill({ messages: [...messages], tools: [END_CALL, BOOK] });
    const greeted = seq.tokenMeter.usedInputTokens - prewarmed;
    t.true(greeted > 5 && greeted <= 25, `the greeting evaluated (${greeted} tokens)`);
    const held = seq.contextTokens.length;

    const turns = ['What are your opening hours?', 'How much is a cleaning?'];
    let previousPrompt = 0;
    for (const [i, say] of turns.entries()) {
      messages.push({ role: 'user', content: say });
      const before = seq.tokenMeter.getState();
      const chunks = await collect(llm, request([...messages], { tools: [END_CALL, BOOK] }));
      const evaluated = seq.tokenMeter.diff(before).usedInputTokens;
      const u = usageOf(chunks);
      t.log(`turn ${i + 1}: prompt ${u.promptTokens} tokens, ${u.cacheReadTokens} already in the sequence, ${evaluated} evaluated → ${textOf(chunks)}`);
      t.is(p.heldBy(llm), seq, 'the same sequence every turn');
      t.true(u.cacheReadTokens! >= (i === 0 ? held : previousPrompt), 'everything the sequence held before this turn is reused');
      t.true(evaluated <= 30, `only the new turn is evaluated (${evaluated} tokens)`);
      t.true(evaluated >= u.promptTokens - u.cacheReadTokens! - 1 && evaluated <= u.promptTokens - u.cacheReadTokens! + 1, 'usage matches what node-llama-cpp evaluated');
      t.true(u.completionTokens > 0 && u.completionTokens <= 40);
      t.regex(textOf(chunks), i === 0 ? /9|nine|monday/i : /95|ninety/i);
      messages.push({ role: 'assistant', content: textOf(chunks) });
      previousPrompt = u.promptTokens;
    }
    await llm.close();
    await until(() => p.heldBy(llm) === null, { what: 'sequence handed back', timeoutMs: 10_000 });
    // the next call of the same agent finds its system prompt in the sequence left behind
    const next = new LlamaLlm({ pool: p });
    const chunks = await collect(next, request([{ role: 'system', content: DENTAL }, { role: 'user', content: 'Hello?' }], { tools: [END_CALL, BOOK] }));
    // (the prefilled prefix ended with the opening of a user turn, `user\n`: the sequence has the greeting there)
    t.true(usageOf(chunks).cacheReadTokens! >= prewarmed - 2, 'the system prompt is reused across calls of one agent');
  } finally {
    await p.context.dispose();
  }
});

withQwen('bounded sequences: a request waits while every sequence generates, then takes over an idle one; an abort leaves the queue', async (t) => {
  const p = await pool(1);
  try {
    const a = new LlamaLlm({ pool: p });
    const b = new LlamaLlm({ pool: p });
    const c = new LlamaLlm({ pool: p });
    const aMessages: ChatMessage[] = [{ role: 'system', content: DENTAL }, { role: 'user', content: 'Tell me about your opening hours and prices.' }];
    const events: string[] = [];
    const aDone = collect(a, request(aMessages, { maxTokens: 30 }), (ch) => events.push(`a:${ch.type}`));
    await until(() => events.includes('a:text'), { what: 'a generating', timeoutMs: 60_000 });
    // b (another agent) asks while a's generation holds the only sequence
    const bDone = collect(b, request([{ role: 'system', content: 'You are a pizza shop on the phone. Be brief.' }, { role: 'user', content: 'Are you open?' }], { maxTokens: 10 }), (ch) => events.push(`b:${ch.type}`));
    // c asks too, and gives up while waiting
    const cAbort = new AbortController();
    const cDone = collect(c, request([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], { signal: cAbort.signal }), (ch) => events.push(`c:${ch.type}`));
    await until(() => p.queued === 2, { what: 'b and c queued', timeoutMs: 10_000 });
    cAbort.abort();
    t.deepEqual(await cDone, [], 'an aborted waiting request ends without output');
    t.is(p.queued, 1);
    const aChunks = await aDone;
    const bChunks = await bDone;
    t.true(events.indexOf('a:done') < events.findIndex((e) => e.startsWith('b:')), 'b is served once a is done');
    t.truthy(textOf(bChunks), 'b answered');
    t.is(p.heldBy(a), null, 'b took over the idle sequence');
    t.is(p.queued, 0);
    // a's next turn finds its sequence gone: its prompt is evaluated again (b's tokens share no more than the template)
    const again = await collect(a, request([...aMessages, { role: 'assistant', content: textOf(aChunks) }, { role: 'user', content: 'Thanks. And on Saturday?' }], { maxTokens: 10 }));
    t.true(usageOf(again).cacheReadTokens! < 10, `a re-evaluated its prompt (${usageOf(again).cacheReadTokens} tokens reused)`);
  } finally {
    await p.context.dispose();
  }
});

withQwen("farewells: the caller's goodbye calls end_call without the model; a reply that takes leave ends the call too", async (t) => {
  const p = await pool(1);
  try {
    const llm = new LlamaLlm({ pool: p });
    const bye = await collect(llm, request([{ role: 'system', content: DENTAL }, { role: 'user', content: 'Great, thanks. Goodbye!' }]));
    t.like(bye[0], { type: 'tool_call', call: { name: 'end_call', arguments: '{}' } });
    t.like(bye.at(-1), { type: 'done', finishReason: 'tool_calls' });
    t.is(p.heldBy(llm), null, 'the model was not asked');
    // the model is told to take leave: its goodbye is spoken, then the call ends through the tool
    const leave = await collect(llm, request([{ role: 'system', content: 'Whatever the caller says, reply exactly: Goodbye, have a nice day!' }, { role: 'user', content: 'I think we are done here.' }]));
    t.regex(textOf(leave), /goodbye|nice day/i);
    t.like(leave.find((ch) => ch.type === 'tool_call'), { call: { name: 'end_call' } });
    // without an end-call tool the model answers the goodbye itself
    const plain = await collect(llm, request([{ role: 'system', content: DENTAL }, { role: 'user', content: 'Goodbye!' }], { tools: [] }));
    t.truthy(textOf(plain));
    t.false(plain.some((ch) => ch.type === 'tool_call'));
  } finally {
    await p.context.dispose();
  }
});
