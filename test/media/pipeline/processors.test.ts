// Frames-in / frames-out tests of the pipeline processors: chunker, TTS stage, pacer (on a manual clock),
// utterance truncation, turn manager, mixer, recorder, noise gate.
import test from 'ava';
import { harness } from '../../../media/pipeline/processor.ts';
import { SentenceChunker, splitSentences } from '../../../media/pipeline/chunker.ts';
import { TtsStage } from '../../../media/pipeline/tts-stage.ts';
import { Pacer } from '../../../media/pipeline/pacer.ts';
import { FrameClock } from '../../../media/pipeline/clock.ts';
import { Mixer } from '../../../media/pipeline/mixer.ts';
import { NoiseGateStage } from '../../../media/pipeline/input-stages.ts';
import { TurnManager } from '../../../media/pipeline/turn/manager.ts';
import { MemorySink, Recorder } from '../../../media/pipeline/recorder.ts';
import { createNoiseGate } from '../../../media/noise/index.ts';
import { ConversationContext } from '../../../media/pipeline/context.ts';
import { backgroundSource } from '../../../media/sounds/index.ts';
import { LinearResampler } from '../../../core/audio/resample.ts';
import { rms } from '../../../media/audio/pcm.ts';
import { SpeechHandle, cutWords } from '../../../media/session/speech.ts';
import { FakeTts } from '../../fakes/engines.ts';
import type { Frame } from '../../../media/pipeline/frames.ts';
import wavefile from 'wavefile';

const texts = (frames: Frame[]) => frames.filter((f) => f.type === 'ttsText').map((f) => (f as { text: string }).text);

test('chunker: the first chunk is released at a clause boundary, later ones per sentence; flush releases the rest', (t) => {
  const { pipeline, out } = harness(new SentenceChunker());
  const s = new SpeechHandle('reply', true);
  for (const d of ['Sure, ', 'I can help ', 'with that. ', 'Your order ', 'ships on 3.5 ', 'days. Then', ' we call'])
    pipeline.push({ type: 'llmText', delta: d, speech: s });
  t.deepEqual(texts(out.frames), ['Sure, I can help with that.', 'Your order ships on 3.5 days.']);
  pipeline.push({ type: 'flush', speech: s });
  t.deepEqual(texts(out.frames).slice(2), ['Then we call']);
  t.is(out.frames[out.frames.length - 1]!.type, 'flush');
  t.deepEqual(splitSentences('Hi! How are you? Fine.'), ['Hi!', 'How are you?', 'Fine.']);
});

test('chunker drops text of an interrupted utterance', (t) => {
  const { pipeline, out } = harness(new SentenceChunker());
  const s = new SpeechHandle('reply', true);
  pipeline.push({ type: 'llmText', delta: 'Hello there, this is', speech: s });
  s.interrupt();
  pipeline.push({ type: 'llmText', delta: ' more. And more.', speech: s });
  pipeline.push({ type: 'flush', speech: s });
  t.deepEqual(texts(out.frames), ['Hello there,']);
  t.false(out.frames.some((f) => f.type === 'flush'));
});

test('TTS stage synthesizes chunks in order, tags audio with its chunk, and forwards the flush after the audio', async (t) => {
  const tts = new FakeTts({ firstByteMs: 5, msPerChar: 10 });
  const stage = new TtsStage(tts);
  const { pipeline, out } = harness(stage);
  const s = new SpeechHandle('reply', true);
  pipeline.push({ type: 'ttsText', text: 'First sentence here.', speech: s });
  pipeline.push({ type: 'ttsText', text: 'Second.', speech: s });
  pipeline.push({ type: 'flush', speech: s });
  await new Promise<void>((resolve) => {
    const check = () => (out.frames.some((f) => f.type === 'flush') ? resolve() : setTimeout(check, 5));
    check();
  });
  const kinds = out.frames.map((f) => (f.type === 'audioOut' ? `a${f.chunk}` : f.type));
  t.is(kinds[kinds.length - 1], 'flush');
  t.deepEqual([...new Set(kinds.slice(0, -1))], ['a0', 'a1']);
  t.deepEqual(tts.texts, ['First sentence here.', 'Second.']);
  t.true(s.textComplete);
  t.is(s.chunks[0]!.samples, Math.max(4800, 20 * 10 * 24));
});

