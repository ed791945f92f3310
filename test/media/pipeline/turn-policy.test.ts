// Frames in / frames out: the turn model's policy (media/pipeline/turn/policy.ts) between the VAD and the STT, with a
// turn model whose answers the test gives one by one, and the pacer's pause / resume of an utterance (the false
// interruption's mechanics).
import test from 'ava';
import { harness } from '../../../media/pipeline/processor.ts';
import { TurnPolicyStage, STOP_WINDOW_MS } from '../../../media/pipeline/turn/policy.ts';
import type { Frame } from '../../../media/pipeline/frames.ts';
import type { TurnDecision, TurnModel } from '../../../media/services/types.ts';
import { Pacer } from '../../../media/pipeline/pacer.ts';
import { FrameClock } from '../../../media/pipeline/clock.ts';
import { SpeechHandle } from '../../../media/session/speech.ts';
import { until } from '../../helpers/calls.ts';

/** A turn model that answers each decide() when the test says so. */
class AnsweredModel implements TurnModel {
  readonly id = 'test-model';
  readonly asked: Int16Array[] = [];
  private answers: Array<(d: TurnDecision | Error) => void> = [];
  constructor(private readonly load: Promise<void> = Promise.resolve()) {}
  ready(): Promise<void> {
    return this.load;
  }
  decide(pcm: Int16Array): Promise<TurnDecision> {
    this.asked.push(pcm);
    return new Promise((ok, fail) => this.answers.push((d) => (d instanceof Error ? fail(d) : ok(d))));
  }
  answer(complete: boolean | Error): void {
    const next = this.answers.shift();
    if (!next) throw new Error('nothing asked');
    next(complete instanceof Error ? complete : { complete, probability: complete ? 0.9 : 0.1, cpuMs: 1 });
  }
  get waiting(): number {
    return this.answers.length;
  }
}

const audio = (ms: number, v = 3000) => ({ type: 'audioIn' as const, pcm: new Int16Array((ms / 1000) * 16000).fill(v) });
const kinds = (frames: Frame[]) => frames.filter((f) => f.type !== 'audioIn').map((f) => f.type);
const flush = () => new Promise((r) => setImmediate(r));

test('"incomplete" keeps the turn open across a pause; "complete" after the rest ends it once, with the whole turn heard', async (t) => {
  const model = new AnsweredModel();
  const stage = new TurnPolicyStage(model, { maxSilenceMs: 60_000 });
  const { pipeline, out } = harness(stage);
  pipeline.push(audio(1000, 0)); // before the turn: only its last 0.7 s is the turn's
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push(audio(1200));
  pipeline.push({ type: 'userStoppedSpeaking' });
  t.is(model.waiting, 1, 'the VAD stop asks the model');
  t.is(model.asked[0]!.length, ((700 + 1200) / 1000) * 16000);
  model.answer(false);
  await flush();
  pipeline.push(audio(200, 0));
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push(audio(800));
  pipeline.push({ type: 'userStoppedSpeaking' });
  t.is(model.asked[1]!.length, ((700 + 1200 + 200 + 800) / 1000) * 16000, 'the second decision hears the whole turn');
  model.answer(true);
  await flush();
  t.deepEqual(kinds(out.frames), ['userStartedSpeaking', 'userPaused', 'userResumed', 'userPaused', 'userStoppedSpeaking']);
  const stop = out.frames.find((f) => f.type === 'userStoppedSpeaking') as Extract<Frame, { type: 'userStoppedSpeaking' }>;
  t.is(stop.turnModel?.model, 'test-model');
  t.true(stop.turnModel!.heldMs >= 0);
  t.is(out.frames.filter((f) => f.type === 'audioIn').length, 4, 'audio passes on at once');
});

test('silence past the cap ends the turn whatever the model said', async (t) => {
  const model = new AnsweredModel();
  const stage = new TurnPolicyStage(model, { maxSilenceMs: STOP_WINDOW_MS + 80 });
  const { pipeline, out } = harness(stage);
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push(audio(500));
  pipeline.push({ type: 'userStoppedSpeaking' });
  model.answer(false);
  await until(() => out.frames.some((f) => f.type === 'userStoppedSpeaking'), 5000, 'the cap');
  t.deepEqual(kinds(out.frames), ['userStartedSpeaking', 'userPaused', 'userStoppedSpeaking']);
});

