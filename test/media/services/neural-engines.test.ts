// The neural `local` engines for real: Whisper tiny.en STT, the Piper voice, Qwen2.5 0.5B through node-llama-cpp;
// their model files' hash checks, and the fallbacks (PocketSphinx, eSpeak NG, the demo responder) when a model
// file is missing or corrupt. Tests that need a model file run only when scripts/setup.sh installed it (the LLM
// only after `npm run setup:llm`); they are reported as skipped otherwise.
import test from 'ava';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MODELS, ModelFileError, modelInstalled, verifiedModelFile } from '../../../media/services/model-files.ts';
import { createLocalStt } from '../../../media/services/stt/local.ts';
import { closeWhisper } from '../../../media/services/stt/whisper.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { closePiper, createPiperTts, leadPiece, splitClauses } from '../../../media/services/tts/piper.ts';
import { createLocalLlm } from '../../../media/services/llm/local.ts';
import { callInText, closeLocalModel, toHistory } from '../../../media/services/llm/llama.ts';
import { resample } from '../../../core/audio/resample.ts';
import { concatInt16, rms } from '../../../media/audio/pcm.ts';
import type { SttEvent } from '../../../media/services/types.ts';
import { tempDir } from '../../helpers/tmp.ts';
import { callerSpeech, synthesize } from '../../helpers/speech.ts';

const whisperInstalled = await modelInstalled('whisper-tiny.en');
const piperInstalled = await modelInstalled('piper-en_US-joe-medium');
const qwenInstalled = await modelInstalled('qwen2.5-coder-0.5b-instruct');
const withWhisper = whisperInstalled ? test.serial : test.skip;
const withPiper = piperInstalled ? test.serial : test.skip;
const withBoth = whisperInstalled && piperInstalled ? test.serial : test.skip;
const withQwen = qwenInstalled ? test.serial : test.skip;

const emptyDir = tempDir('models-empty-');
const corruptDir = tempDir('models-corrupt-');
test.before(async () => {
  // every model file present with the right size but wrong bytes
  for (const m of Object.values(MODELS))
    for (const f of m.files) {
      await mkdir(join(corruptDir, f.path, '..'), { recursive: true });
      await writeFile(join(corruptDir, f.path), Buffer.alloc(Math.min(f.bytes, 4096), 7));
    }
});
test.after.always(async () => {
  await closeWhisper();
  await closePiper();
  await closeLocalModel();
});

/** One utterance (200 ms of silence around it) in 20 ms frames, then finalize; the final transcript. */
async function hear(stt: ReturnType<typeof createLocalStt>, pcm16k: Int16Array, keyterms: string[] = []): Promise<string> {
  let resolveFinal: (t: string) => void = () => {};
  const final = new Promise<string>((ok) => (resolveFinal = ok));
  const timer = setTimeout(() => resolveFinal('(no final within 60 s)'), 60_000);
  const stream = await stt.open({
    languages: ['en'],
    keyterms,
    onEvent: (e: SttEvent) => {
      if (e.type === 'final') resolveFinal(e.text);
      else if (e.type === 'error') resolveFinal(`error: ${e.error.message}`);
    },
  });
  const silence = new Int16Array(3200);
  const all = concatInt16([silence, pcm16k, silence]);
  for (let o = 0; o < all.length; o += 320) stream.write(all.subarray(o, o + 320));
  stream.finalize();
  try {
    return (await final).toLowerCase();
  } finally {
    clearTimeout(timer);
    await stream.close();
  }
}

test('model files: a missing file and a file whose SHA-256 differs are refused before loading', async (t) => {
  const f = MODELS['whisper-tiny.en'].files[0]!;
  const missing = await t.throwsAsync(verifiedModelFile(f, emptyDir), { instanceOf: ModelFileError });
  t.is((missing as ModelFileError).reason, 'missing');
  t.regex(missing!.message, /run scripts\/setup\.sh/);
  const corrupt = await t.throwsAsync(verifiedModelFile(f, corruptDir), { instanceOf: ModelFileError });
  t.is((corrupt as ModelFileError).reason, 'hash-mismatch');
  t.regex(corrupt!.message, /refusing to load/);
  t.false(await modelInstalled('piper-en_US-joe-medium', corruptDir));
  // every model is pinned: exact package versions, wheel and file hashes
  for (const m of Object.values(MODELS)) {
    for (const w of m.wheels) {
      t.regex(w.version, /^\d+\.\d+\.\d+$/);
      t.regex(w.sha256, /^[0-9a-f]{64}$/);
    }
    for (const file of m.files) t.regex(file.sha256, /^[0-9a-f]{64}$/);
  }
});

