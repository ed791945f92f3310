// First audio of the `local` TTS's Piper voice at 1 call: the time from a chunk handed to synthesize() (the first
// clause of a reply, as the pipeline hands it over) to its first audio, over REPLIES replies with a pause between
// them as in a conversation. The first reply after the pool started is reported on its own (cold: the helpers'
// first inference) and within the percentiles. Also: the audible gap inside a first clause (a lead piece played out
// before the piece after it arrived), and the time a phonemizer takes per clause when it is an
// `espeak-ng --ipa` process started per clause (the alternative to the resident one the Piper helper keeps).
// Latency depends on machine load: the load average is printed at the end.
//   node_modules/.bin/node --import tsx bench/local-tts-latency.ts        REPLIES=60 PAUSE_MS=300
import { execFile } from 'node:child_process';
import os from 'node:os';
import { closePiper, piperPool } from '../media/services/tts/piper.ts';
import { createLocalTts } from '../media/services/tts/local.ts';
import { pct } from './_stats.ts';

const REPLIES = Number(process.env.REPLIES ?? 60);
const PAUSE_MS = Number(process.env.PAUSE_MS ?? 300);
// first clauses of replies: the demo responder's, and a language model's (some long, unpunctuated for a while)
const FIRST = [
  'Hello! How can I help you today?',
  'It is 10:42 UTC.',
  'Sure, I can help with that.',
  'Thanks for calling Bright Smile Dental, how can I help you today?',
  '2 plus 3 is 5.',
  'You said: can I see Doctor Patel on Friday morning.',
  'Of course.',
  'We are open from Monday to Friday, from nine in the morning until five in the afternoon,',
  'I am sorry, I did not catch that.',
  'Let me check the calendar for next Tuesday at three',
  'Goodbye!',
  'Your appointment for a teeth cleaning with Doctor Patel is booked for Friday at ten thirty in the morning',
];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const t0 = performance.now();
await piperPool();
const startMs = performance.now() - t0;
const tts = createLocalTts({ languages: ['en'] });
const first: number[] = [];
const byLength: Record<'short' | 'long', number[]> = { short: [], long: [] };
const byText = new Map<string, number[]>();
let cold = NaN;
const gaps: number[] = [];
for (let i = 0; i < REPLIES; i++) {
  const text = FIRST[i % FIRST.length]!;
  const t = performance.now();
  let ms = NaN;
  // audible gap: silence a player that starts at the first audio and plays every sample as soon as it can would
  // insert before a later piece of the clause (0 when it came before the audio ahead of it finished playing)
  let played = 0;
  let gap = 0;
  for await (const pcm of tts.synthesize(text, new AbortController().signal)) {
    if (!pcm.length) continue;
    const now = performance.now() - t;
    if (Number.isNaN(ms)) ms = now;
    else gap = Math.max(gap, now - (ms + played));
    played += (pcm.length / 24000) * 1000 + Math.max(0, now - (ms + played));
  }
  gaps.push(gap);
  if (tts.model !== 'piper') throw new Error(`the Piper voice did not load (${tts.model} spoke instead)`);
  if (i === 0) cold = ms;
  first.push(ms);
  byLength[text.length > 60 ? 'long' : 'short'].push(ms);
  byText.set(text, [...(byText.get(text) ?? []), ms]);
  await sleep(PAUSE_MS);
}
await closePiper();

const spawnMs: number[] = [];
for (let i = 0; i < 40; i++) {
  const t = performance.now();
  await new Promise<void>((ok, fail) => execFile('espeak-ng', ['-q', '--ipa', '-v', 'en-us', FIRST[i % FIRST.length]!], (err) => (err ? fail(err) : ok())));
  spawnMs.push(performance.now() - t);
}

const f0 = (x: number) => Math.round(x).toString();
console.log(`Piper pool start (helpers forked, voice loaded${process.env.LOCAL_TTS_WORKERS ? `, ${process.env.LOCAL_TTS_WORKERS} workers` : ''}): ${f0(startMs)} ms; ${os.availableParallelism()} cores`);
console.log(`first audio after the chunk is handed over, ${REPLIES} replies, 1 call: p50 ${f0(pct(first, 50))} ms, p90 ${f0(pct(first, 90))} ms, p99 ${f0(pct(first, 99))} ms, max ${f0(Math.max(...first))} ms; first reply after start ${f0(cold)} ms`);
console.log(`  first clause ≤ 60 characters: p50 ${f0(pct(byLength.short, 50))} / p99 ${f0(pct(byLength.short, 99))} ms; longer: p50 ${f0(pct(byLength.long, 50))} / p99 ${f0(pct(byLength.long, 99))} ms`);
console.log(`  audible gap inside a first clause (its later pieces late for playback): p99 ${f0(pct(gaps, 99))} ms, max ${f0(Math.max(...gaps))} ms, ${gaps.filter((g) => g > 0).length} of ${gaps.length} replies with one`);
for (const [text, ms] of byText) console.log(`  ${JSON.stringify(text)}: ${ms.map(f0).join(' ')} ms`);
console.log(`espeak-ng --ipa started per clause (phonemes only): p50 ${f0(pct(spawnMs, 50))} ms, p99 ${f0(pct(spawnMs, 99))} ms`);
console.log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
