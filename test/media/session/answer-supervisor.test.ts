// The answer supervisor's rules on their own (short thresholds; the end-to-end tests run the defaults through real
// calls): what the greeting's words say (menu / mailbox phrases, word count), a long greeting, initial silence (only
// when the agent waits for the caller), a person by the end of the window, carrier AMD verdicts, and on a
// voicemail with a message: the agent stops, the end of the greeting (carrier, beep, silence, cap), the message, the end.
import test from 'ava';
import { createLogger } from '../../../core/logger.ts';
import type { CallSession, EndedReason } from '../../../media/session/call-session.ts';
import { AnswerSupervisor, classifyGreeting, type AnswerOptions, type AnswerVerdict, type VoicemailDrop } from '../../../media/session/answer-supervisor.ts';
import { until } from '../../helpers/calls.ts';

const logger = createLogger({ level: 'silent', name: 'test' });

/** The members of a session the supervisor uses. */
function sessionLike() {
  const ends: EndedReason[] = [];
  const said: string[] = [];
  const holds: Array<number | null> = [];
  let windUps = 0;
  let finishSaying: (() => void) | null = null;
  const s = {
    get isEnded() {
      return ends.length > 0;
    },
    async end(r: EndedReason) {
      ends.push(r);
    },
    windUp() {
      windUps++;
    },
    holdTurns(ms: number | null) {
      holds.push(ms);
    },
    resolve: (t: string) => t.replace('{{first_name}}', 'Ada'),
    say(text: string) {
      said.push(text);
      return { done: new Promise<'played'>((r) => (finishSaying = () => r('played'))) };
    },
  };
  return { session: s as unknown as CallSession, ends, said, holds, windUps: () => windUps, finish: () => finishSaying?.() };
}

function supervisor(o: Partial<AnswerOptions> = {}) {
  const verdicts: AnswerVerdict[] = [];
  const drops: VoicemailDrop[] = [];
  const d = new AnswerSupervisor({
    amd: null, speakFirst: 'agent', voicemailMessage: null, navigatesMenus: false, logger,
    machineWords: 9, greetingMs: 300, initialSilenceMs: 150, windowMs: 500, afterGreetingSilenceMs: 200, carrierSilenceMs: 2000, maxGreetingWaitMs: 3000, menuPauseMs: 700,
    onVerdict: (v) => verdicts.push(v), onVoicemail: (v) => void drops.push(v),
    ...o,
  });
  const s = sessionLike();
  d.started(s.session);
  return { d, verdicts, drops, ...s };
}

/** 16 kHz: `ms` of a sine (a beep) or of silence */
const sine = (ms: number, hz: number) => Int16Array.from({ length: ms * 16 }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * hz * i) / 16000)));
const quiet = (ms: number) => new Int16Array(ms * 16);

test('greeting phrases: menus, mailboxes, and a person\'s hello', (t) => {
  for (const s of ['Thank you for calling Acme. For sales, press 1. For support, press 2.', 'Please listen carefully as our menu options have changed', 'para español oprima el nueve. to reach billing press three'])
    t.is(classifyGreeting(s), 'ivr', s);
  for (const s of ['Hi, you have reached John. Please leave a message after the tone.', 'The person you are calling is not available', 'The Google subscriber you have called is not available. At the tone, please record your message.'])
    t.is(classifyGreeting(s), 'voicemail', s);
  for (const s of ['hello?', 'Hi, this is Sam, who is calling?', 'yes speaking']) t.is(classifyGreeting(s), null, s);
});

test('nine words of greeting within the window → voicemail; without a message the call ends voicemail', async (t) => {
  const { d, verdicts, ends } = supervisor();
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('hi there it is');
  t.deepEqual(ends, []);
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('john smith speaking right now');
  t.deepEqual(ends, ['voicemail']);
  t.like(verdicts[0], { result: 'voicemail', by: 'words', words: 9 });
});