withWhisper('Whisper STT: loads, says so, and transcribes an eSpeak sentence with its key words', async (t) => {
  const stt = createLocalStt('whisper-tiny.en', { greeting: 'Thanks for calling Bright Smile Dental.' });
  const text = await hear(stt, await callerSpeech('Can I see Doctor Patel on Friday morning'), ['Doctor Patel']);
  t.log(text);
  t.is(stt.model, 'whisper-tiny.en');
  for (const w of ['see', 'patel', 'friday', 'morning']) t.true(text.includes(w), `'${w}' in '${text}'`);
  const second = await hear(stt, await callerSpeech('I need to cancel my appointment for tomorrow'));
  t.log(second);
  for (const w of ['cancel', 'appointment', 'tomorrow']) t.true(second.includes(w), `'${w}' in '${second}'`);
});

test.serial('Whisper STT falls back to PocketSphinx when its model file is missing or corrupt, and says so', async (t) => {
  for (const dir of [emptyDir, corruptDir]) {
    const told: string[] = [];
    const stt = createLocalStt('whisper-tiny.en', { modelsDir: dir, corpus: ['I need to cancel my appointment for tomorrow'], onFallback: (m) => told.push(m) });
    const text = await hear(stt, await callerSpeech('I need to cancel my appointment for tomorrow'));
    t.log(text);
    t.is(stt.model, 'pocketsphinx');
    t.true(text.includes('cancel') || text.includes('appointment') || text.includes('tomorrow'), text);
    t.true(told.length <= 1); // reported once per process and reason
    if (told.length) t.regex(told[0]!, /Whisper cannot run .*using PocketSphinx/);
  }
});

test('Piper TTS: the first chunk of an utterance starts with a short lead piece, cut at a clause boundary, else before a phrase', (t) => {
  t.deepEqual(leadPiece('Hello! How can I help you today?'), ['Hello!', 'How can I help you today?'], 'a short first sentence is the lead piece');
  t.is(leadPiece('Sure, I can help with that.'), null, 'short enough already');
  t.is(leadPiece('It is 10.5 degrees today.'), null, 'a decimal point does not end a sentence');
  t.is(leadPiece('Goodbye!'), null, 'nothing after the sentence');
  t.is(leadPiece('Mr. Smith will call you back.'), null, 'an abbreviation does not end a sentence');
  t.deepEqual(leadPiece('Thanks for calling Bright Smile Dental, how can I help you today?'), ['Thanks for calling,', 'Bright Smile Dental, how can I help you today?'], 'not inside the name');
  t.deepEqual(leadPiece('You said: can I see Doctor Patel on Friday morning.'), ['You said:', 'can I see Doctor Patel on Friday morning.']);
  t.deepEqual(leadPiece('Let me check the calendar for next Tuesday at three'), ['Let me check the calendar,', 'for next Tuesday at three'], 'before a phrase');
  t.deepEqual(leadPiece('I am sorry, I did not catch that, could you say it again?'), ['I am sorry,', 'I did not catch that, could you say it again?']);
  t.deepEqual(leadPiece('Your appointment for a teeth cleaning with Doctor Patel is booked for Friday'), ['Your appointment,', 'for a teeth cleaning with Doctor Patel is booked for Friday']);
  t.deepEqual(leadPiece('Let me see whether the doctor has any time left next week'), ['Let me see whether,', 'the doctor has any time left next week'], 'else at the last space, not after "the"');
  t.deepEqual(leadPiece('Please hold while I put you through to Doctor Patel'), ['Please hold,', 'while I put you through to Doctor Patel']);
  t.is(leadPiece('Supercalifragilisticexpialidociousness is a word, really.'), null, 'no word boundary early enough: not cut');
  t.is(leadPiece('See you at the clinic Friday.'), null, 'a short sentence is not cut inside its clause');
  t.deepEqual(leadPiece('I will put you through to Doctor Anna Patel, one moment'), ['I will put you through,', 'to Doctor Anna Patel, one moment'], 'never after "to", never inside a name');
});

withPiper('Piper TTS: non-silent 24 kHz speech of plausible length, in order, clause by clause', async (t) => {
  const tts = createLocalTts({ languages: ['en'] });
  t.is(tts.model, 'piper');
  t.is(tts.voice, 'en_US-joe-medium');
  const parts: Int16Array[] = [];
  const text = 'Thanks for calling Bright Smile Dental, this is Joe speaking, and I can help you book, move or cancel an appointment today.';
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  const pcm = concatInt16(parts);
  const seconds = pcm.length / 24000; // 22 words: ~5–9 s at a natural pace
  t.true(seconds > 4 && seconds < 12, `${seconds} s`);
  t.true(rms(pcm) > 500, 'not silent');
  t.true(splitClauses(text).length >= 2, 'a long sentence is split at its clauses');
  t.true(parts.length >= 2, `${parts.length} chunks`);
  // an abort stops it: nothing after the piece in flight (the whole text is ~40 s of speech)
  const ac = new AbortController();
  let got = 0;
  for await (const p of tts.synthesize('One, two, three, four. '.repeat(20), ac.signal)) {
    got += p.length;
    ac.abort();
  }
  t.true(got / 24000 < 8, `${got / 24000} s after abort`);
});

