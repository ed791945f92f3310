// Fault table, campaign column (test/faults/campaign-rig.ts): the api process SIGKILLed while the campaign runs. The
// worker dials on; answer webhooks and status callbacks fail while no api runs, so those calls stay pending and hold
// the campaign's slots until a new api's stale-call sweep ends them (PHONE_PENDING_TIMEOUT_S, 30 s here).
import test from 'ava';
import { sql } from '../../core/db/pool.ts';
import { campaignRig, checkAfterwards } from './campaign-rig.ts';
import { count, kill, killChildren, startProcess } from './harness.ts';
import { until } from '../helpers/wait.ts';

test.after.always(killChildren);

test.serial('api SIGKILLed while the campaign runs, a new api started: the campaign completes, nothing lost, no duplicate dial', async (t) => {
  t.timeout(420_000);
  const rig = await campaignRig(t, 'faults-campaign-api-kill');
  await until(() => rig.carrier.connected >= 30 || null, { what: '30 connected calls', timeoutMs: 180_000, everyMs: 250 });
  const dialsAtKill = rig.carrier.dials.length;
  const liveAtKill = rig.carrier.live.size;
  await kill(rig.procs.api.child);
  // the worker dials on while no api runs: the calls end (media signals the campaign) and new dials take their slots,
  // but no answer webhook or status callback gets through, so the new calls stay pending; once all 10 slots are held
  // by such calls the campaign waits, and a new api is started
  const pending = () => count(rig.db, sql.fragment`SELECT 1 FROM calls WHERE campaign_id = ${rig.campaignId} AND status = 'pending'`);
  await until(async () => (await pending()) >= 10 || null, { what: 'the 10 slots held by calls no api answered', timeoutMs: 120_000, everyMs: 250 });
  const dialsDown = rig.carrier.dials.length - dialsAtKill;
  rig.procs.api = await startProcess('api/main.ts', rig.env);
  const figures = await checkAfterwards(t, rig);
  const noStatus = await count(rig.db, sql.fragment`SELECT 1 FROM calls WHERE campaign_id = ${rig.campaignId} AND connection_status = 'telephony_no_status'`);
  t.log(`killed with ${liveAtKill} live streams after ${dialsAtKill} dials; ${dialsDown} dials while down; ${noStatus} calls ended telephony_no_status by the stale-call sweep`);
  t.log(JSON.stringify(figures));
});
