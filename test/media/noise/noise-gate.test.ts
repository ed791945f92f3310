import test from 'ava';
import { execFileSync } from 'node:child_process';
import { createNoiseGate, NOISE_GATE_DELAY_SAMPLES } from '../../../media/noise/index.ts';
import { seededRng } from '../../../media/sounds/synth.ts';

// A voice (eSpeak NG, 22.05 kHz → 16 kHz) between two stretches of silence, plus seeded white noise.
const RATE = 16000;
const LEAD = Math.round(1.0 * RATE);

function speech16k(text: string): Int16Array {
  const wav = execFileSync('espeak-ng', ['--stdout', '-s', '150', text]);
  const pcm = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length - ((wav.length - 44) % 2)));
  const ratio = 22050 / RATE;
  const out = new Int16Array(Math.floor(pcm.length / ratio));
  for (let i = 0; i < out.length; i++) {
    const pos = i * ratio;
    const k = Math.floor(pos);
    const a = pcm[k] ?? 0;
    const b = pcm[k + 1] ?? a;
    out[i] = Math.round(a + (b - a) * (pos - k));
  }
  return out;
}


const voice = speech16k('The quick brown fox jumps over the lazy dog, and then it calls the office.');
const clean = new Int16Array(Math.ceil((LEAD + voice.length + LEAD) / 320) * 320); // whole 20 ms frames
clean.set(voice, LEAD);
const noise = new Float64Array(clean.length);
{
  const r = seededRng(7);
  for (let i = 0; i < noise.length; i++) noise[i] = (r() + r() + r() + r() - 2) * 1400; // ~800 RMS, roughly Gaussian
}
const noisy = new Int16Array(clean.length);
for (let i = 0; i < noisy.length; i++) noisy[i] = Math.max(-32768, Math.min(32767, Math.round(clean[i]! + noise[i]!)));

async function run(model: 'voice-focus' | 'noise-suppression', level: number, input: Int16Array, chunk: (i: number) => number = () => 320) {
  const gate = await createNoiseGate({ model, enhancementLevel: level });
  const parts: Int16Array[] = [];
  let total = 0;
  let t = 0;
  let frames = 0;
  for (let i = 0, k = 0; i < input.length; k++) {
    const n = Math.min(chunk(k), input.length - i);
    const frame = input.subarray(i, i + n);
    const t0 = process.hrtime.bigint();
    const o = gate.process(frame);
    t += Number(process.hrtime.bigint() - t0);
    frames++;
    if (o.length !== n) throw new Error(`output length ${o.length} != ${n}`);
    parts.push(o);
    total += n;
    i += n;
  }
  gate.close();
  const out = new Int16Array(total);
  let p = 0;
  for (const o of parts) {
    out.set(o, p);
    p += o.length;
  }
  return { out, usPerCall: t / 1000 / frames };
}

function energy(pcm: ArrayLike<number>, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += pcm[i]! * pcm[i]!;
  return s / Math.max(1, to - from);
}
const dB = (ratio: number) => 10 * Math.log10(ratio);

// speech frames (20 ms) where the clean voice is clearly active
const speechFrames: number[] = [];
for (let f = LEAD; f + 320 <= LEAD + voice.length; f += 320) if (energy(clean, f, f + 320) > 1000 * 1000) speechFrames.push(f);
const D = NOISE_GATE_DELAY_SAMPLES;

function measure(out: Int16Array) {
  // noise-only: the lead-in after RNNoise's first 300 ms of adaptation, and the tail-out
  const noiseIn = energy(noisy, Math.round(0.3 * RATE), LEAD - 800) + energy(noisy, LEAD + voice.length + 1600, clean.length - D);
  const noiseOut =
    energy(out, Math.round(0.3 * RATE) + D, LEAD - 800 + D) + energy(out, LEAD + voice.length + 1600 + D, clean.length);
  let sIn = 0;
  let sOut = 0;
  for (const f of speechFrames) {
    sIn += energy(clean, f, f + 320);
    sOut += energy(out, f + D, f + D + 320);
  }
  return { noiseDropDb: dB(noiseIn / noiseOut), speechKeptDb: dB(sOut / sIn) };
}

