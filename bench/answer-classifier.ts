// How well answer supervision tells who picked up, from what the recogniser hears (media/session/answer-supervisor.ts:
// the rules used where the carrier has no AMD): 36 synthesized greetings — 12 people, 12 mailboxes, 12 phone menus —
// spoken by eSpeak (en-us, en-us+klatt, en-gb), sent through the 8 kHz phone-line simulation (300–3400 Hz, µ-law),
// recognised by a `local` model, then judged by the supervisor's rules applied to the whole greeting: its phrases
// (classifyGreeting), else ≥ 9 words or a greeting longer than 4 s → voicemail, else a person. The same rules on the
// scripts' own text (no recogniser) are the baseline. Each mailbox greeting is followed by a beep, which the beep
// detector (media/audio/beep.ts) must find after the phone line. Accuracy does not depend on machine load.
//   node_modules/.bin/node --import tsx bench/answer-classifier.ts [whisper-tiny.en|pocketsphinx ...]
import os from 'node:os';
import { resample } from '../core/audio/resample.ts';
import { BeepDetector } from '../media/audio/beep.ts';
import { concatInt16 } from '../media/audio/pcm.ts';
import { phoneLine } from '../media/audio/phone-line.ts';
import { closeLocalStt, createLocalStt } from '../media/services/stt/local.ts';
import { closeWhisper } from '../media/services/stt/whisper.ts';
import { createLocalTts } from '../media/services/tts/local.ts';
import type { SttEvent } from '../media/services/types.ts';
import { classifyGreeting, type Answer } from '../media/session/answer-supervisor.ts';

const GREETINGS: Array<[Answer, string]> = [
  ['human', 'hello'], ['human', 'hello who is this'], ['human', 'yes speaking'], ['human', 'hi this is sam'],
  ['human', 'hello, this is maria, who is calling please'], ['human', 'yeah hello'], ['human', 'good morning, dental office, how can I help'],
  ['human', 'hello, can you hear me'], ['human', 'this is john'], ['human', 'hi, sorry, I was driving, who is it'], ['human', 'hello?'],
  ['human', 'speaking, what is this about'],
  ['voicemail', 'Hi, you have reached John Smith. Please leave a message after the tone.'],
  ['voicemail', 'The person you are calling is not available. Please record your message after the tone.'],
  ['voicemail', 'Hey, it is Ada. I can not take your call right now, leave me a message and I will get back to you.'],
  ['voicemail', 'You have reached the voicemail of Doctor Patel. Please leave your name and number.'],
  ['voicemail', 'Sorry I missed your call. Leave a message.'],
  ['voicemail', 'The mailbox of five five five, one two three four, is not available. At the tone, please record your message.'],
  ['voicemail', 'Hello, you have reached Bright Smile Dental. Our office is closed. Please leave a message and we will call you back tomorrow.'],
  ['voicemail', 'Hi, this is Mike. I am away from the phone at the moment, so please leave a short message.'],
  ['voicemail', 'Thank you for calling. No one is available to take your call. Please leave a message after the beep.'],
  ['voicemail', 'This is Sarah, leave a message.'],
  ['voicemail', 'Your call has been forwarded to an automatic voice message system. The person is not available.'],
  ['voicemail', 'Hi there, you have reached the Johnsons. We are not home right now, so leave us your number and we will call back.'],
  ['ivr', 'Thank you for calling Acme. For sales, press one. For support, press two.'],
  ['ivr', 'Please listen carefully, as our menu options have changed.'],
  ['ivr', 'Welcome to City Bank. To check your balance, press one. To speak with a representative, press zero.'],
  ['ivr', 'For appointments press two. For billing press three. To hear these options again press nine.'],
  ['ivr', 'Thank you for calling. Your call is important to us. Please stay on the line for the next available agent.'],
  ['ivr', 'If you know the extension of the person you are trying to reach, you may dial it at any time.'],
  ['ivr', 'Para español, oprima el nueve. For English, press one.'],
  ['ivr', 'Main menu. Press one for pharmacy, press two for the clinic.'],
  ['ivr', 'Welcome. To continue in English, press one.'],
  ['ivr', 'To reach the front desk, press the star key.'],
  ['ivr', 'Your call may be recorded for quality purposes. Please hold.'],
  ['ivr', 'For hours and directions, press four. For all other questions, stay on the line.'],
];
const VOICES = ['en-us', 'en-us+klatt', 'en-gb'];

