// A media process shutting down: live calls end as `cancelled` (clean close, row written), new connections are
// refused while draining.
import test from 'ava';
import { startTestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller, getCallRow } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';
import { until } from '../../helpers/wait.ts';

test('closing the media service ends live calls with endedReason cancelled', async (t) => {
  const book = new ScenarioBook();
  const s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'media-shutdown-test', SHUTDOWN_GRACE_MS: '200' }, media: { engines: book.factory } });
  try {
    const org = await s.createOrg();
    const callId = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: book.add({}) }) });
    const caller = TestCaller.connect(s.origin, callId, org.apiKey);
    await caller.waitOpen();
    await until(async () => (await getCallRow(s.db, callId)).status === 'active', { what: 'active', timeoutMs: 5000 });
    await until(() => s.combined.media.activeCalls() === 1, { what: 'live call', timeoutMs: 5000 });
    await s.combined.media.drain(100); // grace passes with the call still live
    const late = await insertPendingCall(s.db, { orgId: org.orgId, config: agentConfig({ name: book.add({}) }) });
    const refused = TestCaller.connect(s.origin, late, org.apiKey);
    t.is((await refused.closed).code, 1013);
    await s.combined.media.close();
    const closed = await caller.closed;
    t.is(closed.code, 1000);
    const row = await endedRow(s.db, callId);
    t.is(row.ended_reason, 'cancelled');
    t.is(row.status, 'completed');
    t.is((await getCallRow(s.db, late)).status, 'pending');
  } finally {
    await s.close();
  }
});