function manualPacer(opts: { leadMs?: number; mixer?: Mixer | null } = {}) {
  let now = 1000;
  const clock = new FrameClock(20, () => now);
  const sent: Array<{ pcm: Int16Array; at: number }> = [];
  const played: SpeechHandle[] = [];
  const pacer = new Pacer({ clock, leadMs: opts.leadMs ?? 100, mixer: opts.mixer ?? null, send: (pcm, at) => sent.push({ pcm, at }), onSpeechPlayed: (s) => played.push(s) });
  const { pipeline } = harness(pacer);
  return {
    pipeline,
    pacer,
    sent,
    played,
    get now() {
      return now;
    },
    set now(v: number) {
      now = v;
    },
    advance(ms: number) {
      for (let i = 0; i < ms / 20; i++) {
        now += 20;
        pacer.tick(now);
      }
    },
  };
}

test('pacer: 20 ms frames, never more than the lead ahead of real time; an utterance ends when its audio has played', (t) => {
  const p = manualPacer({ leadMs: 100 });
  const s = new SpeechHandle('reply', true);
  s.addText('one two three four');
  const pcm = new Int16Array(24000).fill(1000); // 1 s
  s.chunks[0]!.samples = pcm.length;
  p.pipeline.push({ type: 'audioOut', pcm, speech: s, chunk: 0 });
  p.pipeline.push({ type: 'flush', speech: s });
  t.is(p.sent.length, 5, 'a lead of 100 ms is sent at once');
  t.true(p.sent.every((f) => f.pcm.length === 480));
  p.advance(200);
  t.is(p.sent.length, 15);
  t.is(s.state, 'speaking');
  p.advance(1000);
  t.is(p.sent.length, 50);
  t.is(s.state, 'played');
  t.deepEqual(p.played, [s]);
  // frame times are consecutive 20 ms slots
  t.true(p.sent.every((f, i) => i === 0 || f.at - p.sent[i - 1]!.at === 20));
});

test('pacer: audio that arrives between ticks while playing waits for its tick (frames stay on the 20 ms grid); after idle it leaves at once', (t) => {
  const p = manualPacer({ leadMs: 100 });
  const s = new SpeechHandle('reply', true);
  s.addText('one two');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(2400).fill(1), speech: s, chunk: 0 }); // 100 ms
  t.is(p.sent.length, 5, 'the first audio after idle leaves at once, up to the lead');
  p.advance(20); // the tick has nothing to send: the queue is empty
  t.is(p.sent.length, 5);
  const tickAt = p.now;
  // more audio lands 7 ms after that tick: the frame it would have sent then goes now (catch-up) …
  p.now = tickAt + 7;
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(4800).fill(2), speech: s, chunk: 0 }); // 200 ms
  t.is(p.sent.length, 6, 'only what the latest tick would have sent');
  // … and audio landing later in the same tick period sends nothing ahead of its tick
  p.now = tickAt + 12;
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(4800).fill(3), speech: s, chunk: 0 });
  t.is(p.sent.length, 6, 'the next frame waits for its tick');
  p.now = tickAt; // advance() ticks on the 20 ms grid from here
  p.advance(20);
  t.is(p.sent.length, 7, 'one frame per tick');
  p.advance(40);
  t.is(p.sent.length, 9);
  t.true(p.sent.every((f, i) => i === 0 || f.at - p.sent[i - 1]!.at === 20), 'consecutive 20 ms slots');
});

