import test from 'ava';
import {
  SOUND_NAMES,
  SOUND_RATE,
  backgroundSource,
  createWordPicker,
  mixInto,
  preloadSounds,
  taskSoundSource,
} from '../../../media/sounds/index.ts';
import { addEvent, crossfadeLoop, seededRng } from '../../../media/sounds/synth.ts';
import { concatInt16, rms } from '../../../media/audio/pcm.ts';
import {
  BACKGROUND_SOUNDS,
  TASK_SOUNDS,
  acknowledgeSoundsSchema,
  backgroundSoundSchema,
  fillerWordsSchema,
  taskSoundSchema,
} from '../../../core/agent-config/schema.ts';

const all = [
  ...SOUND_NAMES.background.map((sound) => ({ kind: 'background' as const, sound })),
  ...SOUND_NAMES.task.map((sound) => ({ kind: 'task' as const, sound })),
];
const source = (kind: 'background' | 'task', sound: string, volume: number, seed?: number) =>
  kind === 'background' ? backgroundSource({ sound, volume }, { seed }) : taskSoundSource({ sound, volume }, { seed });

test.before(() => preloadSounds());

test('names: exactly the AgentConfig schema enums, and the spec defaults resolve', (t) => {
  t.deepEqual([...SOUND_NAMES.background].sort(), [...BACKGROUND_SOUNDS].sort());
  t.deepEqual([...SOUND_NAMES.task].sort(), [...TASK_SOUNDS].sort());
  t.true(SOUND_NAMES.background.includes('library'));
  t.true(SOUND_NAMES.task.includes('typing'));
  t.is(SOUND_RATE, 24000);
  t.throws(() => backgroundSource({ sound: 'jungle', volume: 0.1 }), { message: /unknown background sound 'jungle'/ });
  t.throws(() => taskSoundSource({ sound: 'library', volume: 0.1 }), { message: /unknown task sound/ });
});

test('the schema defaults drive the sources as the pipeline will call them', (t) => {
  const bg = backgroundSource(backgroundSoundSchema.parse({}));
  const ts = taskSoundSource(taskSoundSchema.parse({}));
  t.is(bg.read(480).length, 480);
  t.true(rms(ts.read(4800)) > 0);
  const fw = createWordPicker(fillerWordsSchema.parse({}), seededRng(1));
  const ack = createWordPicker({ ...acknowledgeSoundsSchema.parse({}), probability: 1 }, seededRng(1));
  t.true(['so', 'yeah', 'okay', null].includes(fw.next()));
  t.deepEqual([ack.next(), ack.next(), ack.next()], ['hmm', 'hm hmm', 'okay']);
});

test('loop mechanics: the crossfade removes the seam of a signal that does not loop by itself; events wrap', (t) => {
  const L = 24000;
  const fade = 2400;
  const sine = new Float64Array(L + fade);
  for (let i = 0; i < sine.length; i++) sine[i] = 10000 * Math.sin((2 * Math.PI * 50.37 * i) / 24000 + 0.3);
  const naiveJump = Math.abs(sine[0]! - sine[L - 1]!);
  const loop = crossfadeLoop(sine, L, fade);
  let inner = 0;
  for (let i = 0; i < L - 1; i++) inner = Math.max(inner, Math.abs(loop[i + 1]! - loop[i]!));
  const seam = Math.abs(loop[0]! - loop[L - 1]!);
  t.true(naiveJump > 3 * inner, `the fixture has a seam (${naiveJump.toFixed(0)} vs ${inner.toFixed(0)})`);
  t.true(seam <= inner * 1.01, `seam ${seam.toFixed(1)} vs inner max ${inner.toFixed(1)}`);
  const buf = new Float64Array(100);
  addEvent(buf, 90, 20, () => 1);
  t.deepEqual([...buf.subarray(0, 10), ...buf.subarray(90)], Array(20).fill(1));
  t.is(buf.subarray(10, 90).reduce((a, b) => a + b, 0), 0);
});

function maxJump(pcm: Int16Array, from: number, to: number): number {
  let m = 0;
  for (let i = from; i < to - 1; i++) m = Math.max(m, Math.abs(pcm[i + 1]! - pcm[i]!));
  return m;
}
function percentile(pcm: Int16Array, q: number): number {
  const d: number[] = [];
  for (let i = 0; i < pcm.length - 1; i++) d.push(Math.abs(pcm[i + 1]! - pcm[i]!));
  d.sort((a, b) => a - b);
  return d[Math.floor(q * (d.length - 1))]!;
}

for (const { kind, sound } of all) {
  test(`${kind} '${sound}': seamless loop, sound present, level as documented`, (t) => {
    const src = source(kind, sound, 1);
    const L = src.loopSamples;
    t.true(L >= 4 * SOUND_RATE, 'a loop of several seconds');
    const two = src.read(2 * L);
    // it really loops
    t.deepEqual(two.subarray(L, L + 2000), two.subarray(0, 2000));
    // no click at the loop point: the jumps around it are no bigger than the loop's typical large jumps
    const boundary = maxJump(two, L - 24, L + 24);
    const typical = percentile(two.subarray(0, L), 0.999);
    t.log(`${sound}: boundary jump ${boundary}, 99.9th percentile ${typical}, RMS ${rms(two.subarray(0, L)).toFixed(0)}`);
    t.true(boundary <= typical, `boundary ${boundary} vs ${typical}`);
    // level: backgrounds at RMS −20 dBFS (3277) at volume 1; everything peaks ≤ −3 dBFS
    let peak = 0;
    for (const v of two) peak = Math.max(peak, Math.abs(v));
    t.true(peak <= 23198);
    if (kind === 'background') t.true(Math.abs(rms(two.subarray(0, L)) - 3277) < 300);
    else t.true(rms(two.subarray(0, L)) > 300);
  });
}