test('one decision at a time: one that comes back after the caller went on is dropped, the next pause is asked again', async (t) => {
  const model = new AnsweredModel();
  const decisions: Array<{ stale: boolean }> = [];
  const stage = new TurnPolicyStage(model, { maxSilenceMs: 60_000, onDecision: (d) => decisions.push(d) });
  const { pipeline, out } = harness(stage);
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push(audio(500));
  pipeline.push({ type: 'userStoppedSpeaking' });
  pipeline.push({ type: 'userStartedSpeaking' }); // resumes before the model answered
  pipeline.push(audio(300));
  pipeline.push({ type: 'userStoppedSpeaking' });
  t.is(model.waiting, 1, 'no second inference while one is out');
  model.answer(true); // "complete" for the first pause: stale, the caller went on
  await flush();
  t.false(out.frames.some((f) => f.type === 'userStoppedSpeaking'));
  t.is(model.waiting, 1, 'asked again for the pause that is waiting');
  model.answer(true);
  await flush();
  t.deepEqual(decisions.map((d) => d.stale), [true, false]);
  t.deepEqual(kinds(out.frames), ['userStartedSpeaking', 'userPaused', 'userResumed', 'userPaused', 'userStoppedSpeaking']);
});

test('a model that fails ends that pause like the VAD alone would; a model that cannot load leaves the VAD stops as they are', async (t) => {
  const failing = new AnsweredModel();
  const errors: unknown[] = [];
  const stage = new TurnPolicyStage(failing, { maxSilenceMs: 60_000, vadOnlyStopMs: STOP_WINDOW_MS + 50, onFailure: (e) => errors.push(e) });
  const { pipeline, out } = harness(stage);
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push(audio(400));
  pipeline.push({ type: 'userStoppedSpeaking' });
  failing.answer(new Error('inference failed'));
  await until(() => out.frames.some((f) => f.type === 'userStoppedSpeaking'), 5000, 'the VAD-only window');
  t.is(errors.length, 1);

  const unloadable = new AnsweredModel(Promise.reject(new Error('model file missing')));
  const vadCalls: number[] = [];
  const off = new TurnPolicyStage(unloadable);
  t.is(await off.activate({ setRedemptionMs: (ms) => vadCalls.push(ms) }), 'model file missing');
  t.deepEqual(vadCalls, [], 'the VAD keeps its own stop window');
  const h = harness(off);
  h.pipeline.push({ type: 'userStartedSpeaking' });
  h.pipeline.push({ type: 'userStoppedSpeaking' });
  t.deepEqual(kinds(h.out.frames), ['userStartedSpeaking', 'userStoppedSpeaking']);
  t.is(unloadable.asked.length, 0);

  const on = new TurnPolicyStage(new AnsweredModel());
  t.is(await on.activate({ setRedemptionMs: (ms) => vadCalls.push(ms) }), null);
  t.deepEqual(vadCalls, [STOP_WINDOW_MS], 'a ready model shortens the VAD stop window');
});

test('pacer: a paused utterance sends nothing; resumed, it plays on from the audio the caller had not heard', (t) => {
  let now = 1000;
  const clock = new FrameClock(20, () => now);
  const sent: Int16Array[] = [];
  const pacer = new Pacer({ clock, leadMs: 100, send: (pcm) => sent.push(pcm.slice()) });
  const { pipeline } = harness(pacer);
  const advance = (ms: number) => {
    for (let i = 0; i < ms / 20; i++) {
      now += 20;
      pacer.tick(now);
    }
  };
  const s = new SpeechHandle('reply', true);
  s.addText('one two three four');
  // 1 s of numbered samples: frame k (480 samples) holds the value k
  const pcm = new Int16Array(24000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.floor(i / 480);
  s.chunks[0]!.samples = pcm.length;
  pipeline.push({ type: 'audioOut', pcm, speech: s, chunk: 0 });
  pipeline.push({ type: 'flush', speech: s });
  advance(200);
  const sentBefore = sent.length;
  const heard = s.chunks[0]!.played / 480;
  t.true(sentBefore > heard, 'frames of the lead were sent but not heard yet');
  s.pause();
  pacer.pause(s);
  advance(400);
  t.is(sent.length, sentBefore, 'nothing of it is sent while paused');
  t.is(s.state, 'speaking');
  s.resume();
  pacer.resume(s);
  advance(1200);
  const after = sent.slice(sentBefore).map((f) => f[0]!);
  // it goes on at the first frame the caller had not heard, then every frame once, in order
  t.deepEqual(after, Array.from({ length: 50 - heard }, (_, k) => heard + k));
  t.is(s.state, 'played');
  t.is(s.chunks[0]!.played, pcm.length);
  t.is(s.resumes, 1);
});
