import test from 'ava';
import { Resampler, resample } from '../../../core/audio/resample.ts';
import { encodeMulaw, decodeMulaw, linearToMulaw } from '../../../media/audio/mulaw.ts';
import { readWav, writeWav } from '../../../core/audio/wav.ts';
import { rms, Framer, concatInt16 } from '../../../media/audio/pcm.ts';

function sine(freq: number, rate: number, seconds: number, amp = 10000): Int16Array {
  const n = Math.round(rate * seconds);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * freq * i) / rate));
  return out;
}

/** Frequency estimate from zero crossings over the middle of the signal (edges skipped). */
function zeroCrossingHz(pcm: Int16Array, rate: number): number {
  const a = Math.floor(pcm.length * 0.1);
  const b = Math.floor(pcm.length * 0.9);
  let crossings = 0;
  for (let i = a + 1; i < b; i++) if ((pcm[i - 1]! < 0) !== (pcm[i]! < 0)) crossings++;
  return crossings / 2 / ((b - a) / rate);
}

const PAIRS: [number, number][] = [
  [8000, 16000], [16000, 8000], [16000, 24000], [24000, 16000], [22050, 24000], [24000, 48000], [48000, 16000], [16000, 48000], [48000, 8000], [24000, 8000],
];

for (const [from, to] of PAIRS) {
  test(`resampler ${from} → ${to}: 440 Hz stays 440 Hz, length ratio right, level kept`, (t) => {
    const input = sine(440, from, 1);
    const out = resample(input, from, to);
    t.true(Math.abs(out.length - (input.length * to) / from) <= 1, `length ${out.length}`);
    const hz = zeroCrossingHz(out, to);
    t.true(Math.abs(hz - 440) < 2, `measured ${hz} Hz`);
    const mid = out.subarray(Math.floor(out.length * 0.2), Math.floor(out.length * 0.8));
    const level = rms(mid) / rms(input.subarray(Math.floor(input.length * 0.2), Math.floor(input.length * 0.8)));
    t.true(level > 0.97 && level < 1.03, `gain ${level}`);
  });
}

test('resampler: streaming in odd-sized blocks gives the same output as one block', (t) => {
  const input = sine(1000, 22050, 0.5);
  const whole = resample(input, 22050, 24000);
  const r = new Resampler(22050, 24000);
  const parts: Int16Array[] = [];
  for (let o = 0; o < input.length; o += 317) parts.push(r.process(input.subarray(o, o + 317)));
  parts.push(r.flush());
  const streamed = concatInt16(parts);
  t.is(streamed.length, whole.length);
  let maxDiff = 0;
  for (let i = 0; i < whole.length; i++) maxDiff = Math.max(maxDiff, Math.abs(whole[i]! - streamed[i]!));
  t.true(maxDiff <= 1, `max diff ${maxDiff}`);
});

test('resampler: downsampling removes content above the new Nyquist (no aliasing)', (t) => {
  // 6 kHz at 48 kHz → 8 kHz output: 6 kHz is above 4 kHz Nyquist and would alias to 2 kHz without the lowpass
  const out = resample(sine(6000, 48000, 1), 48000, 8000);
  const mid = out.subarray(1000, out.length - 1000);
  t.true(rms(mid) < 10000 * 0.707 * 0.01, `leak rms ${rms(mid)}`); // below −40 dB
  // and 3 kHz (in band) passes
  const pass = resample(sine(3000, 48000, 1), 48000, 8000);
  t.true(rms(pass.subarray(1000, pass.length - 1000)) > 10000 * 0.707 * 0.9);
});

test('resampler rejects non-integer rates', (t) => {
  t.throws(() => new Resampler(0, 16000), { instanceOf: RangeError });
  t.throws(() => new Resampler(22050.5, 16000), { instanceOf: RangeError });
});

test('µ-law: round trip within the G.711 quantisation step and known code points', (t) => {
  t.is(linearToMulaw(0), 0xff);
  t.is(linearToMulaw(-1), 0x7f);
  t.is(linearToMulaw(32767), 0x80);
  t.is(linearToMulaw(-32768), 0x00);
  const pcm = new Int16Array(65536);
  for (let i = 0; i < 65536; i++) pcm[i] = i - 32768;
  const back = decodeMulaw(encodeMulaw(pcm));
  for (let i = 0; i < pcm.length; i += 7) {
    const x = Math.max(-32635, Math.min(32635, pcm[i]!));
    const err = Math.abs(back[i]! - x);
    // step size doubles per segment: error ≤ half a step (max step 1024 in the top segment)
    const bound = Math.max(4, Math.abs(x) / 16);
    if (err > bound) return t.fail(`sample ${x} decoded as ${back[i]} (err ${err})`);
  }
  // every code decodes and re-encodes to itself (except the two zeros)
  for (let c = 0; c < 256; c++) {
    const again = encodeMulaw(decodeMulaw(Uint8Array.of(c)))[0]!;
    if (c !== 0x7f) t.is(again, c, `code ${c}`);
  }
});

test('WAV: write then read gives the samples and rate back; garbage is refused', (t) => {
  const pcm = sine(440, 16000, 0.1);
  const back = readWav(writeWav(pcm, 16000));
  t.is(back.sampleRate, 16000);
  t.deepEqual(Array.from(back.samples), Array.from(pcm));
  t.throws(() => readWav(Buffer.from('not a wav file at all')));
});

test('Framer re-blocks into fixed frames and pads the tail', (t) => {
  const f = new Framer(320);
  t.is(f.push(new Int16Array(300)).length, 0);
  const frames = f.push(new Int16Array(400).fill(1));
  t.is(frames.length, 2);
  t.true(frames.every((x) => x.length === 320));
  const tail = f.flush();
  t.is(tail?.length, 320);
  t.is(f.flush(), null);
});