test('one long run of speech → voicemail (long greeting)', async (t) => {
  const { d, verdicts, ends } = supervisor();
  d.userSpeech(true);
  await until(() => ends.length > 0, 5000, 'verdict');
  t.like(verdicts[0], { result: 'voicemail', by: 'long_greeting' });
});

test('"hello?" then quiet → a person at the end of the window; nothing more is judged', async (t) => {
  const { d, verdicts, ends } = supervisor();
  d.userSpeech(true);
  d.userSpeech(false);
  d.userTurn('hello');
  await until(() => verdicts.length > 0, 5000, 'verdict');
  t.like(verdicts[0], { result: 'human', by: 'window', words: 1 });
  d.userTurn('please leave a message after the tone and many more words than nine');
  d.callerAudio(sine(400, 1000));
  d.callerAudio(quiet(100));
  t.deepEqual(ends, []);
  t.is(verdicts.length, 1);
});

test('initial silence counts only when the agent waits for the caller', async (t) => {
  const waiting = supervisor({ speakFirst: 'user' });
  await until(() => waiting.verdicts.length > 0, 5000, 'verdict');
  t.like(waiting.verdicts[0], { result: 'voicemail', by: 'initial_silence' });
  const greeting = supervisor({ speakFirst: 'agent' });
  await until(() => greeting.verdicts.length > 0, 5000, 'verdict');
  t.like(greeting.verdicts[0], { result: 'human', by: 'window' });
  t.deepEqual(greeting.ends, []);
});

test('a menu: IVR; with a keypad the session joins menu sentences and holds idle prompts; without one nothing changes', async (t) => {
  const keys = supervisor({ navigatesMenus: true });
  keys.d.userTurn('Thank you for calling. For appointments press 2.');
  t.like(keys.verdicts[0], { result: 'ivr', by: 'phrases' });
  t.deepEqual(keys.holds, [700]);
  t.deepEqual(keys.ends, []);
  const plain = supervisor();
  plain.d.userTurn('For appointments press 2.');
  t.like(plain.verdicts[0], { result: 'ivr' });
  t.deepEqual(plain.holds, []);
  t.deepEqual(plain.ends, []);
});

test('voicemail with a message: the agent stops, a beep ends the greeting, the message is said (variables resolved), then the end', async (t) => {
  const s = supervisor({ voicemailMessage: 'Hi {{first_name}}, call us back.' });
  s.d.userSpeech(true);
  s.d.userTurn('You have reached Ada. Please leave a message after the tone.');
  t.like(s.verdicts[0], { result: 'voicemail', by: 'phrases' });
  t.is(s.windUps(), 1, 'the agent stopped talking');
  t.deepEqual(s.said, [], 'nothing said before the beep');
  s.d.callerAudio(sine(500, 1000)); // the caller is "speaking" (VAD): no silence ends the wait
  s.d.callerAudio(quiet(40));
  t.deepEqual(s.said, ['Hi Ada, call us back.']);
  t.deepEqual(s.ends, [], 'the call ends once the message has played');
  s.finish();
  await until(() => s.ends.length > 0, 5000, 'end');
  t.deepEqual(s.ends, ['voicemail']);
  t.like(s.drops[0], { left: true, after: 'beep' });
});

test('voicemail with a message and no beep: the silence after the greeting ends it; speech again restarts the wait', async (t) => {
  const s = supervisor({ voicemailMessage: 'Please call back.' });
  s.d.userSpeech(true);
  s.d.userTurn('hi this is the voicemail of ada');
  s.d.userSpeech(false);
  await new Promise((r) => setTimeout(r, 100));
  s.d.userSpeech(true); // the greeting goes on
  await new Promise((r) => setTimeout(r, 300));
  t.deepEqual(s.said, [], 'a pause shorter than the silence did not end it, speech held it');
  s.d.userSpeech(false);
  await until(() => s.said.length > 0, 5000, 'message');
  s.finish();
  await until(() => s.ends.length > 0, 5000, 'end');
  t.like(s.drops[0], { after: 'silence' });
});