test.serial('Piper TTS falls back to eSpeak NG when its model files are missing or corrupt; non-English agents get eSpeak', async (t) => {
  for (const dir of [emptyDir, corruptDir]) {
    const told: string[] = [];
    const tts = createLocalTts({ languages: ['en'], modelsDir: dir, onFallback: (m) => told.push(m) });
    const pcm = await synthesize(tts, 'Hello, how can I help you?');
    t.true(rms(pcm) > 500 && pcm.length > 24000 * 0.8, 'eSpeak spoke it');
    t.is(tts.model, 'espeak-ng');
    t.is(tts.voice, 'en-us');
    if (told.length) t.regex(told[0]!, /Piper voice cannot run .*using eSpeak NG/);
  }
  t.is(createLocalTts({ languages: ['hi'] }).model, 'espeak-ng');
  t.is(createLocalTts({ languages: ['en'], voice: 'en-gb' }).model, 'espeak-ng');
  t.is(createLocalTts({ languages: ['en'], model: 'espeak-ng' }).model, 'espeak-ng');
});

withBoth('Piper without sampling noise speaks the same audio every time; with its noise, not', async (t) => {
  const same = createPiperTts({ noiseless: true });
  const a = await synthesize(same, 'Your appointment is on Tuesday.');
  const b = await synthesize(same, 'Your appointment is on Tuesday.');
  t.deepEqual(a, b);
  const noisy = createPiperTts();
  const c = await synthesize(noisy, 'Your appointment is on Tuesday.');
  const d = await synthesize(noisy, 'Your appointment is on Tuesday.');
  t.notDeepEqual(c, d, 'the voice samples its noise per synthesis');
});

withBoth('Piper speaks what Whisper hears back word for word (the two new engines round trip)', async (t) => {
  // without sampling noise: the same audio every run, so what Whisper hears does not vary between runs
  const tts = createPiperTts({ noiseless: true });
  const stt = createLocalStt('whisper-tiny.en');
  const text = await hear(stt, resample(await synthesize(tts, 'Can we move my appointment to next Tuesday at three?'), 24000, 16000));
  t.log(text);
  for (const w of ['move', 'appointment', 'tuesday', 'three']) t.true(text.includes(w) || (w === 'three' && text.includes('3')), `'${w}' in '${text}'`);
});

test('LLM: history mapping keeps tool results with their calls; a call written as text is recovered', (t) => {
  const h = toHistory([
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'book tuesday' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'book', arguments: '{"day":"tuesday"}' }] },
    { role: 'tool', toolCallId: 'c1', name: 'book', content: 'booked' },
  ]);
  t.like(h[2], { type: 'model', response: [{ type: 'functionCall', name: 'book', params: { day: 'tuesday' }, result: 'booked' }] });
  t.is(h.at(-1)!.type, 'model');
  const tools = [{ name: 'book_appointment', description: '', parameters: {} }];
  t.deepEqual(callInText('Sure.\n{"name": "book_appointment", "arguments": {"day": "Tuesday"}}', tools), { name: 'book_appointment', arguments: '{"day": "Tuesday"}' });
  t.is(callInText('{"name": "other_tool", "arguments": {}}', tools), null);
});

test.serial('LLM qwen model without its model file: the demo responder answers, and says so', async (t) => {
  const prev = process.env.LOCAL_MODELS_DIR;
  process.env.LOCAL_MODELS_DIR = emptyDir;
  try {
    const llm = createLocalLlm({}, 'qwen2.5-coder-0.5b-instruct');
    let text = '';
    for await (const c of llm.stream({ messages: [{ role: 'user', content: 'what is 2 plus 3' }], tools: [], temperature: 0, maxTokens: 50, signal: new AbortController().signal }))
      if (c.type === 'text') text += c.delta;
    t.is(llm.model, 'local-demo');
    t.regex(text, /5/);
  } finally {
    if (prev === undefined) delete process.env.LOCAL_MODELS_DIR;
    else process.env.LOCAL_MODELS_DIR = prev;
  }
});

withQwen('LLM qwen model: a relevant streamed reply from the system prompt', async (t) => {
  const llm = createLocalLlm({}, 'qwen2.5-coder-0.5b-instruct');
  const deltas: string[] = [];
  let done = '';
  for await (const c of llm.stream({
    messages: [
      { role: 'system', content: 'You are the receptionist of Bright Smile Dental on a phone call. Answer in one short sentence. Opening hours: Monday to Friday, 9 am to 5 pm.' },
      { role: 'user', content: 'What are your opening hours?' },
    ],
    tools: [],
    temperature: 0,
    maxTokens: 60,
    signal: new AbortController().signal,
  })) {
    if (c.type === 'text') deltas.push(c.delta);
    if (c.type === 'done') done = c.finishReason;
  }
  const text = deltas.join('');
  t.log(text);
  t.is(llm.model, 'qwen2.5-coder-0.5b-instruct');
  t.true(deltas.length > 1, 'streamed');
  t.regex(text, /monday|9|nine/i);
  t.truthy(done);
});