test('fixture sanity: the mix has speech and noise', (t) => {
  t.true(voice.length > RATE, 'eSpeak produced over a second of speech');
  t.true(speechFrames.length > 40);
  t.true(dB(energy(noisy, 0, LEAD) / (800 * 800)) > -1.5, 'the lead-in carries the noise');
});

test('noise-suppression at 1.0: noise in speech-free parts drops by > 15 dB, speech mostly kept', async (t) => {
  const { out, usPerCall } = await run('noise-suppression', 1, noisy);
  const m = measure(out);
  t.log(`noise-suppression L=1: noise −${m.noiseDropDb.toFixed(1)} dB, speech ${m.speechKeptDb.toFixed(1)} dB; ${usPerCall.toFixed(0)} µs per 20 ms frame`);
  t.true(m.noiseDropDb > 15);
  t.true(m.speechKeptDb > -4 && m.speechKeptDb < 1.5);
});

test('voice-focus at the default 0.8: noise drops further than plain suppression at 0.8, speech kept', async (t) => {
  const vf = measure((await run('voice-focus', 0.8, noisy)).out);
  const ns = measure((await run('noise-suppression', 0.8, noisy)).out);
  t.log(`L=0.8 voice-focus: noise −${vf.noiseDropDb.toFixed(1)} dB, speech ${vf.speechKeptDb.toFixed(1)} dB; noise-suppression: −${ns.noiseDropDb.toFixed(1)} dB, ${ns.speechKeptDb.toFixed(1)} dB`);
  t.true(vf.noiseDropDb > 15);
  t.true(vf.noiseDropDb > ns.noiseDropDb + 3);
  t.true(vf.speechKeptDb > -4.5 && vf.speechKeptDb < 1.5);
  // a lower enhancement level removes less
  t.true(ns.noiseDropDb > 8);
  const half = measure((await run('noise-suppression', 0.4, noisy)).out);
  t.true(half.noiseDropDb < ns.noiseDropDb - 2);
});

test('enhancementLevel 0 = the original, delayed by exactly NOISE_GATE_DELAY_SAMPLES (both models)', async (t) => {
  t.is(D, 176);
  for (const model of ['noise-suppression', 'voice-focus'] as const) {
    const { out } = await run(model, 0, noisy);
    let mismatches = 0;
    for (let i = 0; i < D; i++) if (out[i] !== 0) mismatches++;
    for (let i = 0; i + D < out.length; i++) if (out[i + D] !== noisy[i]) mismatches++;
    t.is(mismatches, 0, model);
  }
});

test('the denoised voice lines up with the original at the documented delay', async (t) => {
  const { out } = await run('noise-suppression', 1, clean);
  let best = -Infinity;
  let lag = -1;
  for (let l = 0; l < 400; l++) {
    let s = 0;
    for (const f of speechFrames) for (let i = f; i < f + 320; i++) s += clean[i]! * out[i + l]!;
    if (s > best) {
      best = s;
      lag = l;
    }
  }
  t.true(Math.abs(lag - D) <= 2, `lag ${lag}`);
});

test('any input chunking: same audio, same length out, 10 ms more delay inserted once for odd sizes', async (t) => {
  const ref = (await run('voice-focus', 0.8, noisy)).out;
  const sizes = [7, 333, 1, 160, 999, 41, 2048, 320, 13];
  const odd = (await run('voice-focus', 0.8, noisy, (k) => sizes[k % sizes.length]!)).out;
  let diff = 0;
  for (let i = 0; i < 160; i++) if (odd[i] !== 0) diff++;
  for (let i = 0; i + 160 < odd.length; i++) if (odd[i + 160] !== ref[i]) diff++;
  t.is(diff, 0);
  // aligned sizes (multiples of 10 ms, mixed) add nothing
  const aligned = [160, 320, 480, 1600, 320];
  const al = (await run('voice-focus', 0.8, noisy, (k) => aligned[k % aligned.length]!)).out;
  t.deepEqual(al, ref);
});

