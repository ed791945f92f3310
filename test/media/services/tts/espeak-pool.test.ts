// The local TTS's shared eSpeak NG synthesizers (media/services/tts/espeak-pool.ts): the same audio as the
// espeak-ng command, voices chosen as the command chooses them, several requests at once, and a synthesizer that
// dies fails only what it was doing and is replaced.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { EspeakPool } from '../../../../media/services/tts/espeak-pool.ts';
import { collectPcm } from '../../../helpers/speech.ts';
import { until } from '../../../helpers/wait.ts';

const pool = new EspeakPool('python3', 2);
test.after.always(() => pool.close());

const speak = (text: string, voice: string, wpm = 175) => collectPcm(pool.synthesize(text, voice, wpm, new AbortController().signal));

function command(text: string, voice: string, wpm = 175): Int16Array {
  const wav = execFileSync('espeak-ng', ['--stdout', '-v', voice, '-s', String(wpm), text]);
  const data = wav.indexOf('data') + 8;
  return new Int16Array(wav.buffer.slice(wav.byteOffset + data, wav.byteOffset + wav.length - ((wav.length - data) % 2)));
}

test.serial('the espeak-ng command\'s audio, for a voice name, a language and a +variant', async (t) => {
  await pool.ready();
  t.is(pool.rate, 22050);
  let first = true; // the first text a synthesizer speaks: sample for sample the command's
  for (const [text, voice, wpm] of [
    ['Thank you for calling. How can I help you today?', 'en-us', 175],
    ['Your appointment is on Friday at three.', 'en-gb', 160],
    ['What time is it?', 'en-us+klatt', 150],
  ] as const) {
    const a = await speak(text, voice, wpm);
    const b = command(text, voice, wpm);
    t.true(a.length > 22050 * 0.5, `${voice}: ${a.length} samples`);
    if (first) t.deepEqual(Array.from(a), Array.from(b), voice);
    // a long-lived engine's later sentences differ from a fresh process's by a few ms of pause (state libespeak-ng
    // carries from one text to the next), nothing else
    else t.true(Math.abs(a.length - b.length) < b.length * 0.05, `${voice}: ${a.length} vs ${b.length} samples`);
    first = false;
  }
});

test.serial('requests at once are all answered; an unknown voice fails only its own request', async (t) => {
  const texts = Array.from({ length: 12 }, (_, i) => `This is caller number ${i + 1}.`);
  const [bad, ...outs] = await Promise.allSettled([speak('hello', 'xx-no-such-voice'), ...texts.map((x) => speak(x, 'en-us'))]);
  t.is(bad!.status, 'rejected');
  t.regex(String((bad as PromiseRejectedResult).reason), /no voice 'xx-no-such-voice'/);
  for (const o of outs) t.true(o.status === 'fulfilled' && o.value.length > 22050 * 0.8);
  t.deepEqual(pool.load, [0, 0]);
});

test.serial('abort stops a long synthesis at once; a synthesizer that dies fails its request and is replaced', async (t) => {
  const ac = new AbortController();
  let got = 0;
  for await (const p of pool.synthesize('This sentence goes on and on. '.repeat(60), 'en-us', 175, ac.signal)) {
    got += p.length;
    ac.abort();
  }
  t.true(got < 22050, `${got} samples before the abort`);
  // the aborted request is cleared once its synthesizer has stopped
  await until(() => pool.load.every((n) => n === 0), { what: 'the aborted request to be cleared', timeoutMs: 10_000, everyMs: 20 });
  t.deepEqual(pool.load, [0, 0]);

  const long = speak('And this one is long enough to be killed halfway through. '.repeat(400), 'en-us');
  const i = pool.workers.findIndex((w) => w.pending.size > 0);
  t.true(i >= 0);
  const pid = pool.workers[i]!.child.pid!;
  process.kill(pid, 'SIGKILL');
  const err = await long.then(() => null, (e: Error) => e);
  t.regex(String(err?.message), /exited/);
  await until(() => pool.workers[i]!.child.pid !== pid, { what: 'a new synthesizer process', timeoutMs: 5000, everyMs: 50 });
  t.not(pool.workers[i]!.child.pid, pid);
  await pool.workers[i]!.ready;
  t.true((await speak('Back again.', 'en-us')).length > 0);
});
