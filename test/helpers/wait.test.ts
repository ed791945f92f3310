// The polling helper the other tests wait with: it resolves with the first truthy value, and when that never comes
// its error says what was awaited and what was last seen, so a failed wait explains itself.
import test from 'ava';
import { until } from './wait.ts';

test('until resolves with the first truthy value fn returns, sync or async', async (t) => {
  let n = 0;
  t.is(await until(() => (++n >= 3 ? `after ${n}` : null), { everyMs: 1 }), 'after 3');
  t.deepEqual(await until(async () => ({ rows: 2 })), { rows: 2 });
});

test('until times out naming what it waited for and the last value seen', async (t) => {
  let v = 0;
  const err = await t.throwsAsync(until(() => (v++ > 1000 ? v : 0), { what: 'the counter', timeoutMs: 30, everyMs: 5 }));
  t.is(err.message, 'timed out after 30 ms waiting for the counter (last value: 0)');
  const unnamed = await t.throwsAsync(until(() => false, { timeoutMs: 10, everyMs: 5 }));
  t.regex(unnamed.message, /^timed out after 10 ms waiting for `\(\) ?=> ?false` \(last value: false\)$/, 'unnamed: the source of fn');
});

test('an error thrown by fn ends the wait at once with that error', async (t) => {
  let runs = 0;
  await t.throwsAsync(until(() => { runs++; throw new Error('query failed'); }, { timeoutMs: 5000 }), { message: 'query failed' });
  t.is(runs, 1);
});
