// The Silero VAD at scale: many calls' windows run as one batched inference, each call keeping its own recurrent
// state, with the same decisions as one inference per window; plainly silent windows skip inference.
import test from 'ava';
import { concatInt16 } from '../../../media/audio/pcm.ts';
import { createVad, vadStats, type VadOptions } from '../../../media/vad/index.ts';
import { callerSpeech } from '../../helpers/speech.ts';

/** Feed streams frame by frame, all streams per 20 ms step concurrently (as live calls do); collect per-window results. */
async function run(audios: Int16Array[], opts: VadOptions) {
  const vads = await Promise.all(audios.map(() => createVad(opts)));
  const out = audios.map(() => ({ probs: [] as number[], starts: [] as number[], ends: [] as number[] }));
  const longest = Math.max(...audios.map((a) => a.length));
  for (let o = 0; o < longest; o += 320) {
    await Promise.all(
      vads.map(async (v, i) => {
        const frame = audios[i]!.subarray(o, o + 320);
        if (!frame.length) return;
        const r = await v.process(frame);
        out[i]!.probs.push(r.probability);
        if (r.speechStart) out[i]!.starts.push(o);
        if (r.speechEnd) out[i]!.ends.push(o);
      }),
    );
  }
  for (const v of vads) v.close();
  return out;
}

test('batched inference gives every call the decisions and probabilities it gets alone', async (t) => {
  const sentences = ['Hello, I would like to book an appointment.', 'What time do you open tomorrow?', 'No thank you, that is all.'];
  const speech = await Promise.all(sentences.map((s) => callerSpeech(s, { voice: 'en-us+klatt' })));
  // six callers: different sentences at different offsets, so each batch mixes speech and silence of many calls
  const audios = Array.from({ length: 6 }, (_, i) =>
    concatInt16([new Int16Array(1600 * (i + 1)), speech[i % 3]!, new Int16Array(16000), speech[(i + 1) % 3]!, new Int16Array(16000)]),
  );
  const alone = await run(audios, { batch: false, silenceRms: 0 });
  const batched = await run(audios, { batch: true, silenceRms: 0 });
  for (let i = 0; i < audios.length; i++) {
    t.deepEqual(batched[i]!.starts, alone[i]!.starts, `call ${i} speech starts`);
    t.deepEqual(batched[i]!.ends, alone[i]!.ends, `call ${i} speech ends`);
    t.is(alone[i]!.starts.length, 2, `call ${i} has two utterances`);
    const maxDiff = Math.max(...alone[i]!.probs.map((p, k) => Math.abs(p - batched[i]!.probs[k]!)));
    t.true(maxDiff < 1e-3, `call ${i}: probabilities differ by ${maxDiff}`);
  }
});

test('plainly silent windows skip inference; speech after silence is still detected', async (t) => {
  const speech = await callerSpeech('Hello, I would like to book an appointment.', { voice: 'en-us+klatt' });
  const hiss = new Int16Array(16000 * 2).map((_, i) => ((i * 7919) % 17) - 8); // ≈ −72 dBFS
  const before = vadStats.inferred;
  const silentOnly = await run([hiss], {});
  t.is(vadStats.inferred - before, 0, 'no inference on two seconds of faint hiss');
  t.deepEqual(silentOnly[0]!.starts, []);
  const [gated] = await run([concatInt16([hiss, speech, hiss])], {});
  const [full] = await run([concatInt16([hiss, speech, hiss])], { silenceRms: 0 });
  t.is(gated!.starts.length, 1);
  t.is(gated!.ends.length, 1);
  // the same start (within one window); the end comes at most 200 ms earlier (the model's probability decays over a
  // few windows of hiss, the gate calls hiss silence at once), never later
  t.true(Math.abs(gated!.starts[0]! - full!.starts[0]!) <= 512, `start ${gated!.starts[0]} vs ${full!.starts[0]}`);
  const endShift = full!.ends[0]! - gated!.ends[0]!;
  t.true(endShift >= 0 && endShift <= 3200, `end ${gated!.ends[0]} vs ${full!.ends[0]}`);
});

test('feed(): frames given all at once come back in order with the results process() gives one by one; a silent frame answers at once', async (t) => {
  const speech = await callerSpeech('What time do you open tomorrow?', { voice: 'en-us+klatt' });
  const audio = concatInt16([new Int16Array(8000), speech, new Int16Array(16000), speech, new Int16Array(16000)]);
  const [oneByOne] = await run([audio], {});
  const vad = await createVad({});
  // a frame of digital silence on an idle stream: no window needs the model, so the result is there before feed returns
  const sync: number[] = [];
  vad.feed(new Int16Array(320), (r) => sync.push(r.probability), (err) => t.fail(String(err)));
  t.deepEqual(sync, [0]);
  vad.reset();
  // every frame at once, without waiting: the frames behind an inference queue up and come back in order
  const got: Array<{ k: number; p: number; start: boolean; end: boolean }> = [];
  const frames = Math.ceil(audio.length / 320);
  await new Promise<void>((resolve, reject) => {
    for (let k = 0; k < frames; k++) {
      vad.feed(audio.subarray(k * 320, k * 320 + 320), (r) => {
        got.push({ k, p: r.probability, start: !!r.speechStart, end: !!r.speechEnd });
        if (got.length === frames) resolve();
      }, reject);
    }
  });
  vad.close();
  t.deepEqual(got.map((g) => g.k), Array.from({ length: frames }, (_, k) => k), 'in frame order');
  t.deepEqual(got.flatMap((g) => (g.start ? [g.k * 320] : [])), oneByOne!.starts);
  t.deepEqual(got.flatMap((g) => (g.end ? [g.k * 320] : [])), oneByOne!.ends);
  t.is(oneByOne!.starts.length, 2);
  const maxDiff = Math.max(...got.map((g, k) => Math.abs(g.p - oneByOne!.probs[k]!)));
  t.true(maxDiff < 1e-3, `probabilities differ by ${maxDiff}`);
});
