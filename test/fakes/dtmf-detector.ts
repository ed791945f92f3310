// The fake carriers' DTMF receiver: what a phone menu would hear in the agent's audio. A textbook Goertzel
// receiver, written from the ITU-T Q.23 frequency table independently of the service's generator
// (media/audio/dtmf.ts), and checked against tones made by sox (test/media/dtmf.test.ts), so a misreading of the
// standard cannot be shared by the generator and this receiver.
//
// 8 kHz audio in blocks of 205 samples (the classic block: bins land near the eight frequencies). A block holds a
// key when the strongest low-group and high-group frequencies each stand ≥ 8 dB above the rest of their group,
// together carry most of the block's energy, and their twist is within ±8 dB. A key is reported once it has held
// for two blocks (~51 ms) and is released after two blocks without it (the pause between keys).
const LOW = [697, 770, 852, 941];
const HIGH = [1209, 1336, 1477, 1633];
const KEYS = ['123A', '456B', '789C', '*0#D'];
const N = 205;
const RATE = 8000;

function power(x: Int16Array | Float64Array, start: number, f: number): number {
  const c = 2 * Math.cos((2 * Math.PI * f) / RATE);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < N; i++) {
    const s0 = x[start + i]! + c * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return s1 * s1 + s2 * s2 - c * s1 * s2;
}

/** The key in one block, or null. */
function blockKey(x: Int16Array, start: number): string | null {
  let energy = 0;
  for (let i = 0; i < N; i++) energy += x[start + i]! * x[start + i]!;
  if (energy / N < 200 * 200) return null; // quieter than about −44 dBFS
  const lo = LOW.map((f) => power(x, start, f));
  const hi = HIGH.map((f) => power(x, start, f));
  const li = lo.indexOf(Math.max(...lo));
  const hj = hi.indexOf(Math.max(...hi));
  const dominant = (p: number[], k: number) => p.every((v, i) => i === k || v * 6.3 < p[k]!); // ≥ 8 dB
  if (!dominant(lo, li) || !dominant(hi, hj)) return null;
  const twist = hi[hj]! / lo[li]!;
  if (twist > 6.3 || twist < 1 / 6.3) return null;
  // a sine of amplitude A gives power ≈ (N·A/2)²; its energy over the block is N·A²/2
  const share = (2 * (lo[li]! + hi[hj]!)) / (N * energy);
  if (share < 0.6) return null;
  return KEYS[li]![hj]!;
}

/** The keys heard in 8 kHz audio, in order. */
export function detectDtmf(pcm8k: Int16Array): string {
  let out = '';
  let current: string | null = null;
  let held = 0;
  let missing = 0;
  let reported = false;
  for (let start = 0; start + N <= pcm8k.length; start += N) {
    const k = blockKey(pcm8k, start);
    if (k !== null && k === current) {
      held++;
      missing = 0;
      if (held >= 2 && !reported) {
        out += k;
        reported = true;
      }
      continue;
    }
    if (k === null && current !== null) {
      if (++missing >= 2) {
        current = null;
        reported = false;
        held = 0;
      }
      continue;
    }
    if (k !== null) {
      // another key without a pause between: a new key only once the old one is released
      if (current === null || !reported) {
        current = k;
        held = 1;
        missing = 0;
        reported = false;
      }
    }
  }
  return out;
}