test('pacer: an utterance whose audio runs out mid-speech counts one underrun when it resumes; a new utterance does not', (t) => {
  const p = manualPacer({ leadMs: 100 });
  const s = new SpeechHandle('reply', true);
  s.addText('one two');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(4800).fill(1), speech: s, chunk: 0 }); // 200 ms
  p.advance(100);
  t.is(p.pacer.underruns, 0, 'audio kept coming: no underrun');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(2400).fill(2), speech: s, chunk: 0 }); // arrives in time
  p.advance(300); // everything played, the utterance not finished: the pacer waits for more
  t.is(p.pacer.underruns, 0, 'waiting is not an underrun until audio resumes');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(2400).fill(3), speech: s, chunk: 0 });
  t.is(p.pacer.underruns, 1, 'the audio resumed after a gap');
  p.pipeline.push({ type: 'flush', speech: s });
  p.advance(300);
  const next = new SpeechHandle('reply', true);
  next.addText('three');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(2400).fill(4), speech: next, chunk: 0 });
  p.advance(200);
  t.is(p.pacer.underruns, 1, 'a new utterance after silence is not an underrun');
});

test('pacer + speech: an interruption drops queued audio at once and the utterance keeps only what was played', (t) => {
  const p = manualPacer({ leadMs: 100 });
  const s = new SpeechHandle('reply', true);
  s.addText('alpha beta gamma delta');
  s.addText('epsilon zeta eta theta');
  const a = new Int16Array(24000).fill(1000);
  const b = new Int16Array(24000).fill(1000);
  s.chunks[0]!.samples = a.length;
  s.chunks[1]!.samples = b.length;
  p.pipeline.push({ type: 'audioOut', pcm: a, speech: s, chunk: 0 });
  p.pipeline.push({ type: 'audioOut', pcm: b, speech: s, chunk: 1 });
  p.advance(500); // half of chunk 0 has played
  s.interrupt();
  p.pipeline.push({ type: 'interrupt', by: 'user' });
  const count = p.sent.length;
  p.advance(500);
  t.is(p.sent.length, count, 'nothing more is sent after the interruption');
  t.is(s.playedText(), 'alpha beta');
  t.is(p.pacer.queuedMs, 0);
  t.is(cutWords('one two three', 0.01), 'one');
});

test('pacer holds back a partial frame until more audio of the utterance arrives, and pads the last one', (t) => {
  const p = manualPacer();
  const s = new SpeechHandle('reply', true);
  s.addText('x');
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(300).fill(5), speech: s, chunk: 0 });
  t.is(p.sent.length, 0);
  p.pipeline.push({ type: 'audioOut', pcm: new Int16Array(300).fill(5), speech: s, chunk: 0 });
  t.is(p.sent.length, 1);
  p.pipeline.push({ type: 'flush', speech: s });
  t.is(p.sent.length, 2);
  t.is(p.sent[1]!.pcm[119], 5);
  t.is(p.sent[1]!.pcm[120], 0);
});

test('pacer frames carry the audio in order across chunk boundaries (whole frames inside a chunk are views of it)', (t) => {
  const p = manualPacer({ leadMs: 100 });
  const s = new SpeechHandle('reply', true);
  s.addText('a');
  s.addText('b');
  const a = new Int16Array(700).map((_, i) => i);
  const b = new Int16Array(700).map((_, i) => 1000 + i);
  p.pipeline.push({ type: 'audioOut', pcm: a, speech: s, chunk: 0 });
  p.pipeline.push({ type: 'audioOut', pcm: b, speech: s, chunk: 1 });
  p.pipeline.push({ type: 'flush', speech: s });
  p.advance(100);
  const out = p.sent.flatMap((f) => [...f.pcm]);
  t.deepEqual(out.slice(0, 1400), [...a, ...b]);
  t.true(out.slice(1400).every((v) => v === 0), 'the last frame is padded with silence');
  t.is(p.sent.length, 3);
  t.deepEqual([...a], [...new Int16Array(700).map((_, i) => i)], 'the chunks themselves are left as they were');
  p.advance(100);
  t.is(s.state, 'played');
});

