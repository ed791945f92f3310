// Procedural sound assets (24 kHz mono), generated in code from seeded noise — nothing downloaded, nothing to
// license. Every asset is a seamless loop: ambience beds are generated a little longer than the loop and their tail
// is crossfaded (equal power) into the head; discrete events (clinks, keystrokes, page turns) are placed on a circle
// (an event running past the end continues at the start), so the loop point is inaudible.

export const RATE = 24000;

/** mulberry32: small, fast, good enough for audio; deterministic for a seed. */
export function seededRng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Unit-variance white noise (uniform: every use is filtered, so the distribution doesn't matter). */
const gauss = (r: () => number) => (r() * 2 - 1) * 1.732;

/** RBJ biquad band-pass (constant 0 dB peak gain). */
class BandPass {
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;
  private b0 = 0;
  private b2 = 0;
  private a1 = 0;
  private a2 = 0;
  constructor(freq: number, q: number) {
    this.set(freq, q);
  }
  set(freq: number, q: number): void {
    const w = (2 * Math.PI * freq) / RATE;
    const alpha = Math.sin(w) / (2 * q);
    const a0 = 1 + alpha;
    this.b0 = alpha / a0;
    this.b2 = -alpha / a0;
    this.a1 = (-2 * Math.cos(w)) / a0;
    this.a2 = (1 - alpha) / a0;
  }
  step(x: number): number {
    const y = this.b0 * x + this.b2 * this.x2 - this.a1 * this.y1 - this.a2 * this.y2;
    this.x2 = this.x1;
    this.x1 = x;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

/** One-pole low-pass with cutoff `freq`. */
function lowPass(freq: number): (x: number) => number {
  const a = 1 - Math.exp((-2 * Math.PI * freq) / RATE);
  let y = 0;
  return (x) => (y += a * (x - y));
}

/** Pinkish room tone: sum of low-passed noises (≈ −3…−6 dB/oct), with a slow "air" swell. */
function roomTone(buf: Float64Array, r: () => number, brightness: number, swellHz: number): void {
  const lp1 = lowPass(120);
  const lp2 = lowPass(600);
  const lp3 = lowPass(2500);
  const phase = r() * Math.PI * 2;
  for (let i = 0; i < buf.length; i++) {
    const w = gauss(r);
    const swell = 1 + 0.15 * Math.sin(phase + (2 * Math.PI * swellHz * i) / RATE);
    buf[i] = buf[i]! + swell * (lp1(w) * 3.0 + lp2(w) * 0.9 * brightness + lp3(w) * 0.25 * brightness * brightness);
  }
}

/** Babble: `talkers` voices, each noise through two moving formants under a syllable-rate envelope. */
function babble(buf: Float64Array, r: () => number, talkers: number, level: number, distanceHz: number): void {
  const n = buf.length;
  for (let t = 0; t < talkers; t++) {
    const f1 = new BandPass(500, 4);
    const f2 = new BandPass(1500, 5);
    const dist = lowPass(distanceHz);
    const pitch = 90 + r() * 140; // a buzz under the noise makes it voice-like
    let ph = 0;
    // syllable envelope: phrases of 3..10 syllables separated by pauses
    let i = Math.floor(r() * RATE);
    let syl = 0;
    let env = new Float64Array(0);
    let envStart = 0;
    const talkerLevel = level * (0.5 + r());
    const out = new Float64Array(n);
    let target1 = 500;
    let target2 = 1500;
    let c1 = 500;
    let c2 = 1500;
    for (let k = 0; k < n; k++) {
      if (k >= i) {
        // next syllable (or a pause after a phrase)
        if (syl <= 0) {
          syl = 3 + Math.floor(r() * 8);
          i = k + Math.floor((0.25 + r() * 0.9) * RATE);
          continue;
        }
        syl--;
        const len = Math.floor((0.11 + r() * 0.16) * RATE);
        env = new Float64Array(len);
        for (let j = 0; j < len; j++) env[j] = Math.sin((Math.PI * j) / len) ** 1.5;
        envStart = k;
        i = k + len + Math.floor(r() * 0.04 * RATE);
        target1 = 300 + r() * 600;
        target2 = 900 + r() * 1600;
      }
      c1 += (target1 - c1) * 0.002;
      c2 += (target2 - c2) * 0.002;
      if ((k & 63) === 0) {
        f1.set(c1, 4);
        f2.set(c2, 5);
      }
      const e = k - envStart < env.length ? env[k - envStart]! : 0;
      ph += pitch / RATE;
      if (ph >= 1) ph -= 1;
      const src = gauss(r) * 0.6 + (ph < 0.5 ? 1 : -1) * 0.5;
      out[k] = dist(f1.step(src) + 0.6 * f2.step(src)) * e * talkerLevel;
    }
    for (let k = 0; k < n; k++) buf[k] = buf[k]! + out[k]!;
  }
}

/** Add a short event on the circle: `shape(j)` for j in 0..len-1 at position `at` (wrapping past the end). */
export function addEvent(buf: Float64Array, at: number, len: number, shape: (j: number) => number): void {
  const n = buf.length;
  for (let j = 0; j < len; j++) {
    const k = (at + j) % n;
    buf[k] = buf[k]! + shape(j);
  }
}

/** A glass/cup clink: a few inharmonic damped partials. */
function clink(buf: Float64Array, r: () => number, at: number, amp: number): void {
  const f0 = 1800 + r() * 2600;
  const partials = [1, 2.32, 4.25, 6.63].map((m, idx) => ({ f: f0 * m, a: amp / (1 + idx * 1.4), d: 0.05 + r() * 0.12 }));
  const len = Math.floor(0.35 * RATE);
  addEvent(buf, at, len, (j) => {
    const t = j / RATE;
    let s = 0;
    for (const p of partials) s += p.a * Math.exp(-t / p.d) * Math.sin(2 * Math.PI * p.f * t);
    return s;
  });
}

/** A keystroke: a sharp noisy click with a short body resonance. */
function keystroke(buf: Float64Array, r: () => number, at: number, amp: number): void {
  const len = Math.floor((0.012 + r() * 0.01) * RATE);
  const body = 1200 + r() * 1800;
  const bp = new BandPass(3500 + r() * 2500, 1.2);
  const decay = len / 4;
  // a soft "thock" when the key bottoms out, 8..20 ms after the click
  const second = Math.floor((0.008 + r() * 0.012) * RATE);
  addEvent(buf, at, len + second, (j) => {
    const e1 = j < len ? Math.exp(-j / decay) : 0;
    const j2 = j - second;
    const e2 = j2 >= 0 ? Math.exp(-j2 / (decay * 1.5)) * 0.5 : 0;
    const n = gauss(r);
    return amp * (bp.step(n) * (e1 + e2) * 2 + Math.sin((2 * Math.PI * body * j) / RATE) * (e1 + e2) * 0.35);
  });
}

/** Typing: bursts of keystrokes at a human pace (words, spaces, pauses), placed around the loop. */
function typingEvents(buf: Float64Array, r: () => number, amp: number, start: number): void {
  let t = start;
  const end = buf.length;
  while (t < end) {
    const word = 2 + Math.floor(r() * 7);
    for (let c = 0; c < word && t < end; c++) {
      keystroke(buf, r, t, amp * (0.55 + r() * 0.45));
      t += Math.floor((0.07 + r() * 0.11) * RATE);
    }
    // space bar (a bit heavier), then sometimes a thinking pause
    keystroke(buf, r, t, amp * 1.1);
    t += Math.floor((r() < 0.18 ? 0.45 + r() * 0.7 : 0.12 + r() * 0.12) * RATE);
  }
}

/** A page turn / paper rustle: band-passed noise with a slow swell. */
function rustle(buf: Float64Array, r: () => number, at: number, amp: number): void {
  const len = Math.floor((0.25 + r() * 0.3) * RATE);
  const bp = new BandPass(2500 + r() * 1500, 0.8);
  addEvent(buf, at, len, (j) => amp * bp.step(gauss(r)) * Math.sin((Math.PI * j) / len) ** 2 * (0.6 + 0.4 * r()));
}

/** Seamless loop: crossfade (equal power) the `fade` samples past `loop` into the head. */
export function crossfadeLoop(buf: Float64Array, loop: number, fade: number): Float64Array {
  const out = buf.slice(0, loop);
  for (let i = 0; i < fade; i++) {
    const a = (Math.PI / 2) * (i / fade);
    out[i] = buf[i]! * Math.sin(a) + buf[loop + i]! * Math.cos(a);
  }
  return out;
}

function toPcm(buf: Float64Array, rmsDbfs: number, peakDbfs: number): Int16Array {
  let s = 0;
  let peak = 1e-12;
  for (const v of buf) {
    s += v * v;
    peak = Math.max(peak, Math.abs(v));
  }
  const rms = Math.sqrt(s / buf.length) || 1e-12;
  const g = Math.min((32767 * 10 ** (rmsDbfs / 20)) / rms, (32767 * 10 ** (peakDbfs / 20)) / peak);
  const out = new Int16Array(buf.length);
  for (let i = 0; i < buf.length; i++) out[i] = Math.round(buf[i]! * g);
  return out;
}

const BED_SECONDS = 10;
const FADE_SECONDS = 1;

/** A background bed: room tone plus the scene's events; RMS −20 dBFS (peaks ≤ −3 dBFS) at volume 1. */
export function generateBackground(name: string, seed: number): Int16Array {
  const r = seededRng(seed);
  const loop = BED_SECONDS * RATE;
  const fade = FADE_SECONDS * RATE;
  const bed = new Float64Array(loop + fade);
  switch (name) {
    case 'quiet-room':
      roomTone(bed, r, 0.4, 0.07);
      break;
    case 'library':
      roomTone(bed, r, 0.7, 0.11);
      babble(bed, r, 1, 0.05, 700); // a far-away whisper now and then
      break;
    case 'office':
      roomTone(bed, r, 0.9, 0.13);
      babble(bed, r, 3, 0.25, 1400);
      break;
    case 'cafe':
      roomTone(bed, r, 1, 0.17);
      babble(bed, r, 6, 0.35, 2600);
      break;
    case 'restaurant':
      roomTone(bed, r, 0.8, 0.09);
      babble(bed, r, 8, 0.35, 1800);
      break;
    default:
      throw new Error(`unknown background sound '${name}'`);
  }
  const out = crossfadeLoop(bed, loop, fade);
  // discrete events go on the circle, after the crossfade
  if (name === 'library') for (let k = 0; k < 3; k++) rustle(out, r, Math.floor(r() * loop), 0.6);
  if (name === 'office') {
    typingEvents(out, r, 0.35, Math.floor(r() * loop)); // a colleague typing, interrupted by the wrap-around
    for (let k = 0; k < 2; k++) rustle(out, r, Math.floor(r() * loop), 0.4);
  }
  if (name === 'cafe') for (let k = 0; k < 9; k++) clink(out, r, Math.floor(r() * loop), 0.5 + r() * 0.5);
  if (name === 'restaurant') for (let k = 0; k < 14; k++) clink(out, r, Math.floor(r() * loop), 0.3 + r() * 0.4);
  return toPcm(out, -20, -3);
}

const TASK_SECONDS = 8;

/** A task sound loop; peaks at −3 dBFS at volume 1. */
export function generateTask(name: string, seed: number): Int16Array {
  const r = seededRng(seed);
  const buf = new Float64Array(TASK_SECONDS * RATE);
  switch (name) {
    case 'typing':
      typingEvents(buf, r, 1, Math.floor(0.03 * RATE));
      break;
    default:
      throw new Error(`unknown task sound '${name}'`);
  }
  return toPcm(buf, 0, -3);
}
