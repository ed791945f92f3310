// After a database outage every media node looks dead (none could heartbeat): the dead-node sweep skips the run that
// follows a failed one, so live nodes get an interval to report before their calls could be taken for orphans.
import test from 'ava';
import { afterOutageGuard } from '../../core/calls/orphans.ts';

test('a failed run (or a failure noted elsewhere in the same periodic run) makes the next run a no-op, then sweeps resume', async (t) => {
  const g = afterOutageGuard();
  let runs = 0;
  const sweep = async () => { runs++; return runs; };
  t.is(await g.run(sweep), 1);
  await t.throwsAsync(g.run(async () => { throw new Error('connection refused'); }));
  t.is(await g.run(sweep), null, 'skipped right after the failure');
  t.is(await g.run(sweep), 2);
  g.fail();
  t.is(await g.run(sweep), null);
  t.is(await g.run(sweep), 3);
});