test('frame clock: poll() runs a tick that is due at once (on its nominal time) and nothing before it is due', (t) => {
  let now = 1000;
  const clock = new FrameClock(20, () => now);
  const ticks: number[] = [];
  const member = { tick: (at: number) => ticks.push(at) };
  clock.add(member);
  clock.poll();
  t.deepEqual(ticks, [], 'not due yet');
  now = 1025;
  clock.poll();
  t.deepEqual(ticks, [1020]);
  clock.poll();
  t.deepEqual(ticks, [1020], 'the next tick is due at 1040');
  now = 1041;
  clock.poll();
  t.deepEqual(ticks, [1020, 1040]);
  clock.delete(member);
  now = 2000;
  clock.poll();
  t.deepEqual(ticks, [1020, 1040], 'a clock without members does not tick');
});

test('mixer: disabled sections leave frames untouched and send nothing in silence; background flows continuously', (t) => {
  const m = new Mixer(480);
  const frame = new Int16Array(480).fill(100);
  t.is(m.mix(frame), frame);
  t.is(m.mix(null), null);
  t.false(m.active);
  m.setBackground(backgroundSource({ sound: 'library', volume: 0.08 }));
  const bed = m.mix(null)!;
  t.true(rms(bed) > 0);
  const p = manualPacer({ mixer: m });
  p.advance(200);
  t.true(p.sent.length >= 10, 'background frames flow without speech');
  m.overlay(new Int16Array(960).fill(3000), 1);
  t.true(rms(m.mix(null)!) > rms(bed));
});

test('turn manager: VAD stop + final ends the turn; a final during speech waits for the stop; empty turns are ignored', async (t) => {
  const { pipeline, out } = harness(new TurnManager({ sttTurnDetection: false, trailingFinalMs: 20, finalTimeoutMs: 50 }));
  const turns = () => out.frames.filter((f) => f.type === 'turnEnd').map((f) => (f as { text: string }).text);
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push({ type: 'transcript', text: 'hello', final: true });
  t.deepEqual(turns(), []);
  pipeline.push({ type: 'userStoppedSpeaking' });
  pipeline.push({ type: 'transcript', text: 'world', final: true });
  t.deepEqual(turns(), ['hello world']);
  // a cough: speech with no transcript
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push({ type: 'userStoppedSpeaking' });
  await new Promise((r) => setTimeout(r, 80));
  t.deepEqual(turns(), ['hello world']);
  // no final ever arrives: the last interim is used
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push({ type: 'transcript', text: 'are you', final: false });
  pipeline.push({ type: 'userStoppedSpeaking' });
  await new Promise((r) => setTimeout(r, 80));
  t.deepEqual(turns(), ['hello world', 'are you']);
});

test('turn manager with STT turn detection: only the engine end-of-turn ends the turn', (t) => {
  const { pipeline, out } = harness(new TurnManager({ sttTurnDetection: true, trailingFinalMs: 20, finalTimeoutMs: 50 }));
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push({ type: 'transcript', text: 'book a table', final: true });
  pipeline.push({ type: 'userStoppedSpeaking' });
  t.false(out.frames.some((f) => f.type === 'turnEnd'));
  pipeline.push({ type: 'turnEnd', text: 'book a table' });
  t.deepEqual(out.frames.filter((f) => f.type === 'turnEnd').map((f) => (f as { text: string }).text), ['book a table']);
});

test('context: tool results stay next to their call even if the caller spoke meanwhile; empty interrupted replies are pruned', (t) => {
  const c = new ConversationContext('sys');
  c.addUser('hi');
  const a = c.addAssistant('');
  a.toolCalls = [{ id: 't1', name: 'x', arguments: '{}' }];
  c.addUser('hello?');
  c.addToolResult('t1', 'x', 'r');
  c.addAssistant('');
  t.deepEqual(c.forLlm().map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'user']);
  c.addUser('again');
  t.is(c.messages[c.messages.length - 1]!.role, 'user');
});

