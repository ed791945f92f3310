// The shared frame clock's slots (media/pipeline/clock.ts): every member ticks once per period, one period apart,
// while the members are spread over the period's sub-ticks; a late timer runs every slot that fell due.
import test from 'ava';
import { FrameClock, type Tickable } from '../../../media/pipeline/clock.ts';

function member(log: Array<[string, number, number]>, name: string, now: () => number): Tickable {
  return { tick: (at) => log.push([name, at, now()]) };
}

/** Drive a clock on a fake time from `from` to `to` in 1 ms steps (poll() runs what is due, as the timer would). */
function run(clock: FrameClock, setNow: (v: number) => void, from: number, to: number): void {
  for (let v = from; v <= to; v++) {
    setNow(v);
    clock.poll();
  }
}

test('4 slots: members spread over the sub-ticks, each ticks every 20 ms on its own grid', (t) => {
  let now = 1000;
  const clock = new FrameClock(20, () => now, 4);
  const log: Array<[string, number, number]> = [];
  const names = ['a', 'b', 'c', 'd', 'e'];
  const ms = names.map((n) => member(log, n, () => now));
  for (const m of ms) clock.add(m);
  run(clock, (v) => (now = v), 1000, 1200);
  for (const m of ms) clock.delete(m);
  t.is(clock.size, 0);
  const ticks = (n: string) => log.filter(([x]) => x === n).map(([, at]) => at);
  // every member ticked once per period, exactly one period apart, and on time
  for (const n of names) {
    const at = ticks(n);
    t.true(at.length >= 9, `${n} ticked ${at.length} times`);
    for (let i = 1; i < at.length; i++) t.is(at[i]! - at[i - 1]!, 20, `${n} tick ${i}`);
  }
  t.true(log.every(([, at, ran]) => ran === at));
  // a, b, c, d each took a slot of their own; e shares the first (the fewest members)
  t.deepEqual(['a', 'b', 'c', 'd', 'e'].map((n) => ticks(n)[0]), [1005, 1010, 1015, 1020, 1005]);
  // so no sub-tick runs more than two of the five
  const perInstant = new Map<number, number>();
  for (const [, at] of log) perInstant.set(at, (perInstant.get(at) ?? 0) + 1);
  t.is(Math.max(...perInstant.values()), 2);
});

test('1 slot: every member in the same tick (the clock as it was)', (t) => {
  let now = 1000;
  const clock = new FrameClock(20, () => now);
  const log: Array<[string, number, number]> = [];
  const a = member(log, 'a', () => now);
  const b = member(log, 'b', () => now);
  clock.add(a);
  clock.add(b);
  run(clock, (v) => (now = v), 1000, 1070);
  clock.delete(a);
  clock.delete(b);
  const at = (n: string) => log.filter(([x]) => x === n).map(([, x]) => x);
  t.deepEqual(at('a'), [1020, 1040, 1060]);
  t.deepEqual(at('b'), at('a'));
});

test('a late timer runs every slot that fell due, in order, each at its nominal time', (t) => {
  let now = 1000;
  const clock = new FrameClock(20, () => now, 4);
  const log: Array<[string, number, number]> = [];
  const ms = ['a', 'b', 'c', 'd'].map((n) => member(log, n, () => now));
  for (const m of ms) clock.add(m); // first sub-tick due at 1005
  now = 1017; // the event loop was busy: slots due at 1005, 1010 and 1015 all missed their timer
  clock.poll();
  t.deepEqual(log.map(([n, at]) => [n, at]), [['a', 1005], ['b', 1010], ['c', 1015]]);
  now = 1020;
  clock.poll();
  t.deepEqual(log.at(-1)!.slice(0, 2), ['d', 1020]);
  now = 1024;
  clock.poll(); // not due yet (1025)
  t.is(log.length, 4);
  for (const m of ms) clock.delete(m);
});

test('slots are fixed while the clock has members; bad counts are refused', (t) => {
  const clock = new FrameClock(20, () => 0, 2);
  t.throws(() => clock.setSlots(0), { instanceOf: RangeError });
  t.throws(() => clock.setSlots(1.5), { instanceOf: RangeError });
  const m: Tickable = { tick: () => {} };
  clock.add(m);
  t.throws(() => clock.setSlots(4), { message: /members/ });
  clock.delete(m);
  clock.setSlots(4);
  t.is(clock.slots, 4);
});