test('carrier AMD: human goes on; machine_start waits for the carrier\'s end of message (a short pause is no end); machine_end_* speaks at once', async (t) => {
  let push: ((a: string, end: boolean) => void) | null = null;
  const amd = { current: async () => null, subscribe: async (cb: (a: string, e: boolean) => void) => ((push = cb), () => (push = null)), messageEnd: true };
  const human = supervisor({ amd });
  await until(() => push, 5000, 'subscribed');
  human.d.userSpeech(true);
  human.d.userTurn('one two three four five six seven eight nine ten'); // the heuristics would call this a machine
  push!('human', false);
  t.like(human.verdicts[0], { result: 'human', by: 'amd' });
  t.deepEqual(human.ends, []);

  push = null;
  const vm = supervisor({ amd, voicemailMessage: 'Call back.' });
  await until(() => push, 5000, 'subscribed');
  push!('machine_start', false);
  t.like(vm.verdicts[0], { result: 'voicemail', by: 'amd', answeredBy: 'machine_start' });
  vm.d.userSpeech(false);
  await new Promise((r) => setTimeout(r, 400)); // longer than afterGreetingSilenceMs: the carrier's end may still come
  t.deepEqual(vm.said, []);
  push!('machine_end_beep', true);
  t.deepEqual(vm.said, ['Call back.']);
  vm.finish();
  await until(() => vm.ends.length > 0, 5000, 'end');
  t.like(vm.drops[0], { after: 'carrier' });

  push = null;
  const late = supervisor({ amd, voicemailMessage: 'Call back.' });
  await until(() => push, 5000, 'subscribed');
  push!('machine_end_silence', true);
  t.deepEqual(late.said, ['Call back.'], 'the verdict came with the end of the message');

  push = null;
  const hangup = supervisor({ amd });
  await until(() => push, 5000, 'subscribed');
  push!('fax', false);
  t.deepEqual(hangup.ends, ['voicemail'], 'without a message: today\'s hang-up');
});

test('carrier AMD machine with a keypad agent: a menu is told from a mailbox by what it says; unknown leaves it to the audio', async (t) => {
  let push: ((a: string, end: boolean) => void) | null = null;
  const amd = { current: async () => null, subscribe: async (cb: (a: string, e: boolean) => void) => ((push = cb), () => (push = null)), messageEnd: false };
  const menu = supervisor({ amd, navigatesMenus: true });
  await until(() => push, 5000, 'subscribed');
  push!('machine_start', false);
  t.deepEqual(menu.verdicts, []);
  menu.d.userTurn('For billing press 1');
  t.like(menu.verdicts[0], { result: 'ivr', by: 'phrases' });
  t.deepEqual(menu.ends, []);

  push = null;
  const box = supervisor({ amd, navigatesMenus: true });
  await until(() => push, 5000, 'subscribed');
  push!('machine_start', false);
  await until(() => box.verdicts.length > 0, 5000, 'window');
  t.like(box.verdicts[0], { result: 'voicemail', by: 'amd' });
  t.deepEqual(box.ends, ['voicemail']);

  push = null;
  const unknown = supervisor({ amd });
  await until(() => push, 5000, 'subscribed');
  push!('unknown', false);
  unknown.d.userTurn('the mailbox is full');
  t.like(unknown.verdicts[0], { result: 'voicemail', by: 'phrases' });
});

test('an AMD verdict already on the row when the stream starts is applied', async (t) => {
  const { ends, verdicts } = supervisor({ amd: { current: async () => 'machine_start', subscribe: async () => () => undefined, messageEnd: false } });
  await until(() => ends.length > 0, 5000, 'verdict');
  t.like(verdicts[0], { by: 'amd', answeredBy: 'machine_start' });
});
