// Hold-music watchdog: caller audio that never turns into words (music, noise) stops counting as the caller
// speaking, so idle prompts play over it and the call finally ends with silence_timeout.
import test from 'ava';
import { startTestServer } from '../../helpers/server.ts';
import { agentConfig, endedRow, insertPendingCall, TestCaller } from '../../helpers/calls.ts';
import { ScenarioBook } from './scenarios.ts';

test('continuous caller audio without words ends in silence_timeout after the idle prompts', async (t) => {
  const book = new ScenarioBook();
  const s = await startTestServer({ env: { TEMPORAL_TASK_QUEUE: 'media-hold-music-test' }, media: { engines: book.factory, holdMusicMs: 1500 } });
  try {
    const org = await s.createOrg();
    const name = book.add({ stt: { utterances: [], deaf: true } });
    const callId = await insertPendingCall(s.db, {
      orgId: org.orgId,
      config: agentConfig({ name, greeting: { firstMessages: ['Hi.'] }, userIdleTimeoutS: 3, userIdleMaxRetries: 1, userIdleMessages: ['Hello?'] }),
    });
    const caller = TestCaller.connect(s.origin, callId, org.apiKey);
    await caller.waitOpen();
    await caller.waitAgentQuiet();
    // "music" until the agent hangs up
    while (caller.isOpen) await caller.speak(200);
    const closed = await caller.closed;
    t.is(closed.code, 1000);
    t.deepEqual(caller.botTexts(), ['Hi.', 'Hello?']);
    const row = await endedRow(s.db, callId);
    t.is(row.ended_reason, 'silence_timeout');
    t.false(row.transcript.some((e: { role: string }) => e.role === 'user'));
  } finally {
    await s.close();
  }
});
