// Fault table, campaign column (test/faults/campaign-rig.ts): the media process SIGKILLed while campaign calls are
// live over the carrier stream; a new media node is started once the killed node's rows have been ended by the api's
// sweep (while no node runs, answered calls find no stream and end `cancelled`).
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { campaignRig, checkAfterwards } from './campaign-rig.ts';
import { count, kill, killChildren, startProcess } from './harness.ts';
import { until } from '../helpers/wait.ts';

test.after.always(killChildren);

test.serial('media SIGKILLed while campaign calls are live over the carrier stream, a new node started: the campaign completes, nothing lost, no duplicate dial', async (t) => {
  t.timeout(420_000);
  const rig = await campaignRig(t, 'faults-campaign-media-kill');
  await until(() => (rig.carrier.connected >= 30 && rig.carrier.live.size >= 5) || null, { what: '30 connected calls and 5 live streams', timeoutMs: 180_000, everyMs: 250 });
  const liveAtKill = rig.carrier.live.size;
  const dialsAtKill = rig.carrier.dials.length;
  const killed = rig.procs.media!;
  rig.procs.media = null;
  await kill(killed.child);
  const killedAt = Date.now();
  // the killed node's rows are ended by the api's sweep (no media node is left); then a new node comes up
  await until(async () => (await count(rig.db, sql.fragment`SELECT 1 FROM calls WHERE campaign_id = ${rig.campaignId} AND status = 'active'`)) === 0 || null, { what: 'the killed node\'s rows to end', timeoutMs: 60_000, everyMs: 250 });
  const sweptAfterS = (Date.now() - killedAt) / 1000;
  rig.procs.media = await startProcess('media/main.ts', rig.env);
  const figures = await checkAfterwards(t, rig);
  const crashed = await count(rig.db, sql.fragment`SELECT 1 FROM calls WHERE campaign_id = ${rig.campaignId} AND ended_reason = 'pipeline_error'`);
  t.true(crashed >= 1, 'calls were live on the killed node');
  // their usage died with the process: the recogniser's time is billed by duration, once
  const billed = await count(rig.db, sql.fragment`SELECT 1 FROM calls c WHERE campaign_id = ${rig.campaignId} AND ended_reason = 'pipeline_error'
    AND cost > 0 AND (SELECT count(*) FROM wallet_transactions w WHERE w.call_id = c.id AND w.kind = 'call_debit') = 1`);
  t.is(billed, crashed, 'every call killed on the node debited once');
  t.log(`killed with ${liveAtKill} live streams after ${dialsAtKill} dials; rows ended by the sweep ${sweptAfterS.toFixed(1)} s after the kill; ${crashed} calls ended pipeline_error`);
  t.log(JSON.stringify(figures));
});