test('volume scales linearly; 0 is silence; reads of any size continue the same stream', (t) => {
  const full = backgroundSource({ sound: 'cafe', volume: 1 }).read(24000);
  const quiet = backgroundSource({ sound: 'cafe', volume: 0.08 }).read(24000);
  let err = 0;
  for (let i = 0; i < full.length; i++) err = Math.max(err, Math.abs(quiet[i]! - Math.round(full[i]! * 0.08)));
  t.is(err, 0);
  t.true(rms(quiet) > 0 && Math.abs(rms(quiet) / rms(full) - 0.08) < 0.002);
  t.is(rms(backgroundSource({ sound: 'cafe', volume: 0 }).read(4800)), 0);
  // chunked reads == one read
  const src = taskSoundSource({ sound: 'typing', volume: 0.35 });
  const parts = [1, 479, 480, 7, 3000, 480].map((n) => src.read(n));
  const joined = concatInt16(parts);
  t.deepEqual(joined, taskSoundSource({ sound: 'typing', volume: 0.35 }).read(joined.length));
});

test('task sound reset() restarts from the top', (t) => {
  const src = taskSoundSource({ sound: 'typing', volume: 0.5 });
  const first = src.read(4800);
  src.read(12345);
  src.reset();
  t.deepEqual(src.read(4800), first);
  t.true(rms(first) > 0, 'typing starts right away');
});

test('deterministic for a seed; different seeds give different takes', (t) => {
  for (const { kind, sound } of all) {
    const a = source(kind, sound, 0.5, 42).read(48000);
    const b = source(kind, sound, 0.5, 42).read(48000);
    const c = source(kind, sound, 0.5, 43).read(48000);
    t.deepEqual(a, b, sound);
    t.notDeepEqual(a, c, sound);
  }
  // the default take is fixed per name, so every call (and process) sounds the same
  t.deepEqual(backgroundSource({ sound: 'library', volume: 1 }).read(9600), backgroundSource({ sound: 'library', volume: 1 }).read(9600));
  t.notDeepEqual(backgroundSource({ sound: 'library', volume: 1 }).read(9600), backgroundSource({ sound: 'office', volume: 1 }).read(9600));
});

test('word picker: parsing and round-robin order', (t) => {
  const p = createWordPicker({ words: ' hmm, hm hmm ,, okay ,', wordOrder: 'round-robin', probability: 1 }, seededRng(1));
  t.deepEqual(
    Array.from({ length: 7 }, () => p.next()),
    ['hmm', 'hm hmm', 'okay', 'hmm', 'hm hmm', 'okay', 'hmm'],
  );
  t.is(createWordPicker({ words: ' , ', wordOrder: 'round-robin', probability: 1 }).next(), null);
  const never = createWordPicker({ words: 'a,b', wordOrder: 'random', probability: 0 }, seededRng(1));
  t.true(Array.from({ length: 100 }, () => never.next()).every((w) => w === null));
});

test('word picker: probability honoured (seeded), skips keep round-robin order, random never repeats', (t) => {
  const p = createWordPicker({ words: 'so, yeah, okay', wordOrder: 'round-robin', probability: 0.75 }, seededRng(7));
  const got = Array.from({ length: 4000 }, () => p.next());
  const said = got.filter((w): w is string => w !== null);
  t.true(Math.abs(said.length / got.length - 0.75) < 0.03, `${said.length}`);
  t.deepEqual(said.slice(0, 6), ['so', 'yeah', 'okay', 'so', 'yeah', 'okay']);
  // the same seed → the same sequence
  const again = createWordPicker({ words: 'so, yeah, okay', wordOrder: 'round-robin', probability: 0.75 }, seededRng(7));
  t.deepEqual(Array.from({ length: 4000 }, () => again.next()), got);

  const r = createWordPicker({ words: 'a, b, c', wordOrder: 'random', probability: 1 }, seededRng(3));
  const seq = Array.from({ length: 3000 }, () => r.next()!);
  const counts = { a: 0, b: 0, c: 0 } as Record<string, number>;
  for (let i = 0; i < seq.length; i++) {
    counts[seq[i]!]!++;
    if (i > 0) t.not(seq[i], seq[i - 1]);
  }
  for (const w of ['a', 'b', 'c']) t.true(counts[w]! > 900 && counts[w]! < 1100, `${w}: ${counts[w]}`);
  t.is(createWordPicker({ words: 'only', wordOrder: 'random', probability: 1 }, seededRng(1)).next(), 'only');
});

test('mixInto: adds with gain, saturates at the s16 limits, stops at the shorter buffer', (t) => {
  const target = Int16Array.from([0, 1000, 30000, -30000, 32767, -32768, 5]);
  mixInto(target, Int16Array.from([100, -500, 10000, -10000, 1, -1]));
  t.deepEqual([...target], [100, 500, 32767, -32768, 32767, -32768, 5]);
  const t2 = Int16Array.from([1000, 1000]);
  mixInto(t2, Int16Array.from([1000, -3000, 7]), 0.5);
  t.deepEqual([...t2], [1500, -500]);
});

test('cost: µs per 20 ms frame (logged)', (t) => {
  const bg = backgroundSource({ sound: 'cafe', volume: 0.08 });
  const ts = taskSoundSource({ sound: 'typing', volume: 0.35 });
  const frames = 5000;
  const frame = new Int16Array(480);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < frames; i++) {
    mixInto(frame, bg.read(480));
    mixInto(frame, ts.read(480));
  }
  const us = Number(process.hrtime.bigint() - t0) / 1000 / frames;
  t.log(`background + task read and mix: ${us.toFixed(1)} µs per 20 ms frame`);
  t.true(frame.some((v) => v !== 0));
});