test('recorder: caller and agent on one timeline in a 24 kHz WAV', async (t) => {
  const sink = new MemorySink();
  const r = new Recorder(0, sink);
  r.addCaller(new Int16Array(16000).fill(2000), 1000); // 1 s of caller, arriving at t=1 s
  r.addAgent(new Int16Array(480).fill(3000), 500); // agent frame playing at 0.5 s, while the caller talks
  await r.finish();
  const wav = new wavefile.WaveFile(sink.wav());
  t.is((wav.fmt as { sampleRate: number }).sampleRate, 24000);
  const samples = wav.getSamples(false, Int16Array) as unknown as Int16Array;
  t.true(samples.length >= 23990, String(samples.length));
  t.is(samples[Math.round(0.5 * 24000) + 10], 5000, 'both sides mixed where they overlap');
  t.is(samples[Math.round(0.5 * 24000) + 490], 2000);
  t.is(samples[100], 2000);
});

test('resampler keeps phase across blocks (16 kHz → 24 kHz gives 1.5× samples)', (t) => {
  const r = new LinearResampler(16000, 24000);
  let n = 0;
  for (let i = 0; i < 50; i++) n += r.process(new Int16Array(320).fill(100)).length;
  t.true(Math.abs(n - 24000) <= 2, String(n));
  // written into a scratch array: the same samples
  const x = new LinearResampler(16000, 24000);
  const y = new LinearResampler(16000, 24000);
  const scratch = new Int16Array(600);
  for (let i = 0; i < 5; i++) {
    const block = new Int16Array(320).map((_, k) => (i * 320 + k) % 700);
    t.deepEqual([...x.process(block, scratch)], [...y.process(block)]);
  }
});

test('resampler is exact over any block sizes: output k is the linear interpolation at k·from/to, no drift', (t) => {
  for (const [from, to] of [[16000, 24000], [24000, 16000], [8000, 24000], [48000, 16000], [22050, 24000]] as const) {
    const r = new LinearResampler(from, to);
    const all: number[] = [];
    const got: number[] = [];
    for (let b = 0; b < 300; b++) {
      const block = new Int16Array(160 + ((b * 37) % 400)).map((_, k) => Math.round(Math.sin((all.length + k) / 7) * 20000));
      all.push(...block);
      got.push(...r.process(block));
    }
    let worst = 0;
    for (let k = 0; k < got.length; k++) {
      const i = Math.floor((k * from) / to);
      const frac = (k * from - i * to) / to;
      worst = Math.max(worst, Math.abs(Math.round(all[i]! + (all[i + 1]! - all[i]!) * frac) - got[k]!));
    }
    t.is(worst, 0, `${from} → ${to}`);
    t.true(Math.abs(got.length - ((all.length - 1) * to) / from) <= 1, `${from} → ${to}: ${got.length} samples for ${all.length}`);
  }
});

test('noise gate stage (RNNoise from media/noise): stationary noise on the caller audio is strongly reduced', async (t) => {
  const d = await createNoiseGate({ model: 'noise-suppression', enhancementLevel: 1 });
  const { pipeline, out: frames } = harness(new NoiseGateStage(d));
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) * 2 - 1;
  const noise = new Int16Array(16000 * 2);
  for (let i = 0; i < noise.length; i++) noise[i] = Math.round(rnd() * 1500);
  for (let i = 0; i < noise.length; i += 320) pipeline.push({ type: 'audioIn', pcm: noise.subarray(i, i + 320) });
  const parts = frames.frames.map((f) => (f as { pcm: Int16Array }).pcm);
  const out = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (out.set(p, o), o + p.length), 0);
  t.is(out.length, noise.length);
  const tail = (a: Int16Array) => rms(a.subarray(a.length / 2));
  t.true(tail(out) < tail(noise) * 0.3, `noise ${tail(noise)} → ${tail(out)}`);
  await pipeline.close();
});
