// The voicemail detector's rules on their own (short thresholds; the end-to-end tests run the defaults through
// real calls): words, long greeting, initial silence (only when the agent waits for the caller), a person by the
// end of the window, and AMD verdicts (machine_*, fax → voicemail; human/unknown → the call goes on).
import test from 'ava';
import { createLogger } from '../../core/logger.ts';
import type { CallSession, EndedReason } from '../../media/session/call-session.ts';
import { VoicemailDetector, isMachine, type VoicemailOptions, type VoicemailVerdict } from '../../media/session/voicemail.ts';
import { until } from '../helpers/calls.ts';

const logger = createLogger({ level: 'silent', name: 'test' });

/** The two members of a session the detector uses: end() and isEnded. */
function sessionLike() {
  const ends: EndedReason[] = [];
  const s = {
    get isEnded() {
      return ends.length > 0;
    },
    async end(r: EndedReason) {
      ends.push(r);
    },
  };
  return { session: s as unknown as CallSession, ends };
}

function detector(o: Partial<VoicemailOptions> = {}) {
  const verdicts: VoicemailVerdict[] = [];
  const d = new VoicemailDetector({
    amd: null,
    speakFirst: 'agent',
    logger,
    machineWords: 9,
    greetingMs: 300,
    initialSilenceMs: 150,
    windowMs: 500,
    onVerdict: (v) => verdicts.push(v),
    ...o,
  });
  const { session, ends } = sessionLike();
  d.started(session);
  return { d, verdicts, ends };
}

test('nine words of greeting within the window → voicemail', async (t) => {
  const { d, verdicts, ends } = detector();
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('hi you have reached');
  t.deepEqual(ends, []);
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('the voicemail of john smith');
  t.deepEqual(ends, ['voicemail']);
  t.like(verdicts[0], { result: 'machine', by: 'words', words: 9 });
});

test('one long run of speech → voicemail (long greeting)', async (t) => {
  const { d, verdicts, ends } = detector();
  d.userSpeech(true);
  await until(() => ends.length > 0, 5000, 'verdict');
  t.deepEqual(ends, ['voicemail']);
  t.like(verdicts[0], { result: 'machine', by: 'long_greeting' });
});

test('"hello?" then quiet → a person at the end of the window; nothing ends', async (t) => {
  const { d, verdicts, ends } = detector();
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('hello');
  await until(() => verdicts.length > 0, 5000, 'verdict');
  t.like(verdicts[0], { result: 'human', by: 'window', words: 1 });
  d.userTurn('this is a long sentence with many more words than nine in it');
  t.deepEqual(ends, [], 'after the verdict nothing more is judged');
});

test('initial silence counts only when the agent waits for the caller', async (t) => {
  const waiting = detector({ speakFirst: 'user' });
  await until(() => waiting.verdicts.length > 0, 5000, 'verdict');
  t.like(waiting.verdicts[0], { result: 'machine', by: 'initial_silence' });
  t.deepEqual(waiting.ends, ['voicemail']);

  const greeting = detector({ speakFirst: 'agent' });
  await until(() => greeting.verdicts.length > 0, 5000, 'verdict');
  t.like(greeting.verdicts[0], { result: 'human', by: 'window' });
  t.deepEqual(greeting.ends, []);
});

test('AMD verdicts: machine_* and fax end the call; human and unknown do not; heuristics stay off', async (t) => {
  t.true(isMachine('machine_start'));
  t.true(isMachine('machine_end_beep'));
  t.true(isMachine('fax'));
  t.false(isMachine('human'));
  t.false(isMachine('unknown'));
  for (const [answeredBy, ended] of [
    ['machine_end_silence', ['voicemail']],
    ['human', []],
    ['unknown', []],
  ] as const) {
    let push: ((a: string) => void) | null = null;
    const { d, ends, verdicts } = detector({
      amd: { current: async () => null, subscribe: async (cb) => ((push = cb), () => (push = null)) },
    });
    await until(() => push, 5000, 'subscribed');
    d.userSpeech(true); // the heuristics would call this long greeting a machine
    d.userTurn('one two three four five six seven eight nine ten');
    push!(answeredBy); // verdicts are applied as they arrive
    t.deepEqual(ends, [...ended], answeredBy);
    t.is(verdicts.filter((v) => v.by !== 'amd').length, 0);
  }
});

test('an AMD verdict already on the row when the stream starts is applied', async (t) => {
  const { ends, verdicts } = detector({ amd: { current: async () => 'machine_start', subscribe: async () => () => undefined } });
  await until(() => ends.length > 0, 5000, 'verdict');
  t.deepEqual(ends, ['voicemail']);
  t.like(verdicts[0], { by: 'amd', answeredBy: 'machine_start' });
});