test('after close() audio passes through; close is idempotent', async (t) => {
  const gate = await createNoiseGate({ model: 'voice-focus', enhancementLevel: 0.8 });
  gate.process(noisy.subarray(0, 320));
  gate.close();
  gate.close();
  const f = noisy.subarray(320, 640);
  t.is(gate.process(f), f);
});

test('cost: µs per 20 ms frame (logged), many gates at once stay independent', async (t) => {
  const gates = await Promise.all(Array.from({ length: 20 }, () => createNoiseGate({ model: 'voice-focus', enhancementLevel: 0.8 })));
  const frames = Math.floor(noisy.length / 320);
  const t0 = process.hrtime.bigint();
  for (let f = 0; f < frames; f++) for (const g of gates) g.process(noisy.subarray(f * 320, f * 320 + 320));
  const us = Number(process.hrtime.bigint() - t0) / 1000 / (frames * gates.length);
  t.log(`noise gate: ${us.toFixed(0)} µs per 20 ms frame (20 concurrent gates, ${frames} frames each)`);
  // every gate saw the same audio → the same output (no shared state between gates)
  const a = gates[0]!.process(noisy.subarray(0, 320));
  const b = gates[19]!.process(noisy.subarray(0, 320));
  t.deepEqual(a, b);
  for (const g of gates) g.close();
  t.pass();
});

// ── the gate on its worker thread (media/noise/threaded.ts: what calls use) ─────────────────────────────────
import { createThreadedNoiseGate } from '../../../media/noise/threaded.ts';
import { NoiseGateStage } from '../../../media/pipeline/input-stages.ts';
import { harness } from '../../../media/pipeline/processor.ts';

test('threaded gate: two calls interleaved on the gate thread get exactly the inline gate\'s audio, in order', async (t) => {
  const inline = await run('voice-focus', 0.8, noisy);
  const a = createThreadedNoiseGate({ model: 'voice-focus', enhancementLevel: 0.8 });
  const b = createThreadedNoiseGate({ model: 'voice-focus', enhancementLevel: 0.8 });
  const outA: Int16Array[] = [];
  const outB: Int16Array[] = [];
  const pending: Promise<void>[] = [];
  const silence = new Int16Array(320);
  for (let i = 0; i < noisy.length; i += 320) {
    // the caller's buffer is reused right after submit: the gate must have taken its own copy
    const frame = noisy.slice(i, i + 320);
    pending.push(new Promise((r) => a.submit(frame, (o) => (outA.push(o), r()))));
    frame.fill(1234);
    pending.push(new Promise((r) => b.submit(silence, (o) => (outB.push(o), r()))));
  }
  await Promise.all(pending);
  a.close();
  b.close();
  const joined = new Int16Array(noisy.length);
  outA.reduce((o, p) => (joined.set(p, o), o + p.length), 0);
  t.is(outA.length, noisy.length / 320);
  t.deepEqual(Array.from(joined), Array.from(inline.out));
  t.true(outB.every((o) => o.length === 320 && o.every((v) => v === 0)));
});

test('threaded gate in the pipeline stage: frames other than audio keep their place behind audio being denoised', async (t) => {
  const { pipeline, out } = harness(new NoiseGateStage(createThreadedNoiseGate({ model: 'noise-suppression', enhancementLevel: 1 })));
  pipeline.push({ type: 'audioIn', pcm: noisy.subarray(0, 320) });
  pipeline.push({ type: 'userStartedSpeaking' });
  pipeline.push({ type: 'audioIn', pcm: noisy.subarray(320, 640) });
  t.deepEqual(out.frames, []); // nothing overtakes the first frame while it is on the gate thread
  await new Promise<void>((r) => {
    const check = () => (out.frames.length === 3 ? r() : setTimeout(check, 5));
    check();
  });
  t.deepEqual(out.frames.map((f) => f.type), ['audioIn', 'userStartedSpeaking', 'audioIn']);
  await pipeline.close();
});
