// Uploaded audio recordings: what decoding one upload costs (120 s of audio in each accepted format, decoded and
// normalised to 24 kHz mono) and what it does to the api's event loop. Baseline in the same run: a 24 kHz mono WAV
// (no codec, no resampling). The api decodes on a worker thread (core/recordings/decoder.ts): the event-loop lag
// while a decode runs there is compared with the lag the same decode causes inline.
import { decodeOffThread } from '../core/recordings/decoder.ts';
import { decodeRecording } from '../core/recordings/decode.ts';
import { chirp, mp3File, opusFile, wavFile } from '../test/recordings/audio-files.ts';

const SECONDS = 119;
const files: Array<[string, Buffer]> = [
  ['wav 24 kHz mono (baseline)', wavFile(chirp(SECONDS, 24_000), 24_000)],
  ['wav 44.1 kHz stereo', wavFile(chirp(SECONDS, 44_100), 44_100, 2)],
  ['mp3 44.1 kHz 64 kbps', mp3File(chirp(SECONDS, 44_100), 44_100)],
  ['ogg/opus 48 kHz', await opusFile(chirp(SECONDS, 48_000), 'ogg')],
  ['webm/opus 48 kHz', await opusFile(chirp(SECONDS, 48_000), 'webm')],
];

async function best(fn: () => Promise<unknown>, runs = 3): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}

await decodeRecording(files[0]![1]); // warm-up (WASM instantiation, resampler tables)
const base = await best(() => decodeRecording(files[0]![1]));
console.log(`decode + normalise ${SECONDS} s of audio (best of 3):`);
for (const [name, bytes] of files) {
  const ms = name.includes('baseline') ? base : await best(() => decodeRecording(bytes));
  console.log(`  ${name.padEnd(28)} ${(bytes.length / 1024 / 1024).toFixed(2).padStart(6)} MB  ${ms.toFixed(0).padStart(6)} ms  ${(ms / base).toFixed(1)}× baseline  ${((SECONDS * 1000) / ms).toFixed(0)}× real time`);
}

/** Longest gap between 5 ms timer ticks while fn runs (how long other requests would wait). */
async function lagDuring(fn: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let max = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 5);
    last = now;
  }, 5);
  await new Promise((r) => setTimeout(r, 20));
  await fn();
  await new Promise((r) => setTimeout(r, 20)); // the tick that waited behind fn runs now
  clearInterval(tick);
  return max;
}
const mp3 = files[2]![1];
await decodeOffThread(mp3); // start the thread
const inline = await lagDuring(() => decodeRecording(mp3));
const threaded = await lagDuring(() => decodeOffThread(mp3));
console.log(`event-loop max delay while an MP3 upload decodes: inline ${inline.toFixed(0)} ms, on the decoding thread ${threaded.toFixed(0)} ms (ratio ${(inline / Math.max(1, threaded)).toFixed(0)}×)`);
process.exit(0);