/** The supervisor's rules (no carrier AMD) applied to a whole greeting. */
function judge(text: string, speechMs: number): Answer {
  const phrases = classifyGreeting(text);
  if (phrases) return phrases;
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  return words >= 9 || speechMs > 4000 ? 'voicemail' : 'human';
}

async function synth(text: string, voice: string): Promise<Int16Array> {
  const tts = createLocalTts({ languages: ['en'], model: 'espeak-ng', voice, wordsPerMinute: 165, binary: 'espeak-ng' });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize(text, new AbortController().signal)) parts.push(p);
  return resample(concatInt16(parts), 24000, 16000);
}

function report(what: string, got: Answer[]): void {
  const classes: Answer[] = ['human', 'voicemail', 'ivr'];
  const right = got.filter((g, i) => g === GREETINGS[i]![0]).length;
  const per = classes.map((c) => {
    const idx = GREETINGS.map((g, i) => (g[0] === c ? i : -1)).filter((i) => i >= 0);
    return `${c} ${idx.filter((i) => got[i] === c).length}/${idx.length}`;
  });
  const confusions = GREETINGS.map((g, i) => (got[i] !== g[0] ? `${g[0]}→${got[i]}` : null)).filter(Boolean);
  console.log(`${what.padEnd(34)} accuracy ${((right / got.length) * 100).toFixed(1)} % (${right}/${got.length}); ${per.join(', ')}${confusions.length ? `; errors: ${confusions.join(' ')}` : ''}`);
}

const clean = await Promise.all(GREETINGS.map(([, text], i) => synth(text, VOICES[i % VOICES.length]!)));
const phone = clean.map((c) => phoneLine(c, 16000));
console.log(`${GREETINGS.length} greetings, ${(clean.reduce((a, c) => a + c.length, 0) / 16000).toFixed(1)} s of speech; ${os.availableParallelism()} cores`);
report('rules on the scripts (no recogniser)', GREETINGS.map(([, text], i) => judge(text, (clean[i]!.length / 16000) * 1000)));

// the beep after each mailbox greeting, through the same phone line
const beep = Int16Array.from({ length: 8000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 1000 * i) / 16000)));
let beeps = 0;
let falseBeeps = 0;
GREETINGS.forEach(([kind], i) => {
  const d = new BeepDetector(16000);
  const audio = phoneLine(concatInt16(kind === 'voicemail' ? [clean[i]!, new Int16Array(6400), beep, new Int16Array(3200)] : [clean[i]!, new Int16Array(3200)]), 16000);
  const found = d.push(audio).length;
  if (kind === 'voicemail') beeps += found > 0 ? 1 : 0;
  else falseBeeps += found;
});
console.log(`beep detector after the phone line: ${beeps}/12 mailbox beeps found, ${falseBeeps} false beeps in the 24 other greetings`);

const models = process.argv.slice(2).length ? process.argv.slice(2) : ['whisper-tiny.en', 'pocketsphinx'];
for (const model of models) {
  const stt = createLocalStt(model, { corpus: ['You are calling a customer about their appointment.'] });
  let resolve: ((t: string) => void) | null = null;
  const stream = await stt.open({ languages: ['en'], keyterms: [], onEvent: (e: SttEvent) => e.type === 'final' && resolve?.(e.text) });
  if (stt.model !== model) throw new Error(`${model} did not load (${stt.model} ran instead)`);
  const got: Answer[] = [];
  const heard: string[] = [];
  for (const clip of phone) {
    const all = concatInt16([new Int16Array(3200), clip, new Int16Array(3200)]);
    const text = new Promise<string>((ok) => {
      resolve = ok;
      setTimeout(() => ok(''), 30_000);
    });
    for (let o = 0; o < all.length; o += 320) stream.write(all.subarray(o, o + 320));
    stream.finalize();
    const t = await text;
    heard.push(t);
    got.push(judge(t, (clip.length / 16000) * 1000));
  }
  await stream.close();
  report(`${model}, 8 kHz phone line`, got);
  if (process.env.SHOW) heard.forEach((h, i) => console.log(`   ${GREETINGS[i]![1]} → ${h} → ${got[i]}`));
}
console.log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
await closeWhisper();
await closeLocalStt();
