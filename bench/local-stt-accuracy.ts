// Word accuracy of the `local` STT models on synthesized phone sentences, clean (16 kHz) and through the 8 kHz
// phone-line simulation (media/audio/phone-line.ts: 300–3400 Hz, µ-law), and the time from end of speech
// (finalize) to the final transcript. 32 clips: 20 eSpeak en-us, 6 en-us+klatt, 6 en-gb, each with 200 ms of
// silence around it, streamed in 20 ms frames as fast as they are written. Accuracy does not depend on machine
// load; the latency figures do (report them with the load average printed at the end).
//   node_modules/.bin/node --import tsx bench/local-stt-accuracy.ts [pocketsphinx|whisper-tiny.en ...]
import os from 'node:os';
import { createLocalStt, closeLocalStt } from '../media/services/stt/local.ts';
import { closeWhisper } from '../media/services/stt/whisper.ts';
import { createLocalTts } from '../media/services/tts/local.ts';
import { resample } from '../core/audio/resample.ts';
import { concatInt16 } from '../media/audio/pcm.ts';
import { phoneLine } from '../media/audio/phone-line.ts';
import type { SttEvent } from '../media/services/types.ts';
import { pct } from './_stats.ts';

const PROMPT = 'You are the receptionist of Bright Smile Dental. Help callers book, move or cancel appointments with Doctor Patel. We offer teeth cleaning, whitening, fillings and root canal treatment. We accept most insurance plans.';
const GREETING = 'Thanks for calling Bright Smile Dental. How can I help you today?';
const TERMS = ['Bright Smile Dental', 'Doctor Patel', 'teeth cleaning', 'whitening', 'root canal', 'insurance'];

const SENTENCES = [
  'hello i would like to book a teeth cleaning', 'can i see doctor patel on friday morning', 'i need to cancel my appointment for tomorrow',
  'do you accept my insurance', 'how much does whitening cost', 'i think i need a root canal', 'can we move it to next tuesday at three',
  'yes that works for me thank you', 'no i am busy on monday', 'what time do you open on saturday',
  'my name is sarah and my phone number is five five five one two three four', 'i have a question about my bill',
  'is there anything available this afternoon', 'could you send me a text message please', 'that is all thank you goodbye',
  'i would like to speak with doctor patel', 'my tooth hurts and i need help', 'can you repeat that please', 'sure the second of june is fine', 'okay bye',
  'hello what time is it right now', 'where is your office located', 'do you have parking near the clinic', 'i am calling about my daughter',
  'can i pay with a credit card', 'please call me back later today', 'what is the earliest slot next week', 'i lost my appointment card',
  'is the doctor in on wednesday', 'thank you very much for your help', 'could you spell that for me', 'i will be there at ten thirty',
];
const VOICES = [...Array<string>(20).fill('en-us'), ...Array<string>(6).fill('en-us+klatt'), ...Array<string>(6).fill('en-gb')];

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TENS: Record<string, string> = { '10': 'ten', '30': 'thirty', '2nd': 'second' };
const CONTRACTIONS: Record<string, string> = { "i'm": 'i am', "that's": 'that is', "it's": 'it is', "what's": 'what is', "i'll": 'i will', "i'd": 'i would', "okay.": 'okay', ok: 'okay' };

export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/(\d+):(\d+)/g, '$1 $2')
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .flatMap((w) => (CONTRACTIONS[w] ?? TENS[w] ?? (/^\d+$/.test(w) ? [...w].map((d) => DIGITS[Number(d)]!).join(' ') : w)).split(' '));
}

function wordErrors(ref: string[], hyp: string[]): number {
  const d = Array.from({ length: ref.length + 1 }, (_, i) => [i, ...new Array<number>(hyp.length).fill(0)]);
  for (let j = 1; j <= hyp.length; j++) d[0]![j] = j;
  for (let i = 1; i <= ref.length; i++)
    for (let j = 1; j <= hyp.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
  return d[ref.length]![hyp.length]!;
}

async function synth(text: string, voice: string): Promise<Int16Array> {
  const tts = createLocalTts({ languages: ['en'], model: 'espeak-ng', voice, wordsPerMinute: 150, binary: 'espeak-ng' });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  return resample(concatInt16(parts), 24000, 16000);
}

async function run(model: string, clips: Int16Array[]): Promise<{ accuracy: number; p50: number; p95: number; finals: string[] }> {
  const stt = createLocalStt(model, { corpus: [PROMPT, GREETING], greeting: GREETING });
  const finals: string[] = [];
  const lat: number[] = [];
  let resolve: ((t: string) => void) | null = null;
  const stream = await stt.open({ languages: ['en'], keyterms: TERMS, onEvent: (e: SttEvent) => e.type === 'final' && resolve?.(e.text) });
  if (stt.model !== model) throw new Error(`${model} did not load (${stt.model} ran instead)`);
  for (const clip of clips) {
    const all = concatInt16([new Int16Array(3200), clip, new Int16Array(3200)]);
    const got = new Promise<string>((ok) => {
      resolve = ok;
      setTimeout(() => ok(''), 30_000);
    });
    for (let o = 0; o < all.length; o += 320) stream.write(all.subarray(o, o + 320));
    const t0 = performance.now();
    stream.finalize();
    finals.push(await got);
    lat.push(performance.now() - t0);
  }
  await stream.close();
  let errors = 0;
  let total = 0;
  SENTENCES.forEach((s, i) => {
    const ref = words(s);
    errors += wordErrors(ref, words(finals[i] ?? ''));
    total += ref.length;
  });
  lat.sort((a, b) => a - b);
  return { accuracy: 1 - errors / total, p50: pct(lat, 50), p95: pct(lat, 95), finals };
}

const models = process.argv.slice(2).length ? process.argv.slice(2) : ['pocketsphinx', 'whisper-tiny.en'];
const clean = await Promise.all(SENTENCES.map((s, i) => synth(s, VOICES[i]!)));
const phone = clean.map((c) => phoneLine(c, 16000));
const seconds = clean.reduce((a, c) => a + c.length, 0) / 16000;
console.log(`${SENTENCES.length} clips, ${seconds.toFixed(1)} s of speech; ${os.availableParallelism()} cores`);
for (const model of models) {
  for (const [line, clips] of ([['16 kHz', clean], ['8 kHz phone line', phone]] as const).filter(([l]) => !process.env.LINE || l.startsWith(process.env.LINE))) {
    const r = await run(model, clips);
    console.log(`${model.padEnd(16)} ${line.padEnd(17)} word accuracy ${(r.accuracy * 100).toFixed(1)} %  end of speech → final p50 ${r.p50.toFixed(0)} ms, p95 ${r.p95.toFixed(0)} ms`);
    if (process.env.SHOW) r.finals.forEach((f, i) => console.log(`   ${SENTENCES[i]} → ${f}`));
  }
}
console.log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
await closeWhisper();
await closeLocalStt();
