// The local STT's shared recogniser pool: utterances of many calls multiplexed on one PocketSphinx process, each
// with its agent's own vocabulary; silence opens no utterance; more utterances than decoders wait and catch up;
// a recogniser that dies is restarted and the call goes on.
import test from 'ava';
import { until } from '../../helpers/wait.ts';
process.env.LOCAL_STT_WORKERS = '1'; // one recogniser process: every utterance below shares it
const { concatInt16 } = await import('../../../media/audio/pcm.ts');
const { callerSpeech } = await import('../../helpers/speech.ts');
const { createLocalStt, resolveBackend, sharedPool } = await import('../../../media/services/stt/local.ts');
type SttEvent = import('../../../media/services/types.ts').SttEvent;

// Killing a recogniser needs the pool of PocketSphinx 5 processes (Python); Debian's pocketsphinx_continuous has none.
const pooled = (await resolveBackend().catch(() => null))?.kind === 'python';

const DENTAL = 'You book dental appointments: cleaning, whitening, a filling with Doctor Patel.';
const PIZZA = 'You take pizza orders: margherita, pepperoni, large or small, delivery address.';

/** Open a stream, write its audio in 20 ms frames (all at once), finalize, resolve with its events. */
async function recognise(stt: ReturnType<typeof createLocalStt>, audio: Int16Array) {
  const events: SttEvent[] = [];
  let done!: () => void;
  const final = new Promise<void>((r) => (done = r));
  const s = await stt.open({ languages: ['en'], keyterms: [], onEvent: (e) => (events.push(e), e.type === 'final' || e.type === 'error' ? done() : undefined) });
  for (let o = 0; o < audio.length; o += 320) s.write(audio.subarray(o, o + 320));
  s.finalize();
  await Promise.race([final, new Promise((r) => setTimeout(r, 60_000))]);
  await s.close();
  return events;
}

test.serial('two agents, one recogniser process: each call is recognised with its own vocabulary', async (t) => {
  const dental = createLocalStt('pocketsphinx', { corpus: [DENTAL] });
  const pizza = createLocalStt('pocketsphinx', { corpus: [PIZZA] });
  const [a, b] = await Promise.all([callerSpeech('I would like a cleaning with doctor patel', { voice: 'en-us+klatt' }), callerSpeech('a large pepperoni pizza please', { voice: 'en-us+klatt' })]);
  const silence = new Int16Array(8000);
  const [ea, eb] = await Promise.all([recognise(dental, concatInt16([silence, a, silence])), recognise(pizza, concatInt16([silence, b, silence]))]);
  const text = (es: SttEvent[]) => es.filter((e) => e.type === 'final').map((e) => (e as { text: string }).text).join(' ');
  t.regex(text(ea), /cleaning/);
  t.regex(text(ea), /patel/);
  t.regex(text(eb), /pepperoni/);
  t.is(sharedPool().pids.length, 1);
});

test.serial('silence opens no utterance; fourteen calls speaking at once all get their final', async (t) => {
  const stt = createLocalStt('pocketsphinx', { corpus: [DENTAL] });
  const quiet = await stt.open({ languages: ['en'], keyterms: [], onEvent: () => {} });
  for (let i = 0; i < 100; i++) quiet.write(new Int16Array(320).map((_, k) => (k % 5) - 2)); // 2 s of near-silence
  t.deepEqual(sharedPool().load, [0]);
  await quiet.close();

  const speech = await callerSpeech('I need to cancel my appointment for tomorrow', { voice: 'en-us+klatt' });
  const results = await Promise.all(Array.from({ length: 14 }, () => recognise(stt, speech)));
  for (const events of results) {
    const final = events.find((e) => e.type === 'final') as { text: string } | undefined;
    t.truthy(final, JSON.stringify(events));
    t.regex(final!.text, /cancel/);
  }
  t.deepEqual(sharedPool().load, [0]);
});

(pooled ? test.serial : test.skip)('a recogniser that dies is restarted: the call gets a non-fatal error, then is recognised again', async (t) => {
  const stt = createLocalStt('pocketsphinx', { corpus: [DENTAL] });
  const speech = await callerSpeech('I would like a cleaning with doctor patel', { voice: 'en-us+klatt' });
  const events: SttEvent[] = [];
  const s = await stt.open({ languages: ['en'], keyterms: [], onEvent: (e) => events.push(e) });
  for (let o = 0; o < speech.length / 2; o += 320) s.write(speech.subarray(o, o + 320));
  const pid = sharedPool().pids[0]!;
  if (!(pid > 0)) throw new Error(`no recogniser process to kill (pid ${pid})`); // process.kill(0) would kill this whole process group
  process.kill(pid, 'SIGKILL');
  await until(() => events.some((e) => e.type === 'error'), { what: 'the error event', timeoutMs: 30_000, everyMs: 50 });
  const err = events.find((e) => e.type === 'error') as Extract<SttEvent, { type: 'error' }>;
  t.false(err.error.fatal);
  await until(() => sharedPool().pids[0] !== pid, { what: 'a new recogniser process', timeoutMs: 30_000, everyMs: 50 });
  t.not(sharedPool().pids[0], pid);
  await sharedPool().ready();
  for (let o = 0; o < speech.length; o += 320) s.write(speech.subarray(o, o + 320));
  s.finalize();
  await until(() => events.some((e) => e.type === 'final'), { what: 'the final transcript', timeoutMs: 30_000, everyMs: 50 });
  const final = events.find((e) => e.type === 'final') as { text: string } | undefined;
  t.regex(final?.text ?? '', /cleaning/);
  await s.close();
});
