// After a database outage every media node looks dead (none could heartbeat): the dead-node sweep stays off for the
// dead-after window from the last failure on the database (a failed run, a failure noted elsewhere in the same
// periodic run, or the probe run in place of a skipped sweep), so live nodes get that window to report again.
import test from 'ava';
import { afterOutageGuard } from '../../core/calls/orphans.ts';

test('a failure keeps dead-node sweeps off for the quiet window from the last failure, then sweeps resume', async (t) => {
  let clock = 0;
  const g = afterOutageGuard(4000, () => clock);
  let runs = 0;
  const sweep = async () => { runs++; return runs; };
  const down = async () => { throw new Error('connection refused'); };
  t.is(await g.run(sweep), 1);
  await t.throwsAsync(g.run(down));
  clock = 2000;
  t.is(await g.run(sweep), null, 'skipped right after the failure');
  clock = 3999;
  t.is(await g.run(sweep), null, 'still inside the window');
  clock = 4000;
  t.is(await g.run(sweep), 2, 'the window has passed');
  g.fail();
  clock = 6000;
  t.is(await g.run(sweep), null);
  clock = 8000;
  t.is(await g.run(sweep), 3);
});

test('while skipping, a failing probe moves the window to the database\'s return, however long the outage', async (t) => {
  let clock = 0;
  const g = afterOutageGuard(4000, () => clock);
  let runs = 0;
  const sweep = async () => { runs++; return runs; };
  let up = false;
  const probe = async () => { if (!up) throw new Error('connection refused'); };
  await t.throwsAsync(g.run(async () => { throw new Error('connection refused'); }, probe));
  for (clock = 2000; clock <= 20_000; clock += 2000) t.is(await g.run(sweep, probe), null, `skipped at ${clock} (database still down)`);
  up = true; // back at 20 s: the last failed probe was at 20 s
  clock = 22_000;
  t.is(await g.run(sweep, probe), null);
  clock = 24_000;
  t.is(await g.run(sweep, probe), 1);
  t.is(runs, 1);
});
