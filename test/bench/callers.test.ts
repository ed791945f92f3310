// bench/_callers.ts SpeakingCaller's playout judgement (the target: no frame later than its playout time by more than
// 40 ms): which frames are late, and where each run of late frames starts (bench/webrtc matches runs to stalls).
import test from 'ava';
import { performance } from 'node:perf_hooks';
import { SpeakingCaller, speakingStats } from '../../bench/_callers.ts';

test('late frames: counted per frame, one run per stretch of late frames, with its playout time, arrival and index', (t) => {
  const s = speakingStats();
  const c = new SpeakingCaller(s, { frameSamples: 320, speechSamples: 3200 });
  // an utterance: frames 0–4 at once (the pacer's lead), then one every 20 ms, until a hold-up: frames 20–27 come
  // together at 1470 (the pacer refilling its lead), so frames 20 and 21 are past playout + 40 ms, 22 on are not
  const at: number[] = [];
  for (let k = 0; k < 5; k++) at.push(1000);
  for (let k = 5; k < 20; k++) at.push(1000 + (k - 4) * 20);
  for (let k = 20; k < 28; k++) at.push(1470);
  for (let k = 28; k < 40; k++) at.push(1000 + (k - 4) * 20);
  for (const a of at) c.onAudio(a);
  const playout = (k: number) => 1000 + k * 20;
  t.is(s.late, 2);
  t.is(s.frames, 40);
  t.is(s.lateAt.length, 1, 'one run');
  const [p, arrival, k] = s.lateAt[0]!;
  t.is(k, 20);
  t.is(p, performance.timeOrigin + playout(20));
  t.is(arrival, performance.timeOrigin + at[20]!);
});

test('late frames: none for an utterance paced on time', (t) => {
  const s = speakingStats();
  const c = new SpeakingCaller(s, { frameSamples: 320, speechSamples: 3200 });
  for (let k = 0; k < 5; k++) c.onAudio(500);
  for (let k = 5; k < 50; k++) c.onAudio(500 + (k - 4) * 20);
  t.is(s.late, 0);
  t.deepEqual(s.lateAt, []);
});
