// Word accuracy of the `local` STT models on synthesized phone sentences, clean (16 kHz) and through the 8 kHz
// phone-line simulation (media/audio/phone-line.ts: 300–3400 Hz, µ-law), and the time from end of speech
// (finalize) to the final transcript. 32 clips: 20 eSpeak en-us, 6 en-us+klatt, 6 en-gb, each with 200 ms of
// silence around it, streamed in 20 ms frames as fast as they are written. Accuracy does not depend on machine
// load; the latency figures do (report them with the load average printed at the end).
// The paused set: the same sentences with a pause of 0.8–2 s after the middle word (inserted into the sentence
// said as one utterance), run two ways: one final for the whole turn (finalize at its end: the turn model keeps the pause
// inside the turn) and a final at each pause as well (finalize 600 ms into the pause: VAD silence alone ends the
// turn there; the finals joined, as the turn manager joins them). Besides accuracy it counts insertions (words the
// recogniser added) and, of those, repeated runs (words that repeat a run of three or more words said just before:
// the decoder's loop). PAUSED=0 skips the paused set.
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

/** Word errors (edit distance) and, of them, insertions (hypothesis words aligned to nothing). */
function wordErrors(ref: string[], hyp: string[]): { errors: number; insertions: number } {
  const d = Array.from({ length: ref.length + 1 }, (_, i) => [i, ...new Array<number>(hyp.length).fill(0)]);
  for (let j = 1; j <= hyp.length; j++) d[0]![j] = j;
  for (let i = 1; i <= ref.length; i++)
    for (let j = 1; j <= hyp.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
  let insertions = 0;
  for (let i = ref.length, j = hyp.length; i > 0 || j > 0; ) {
    if (i > 0 && j > 0 && d[i]![j] === d[i - 1]![j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1)) {
      i--;
      j--;
    } else if (j > 0 && d[i]![j] === d[i]![j - 1]! + 1) {
      insertions++;
      j--;
    } else i--;
  }
  return { errors: d[ref.length]![hyp.length]!, insertions };
}

/** Words that repeat a run of three or more words said right before them (a decoder loop's insertions). */
function repeatedRunWords(hyp: string[]): number {
  let n = 0;
  for (let i = 0; i < hyp.length; ) {
    let best = 0;
    for (let len = 3; i - len >= 0 && i + len <= hyp.length; len++) {
      let same = true;
      for (let k = 0; k < len && same; k++) same = hyp[i - len + k] === hyp[i + k];
      if (same) best = len;
    }
    if (best) {
      n += best;
      i += best;
    } else i++;
  }
  return n;
}

async function synth(text: string, voice: string): Promise<Int16Array> {
  const tts = createLocalTts({ languages: ['en'], model: 'espeak-ng', voice, wordsPerMinute: 150, binary: 'espeak-ng' });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  return resample(concatInt16(parts), 24000, 16000);
}

/** A clip and where the call finalizes it (sample offsets; the last one is the end of the clip). */
interface Clip {
  pcm: Int16Array;
  finalizeAt: number[];
}

async function run(model: string, clips: Clip[], refs: string[]): Promise<{ accuracy: number; insertions: number; repeated: number; words: number; p50: number; p95: number; finals: string[] }> {
  const stt = createLocalStt(model, { corpus: [PROMPT, GREETING], greeting: GREETING });
  const finals: string[] = [];
  const lat: number[] = [];
  let resolve: ((t: string) => void) | null = null;
  const stream = await stt.open({ languages: ['en'], keyterms: TERMS, onEvent: (e: SttEvent) => e.type === 'final' && resolve?.(e.text) });
  if (stt.model !== model) throw new Error(`${model} did not load (${stt.model} ran instead)`);
  for (const clip of clips) {
    const parts: string[] = [];
    let from = 0;
    for (const [k, at] of clip.finalizeAt.entries()) {
      const last = k === clip.finalizeAt.length - 1;
      const got = new Promise<string>((ok) => {
        resolve = ok;
        setTimeout(() => ok(''), last ? 120_000 : 60_000);
      });
      for (let o = from; o < at; o += 320) stream.write(clip.pcm.subarray(o, Math.min(at, o + 320)));
      from = at;
      const t0 = performance.now();
      stream.finalize();
      parts.push(await got);
      if (last) lat.push(performance.now() - t0);
    }
    finals.push(parts.filter(Boolean).join(' '));
  }
  await stream.close();
  let errors = 0;
  let insertions = 0;
  let repeated = 0;
  let total = 0;
  refs.forEach((s, i) => {
    const ref = words(s);
    const hyp = words(finals[i] ?? '');
    const e = wordErrors(ref, hyp);
    errors += e.errors;
    insertions += e.insertions;
    repeated += repeatedRunWords(hyp);
    total += ref.length;
  });
  lat.sort((a, b) => a - b);
  return { accuracy: 1 - errors / total, insertions, repeated, words: total, p50: pct(lat, 50), p95: pct(lat, 95), finals };
}

const PAUSES_MS = [800, 1200, 1500, 2000];
/** Speech of a synthesized part, without the silence the synthesizer put around it. */
function trim(pcm: Int16Array): Int16Array {
  const thr = 32768 * 0.01;
  let a = 0;
  let b = pcm.length;
  while (a < b && Math.abs(pcm[a]!) < thr) a++;
  while (b > a && Math.abs(pcm[b - 1]!) < thr) b--;
  return pcm.subarray(Math.max(0, a - 160), Math.min(pcm.length, b + 160));
}

const models = process.argv.slice(2).length ? process.argv.slice(2) : ['pocketsphinx', 'whisper-tiny.en'];
const pad = (pcm: Int16Array) => concatInt16([new Int16Array(3200), pcm, new Int16Array(3200)]);
const whole = (pcm: Int16Array): Clip => ({ pcm, finalizeAt: [pcm.length] });
const clean = await Promise.all(SENTENCES.map((s, i) => synth(s, VOICES[i]!)));
const sets: Array<{ name: string; line: string; clips: Clip[] }> = [
  { name: 'whole sentences', line: '16 kHz', clips: clean.map((c) => whole(pad(c))) },
  { name: 'whole sentences', line: '8 kHz phone line', clips: clean.map((c) => whole(pad(phoneLine(c, 16000)))) },
];
if (process.env.PAUSED !== '0') {
  // each sentence with 0.8–2 s of silence after its middle word: inside the sentence said as one utterance, at the
  // quietest 10 ms near where its first half, said alone, ends
  const halves = await Promise.all(
    SENTENCES.map(async (s, i) => {
      const w = s.split(' ');
      const first = trim(await synth(w.slice(0, Math.max(1, Math.floor(w.length / 2))).join(' '), VOICES[i]!));
      const whole = trim(clean[i]!);
      const near = first.length;
      let cut = near;
      let quietest = Infinity;
      for (let o = Math.max(0, near - 2400); o + 160 <= Math.min(whole.length, near + 2400); o += 160) {
        let e = 0;
        for (let k = o; k < o + 160; k++) e += whole[k]! * whole[k]!;
        if (e < quietest) {
          quietest = e;
          cut = o + 80;
        }
      }
      return { a: whole.subarray(0, cut), b: whole.subarray(cut), pause: PAUSES_MS[i % PAUSES_MS.length]! };
    }),
  );
  for (const line of ['16 kHz', '8 kHz phone line'] as const) {
    const pcms = halves.map((h) => {
      const lead = 3200;
      const pcm = concatInt16([new Int16Array(lead), h.a, new Int16Array((h.pause / 1000) * 16000), h.b, new Int16Array(3200)]);
      return { pcm: line === '16 kHz' ? pcm : phoneLine(pcm, 16000), pauseAt: lead + h.a.length };
    });
    sets.push({ name: 'paused, one final per turn', line, clips: pcms.map((p) => whole(p.pcm)) });
    sets.push({ name: 'paused, a final at the pause too', line, clips: pcms.map((p) => ({ pcm: p.pcm, finalizeAt: [p.pauseAt + 0.6 * 16000, p.pcm.length] })) });
  }
}
const seconds = clean.reduce((a, c) => a + c.length, 0) / 16000;
console.log(`${SENTENCES.length} clips, ${seconds.toFixed(1)} s of speech; ${os.availableParallelism()} cores`);
for (const model of models) {
  // LINE=16|8 keeps one line, SETS=whole|paused one kind of set
  for (const set of sets.filter((x) => (!process.env.LINE || x.line.startsWith(process.env.LINE)) && (!process.env.SETS || x.name.startsWith(process.env.SETS)))) {
    const r = await run(model, set.clips, SENTENCES);
    console.log(
      `${model.padEnd(16)} ${set.line.padEnd(17)} ${set.name.padEnd(33)} word accuracy ${(r.accuracy * 100).toFixed(1)} %, insertions ${r.insertions} (${r.repeated} in repeated runs) of ${r.words} words  end of speech → final p50 ${r.p50.toFixed(0)} ms, p95 ${r.p95.toFixed(0)} ms`,
    );
    if (process.env.SHOW) r.finals.forEach((f, i) => console.log(`   ${SENTENCES[i]} → ${f}`));
  }
}
console.log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
await closeWhisper();
await closeLocalStt();
