// DTMF tones and the beep detector. The fakes' Goertzel receiver (test/fakes/dtmf-detector.ts) is first checked on
// tones synthesized by sox (an independent generator): only then does it judge the service's generator
// (media/audio/dtmf.ts), after the way to the line (24 kHz → 8 kHz, G.711 µ-law). The beep detector hears sox's
// beeps and not speech or DTMF.
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { resample } from '../../../core/audio/resample.ts';
import { BeepDetector } from '../../../media/audio/beep.ts';
import { DTMF_GAP_MS, DTMF_TONE_MS, dtmfFrequencies, dtmfTones } from '../../../media/audio/dtmf.ts';
import { decodeMulaw, encodeMulaw } from '../../../media/audio/mulaw.ts';
import { createLocalTts } from '../../../media/services/tts/local.ts';
import { detectDtmf } from '../../fakes/dtmf-detector.ts';

/** `ms` of sox `synth` at 8 kHz: the given sines mixed to one channel, at `gainDb`. */
function sox(ms: number, freqs: number[], gainDb = -8): Int16Array {
  const args = ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', '-t', 'raw', '-', 'synth', String(ms / 1000)];
  for (const f of freqs) args.push('sine', String(f));
  args.push('channels', '1', 'gain', String(gainDb));
  const buf = execFileSync('sox', args);
  return new Int16Array(buf.buffer, buf.byteOffset, buf.byteLength >> 1).slice();
}

const silence = (ms: number) => new Int16Array(Math.round(ms * 8));
const join = (parts: Int16Array[]) => {
  const out = new Int16Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (out.set(p, o), o + p.length), 0);
  return out;
};
const line = (pcm8k: Int16Array) => decodeMulaw(encodeMulaw(pcm8k));

// The Q.23 table written out here a second time, from the standard, for sox (not taken from the code under test).
const Q23: Record<string, [number, number]> = {
  '1': [697, 1209], '2': [697, 1336], '3': [697, 1477], A: [697, 1633],
  '4': [770, 1209], '5': [770, 1336], '6': [770, 1477], B: [770, 1633],
  '7': [852, 1209], '8': [852, 1336], '9': [852, 1477], C: [852, 1633],
  '*': [941, 1209], '0': [941, 1336], '#': [941, 1477], D: [941, 1633],
};

test('the fakes\' Goertzel receiver decodes every key of sox-made tones (70 ms tones, 50 ms gaps, over G.711)', (t) => {
  const keys = '123A456B789C*0#D';
  const pcm = join([silence(200), ...[...keys].flatMap((k) => [sox(70, Q23[k]!), silence(50)]), silence(200)]);
  t.is(detectDtmf(line(pcm)), keys);
});

test('the receiver hears nothing in sox tones that are not DTMF pairs, single tones, or tones too short', (t) => {
  t.is(detectDtmf(line(join([silence(100), sox(200, [1000]), silence(100)]))), '', 'a beep');
  t.is(detectDtmf(line(join([silence(100), sox(200, [600, 1100]), silence(100)]))), '', 'an off-grid pair');
  t.is(detectDtmf(line(join([silence(100), sox(20, Q23['5']!), silence(100)]))), '', 'a 20 ms blip');
});

test('the service\'s tones: every key, the Q.23 pairs, ≥ 70 ms tones with ≥ 50 ms gaps, decoded after 24 kHz → 8 kHz µ-law', (t) => {
  for (const [k, pair] of Object.entries(Q23)) t.deepEqual(dtmfFrequencies(k), pair, k);
  t.true(DTMF_TONE_MS >= 70 && DTMF_GAP_MS >= 50);
  const digits = '0123456789*#';
  const pcm24 = dtmfTones(digits, 24000);
  t.is(pcm24.length, Math.round(((digits.length * DTMF_TONE_MS + (digits.length - 1) * DTMF_GAP_MS) * 24000) / 1000));
  let peak = 0;
  for (const v of pcm24) peak = Math.max(peak, Math.abs(v));
  t.true(peak < 32635 && peak > 16000, `peak ${peak}: loud, and inside µ-law's range`);
  const heard = line(resample(pcm24, 24000, 8000));
  t.is(detectDtmf(join([silence(100), heard, silence(100)])), digits);
  // `w` is a half-second pause: repeated keys on either side stay two keys
  t.is(detectDtmf(line(resample(dtmfTones('1w1', 24000), 24000, 8000))), '11');
  t.throws(() => dtmfTones('1x', 24000), { message: /not a DTMF key/ });
});

test('beep detector: a 1 kHz or 1.4 kHz beep after a silence is found (with its length); speech and DTMF are not beeps', async (t) => {
  for (const f of [1000, 1400, 440]) {
    const d = new BeepDetector(8000);
    const beeps = d.push(line(join([silence(300), sox(400, [f], -12), silence(300)])));
    t.is(beeps.length, 1, `${f} Hz`);
    t.true(Math.abs(beeps[0]!.freq - f) < 40, `${beeps[0]!.freq} Hz`);
    t.true(beeps[0]!.ms >= 360 && beeps[0]!.ms <= 420, `${beeps[0]!.ms} ms`);
  }
  const short = new BeepDetector(8000).push(line(join([silence(100), sox(60, [1000]), silence(200)])));
  t.deepEqual(short, [], 'a 60 ms blip is no beep');
  const dtmf = new BeepDetector(8000).push(line(resample(dtmfTones('5555', 24000, { toneMs: 300 }), 24000, 8000)));
  t.deepEqual(dtmf, [], 'DTMF is two tones, not a beep');
  const tts = createLocalTts({ languages: ['en'], binary: 'espeak-ng' });
  const parts: Int16Array[] = [];
  for await (const p of tts.synthesize('Hi, you have reached the voicemail of John Smith. Please leave a message after the tone.', new AbortController().signal)) parts.push(p);
  const speech = line(resample(join(parts), 24000, 8000));
  t.deepEqual(new BeepDetector(8000).push(join([speech, silence(100)])), [], 'speech is no beep');
});
