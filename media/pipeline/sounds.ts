// Sound assets generated procedurally at 24 kHz (no files shipped, nothing to license): ambience beds from
// filtered noise, keyboard typing from short clicks. Deterministic (seeded) so calls sound the same.

export const SOUND_RATE = 24000;

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) / 4294967296) * 2 - 1;
  };
}

/** Brown-ish noise with slow swells: a quiet room / library / office / cafe bed. Loops seamlessly (crossfaded). */
export function ambience(kind: string, seconds = 6, rate = SOUND_RATE): Int16Array {
  const n = Math.round(seconds * rate);
  const rand = rng(kind.split('').reduce((a, c) => a * 31 + c.charCodeAt(0), 7));
  const buf = new Float32Array(n);
  // per-kind colour: low-pass amount and the level of a murmur band
  const lp = kind === 'cafe' || kind === 'restaurant' ? 0.08 : kind === 'office' ? 0.05 : 0.03;
  const murmur = kind === 'cafe' || kind === 'restaurant' ? 0.6 : kind === 'office' ? 0.3 : 0.1;
  let y = 0;
  let band = 0;
  let bandLp = 0;
  for (let i = 0; i < n; i++) {
    const w = rand();
    y += lp * (w - y); // one-pole low-pass → rumble
    band += 0.25 * (w - band);
    bandLp += 0.1 * (band - bandLp);
    const swell = 0.7 + 0.3 * Math.sin((2 * Math.PI * i) / (rate * 2.3)) * Math.sin((2 * Math.PI * i) / (rate * 0.71));
    buf[i] = y * 3 + (band - bandLp) * murmur * swell;
  }
  // crossfade the last 0.2 s into the start so the loop has no click
  const fade = Math.round(0.2 * rate);
  for (let i = 0; i < fade; i++) {
    const a = i / fade;
    buf[i] = buf[i]! * a + buf[n - fade + i]! * (1 - a);
  }
  return normalize(buf.subarray(0, n - fade), 0.5);
}

/** Keyboard typing: bursts of short damped clicks at irregular intervals. */
export function typing(seconds = 4, rate = SOUND_RATE): Int16Array {
  const n = Math.round(seconds * rate);
  const buf = new Float32Array(n);
  const rand = rng(99);
  let t = 0;
  while (t < n) {
    const len = Math.round(rate * (0.004 + 0.004 * Math.abs(rand())));
    const pitch = 0.6 + 0.4 * Math.abs(rand());
    for (let i = 0; i < len && t + i < n; i++) {
      const env = Math.exp(-i / (len / 5));
      buf[t + i] = buf[t + i]! + rand() * env * pitch + Math.sin(i * 0.9 * pitch) * env * 0.5;
    }
    // mostly quick keystrokes, sometimes a pause
    const gap = Math.abs(rand()) < 0.12 ? 0.35 + Math.abs(rand()) * 0.4 : 0.07 + Math.abs(rand()) * 0.12;
    t += Math.round(gap * rate);
  }
  return normalize(buf, 0.7);
}

function normalize(buf: Float32Array, peak: number): Int16Array {
  let max = 1e-9;
  for (const v of buf) max = Math.max(max, Math.abs(v));
  const out = new Int16Array(buf.length);
  const g = (peak * 32767) / max;
  for (let i = 0; i < buf.length; i++) out[i] = Math.round(buf[i]! * g);
  return out;
}

const cache = new Map<string, Int16Array>();
/** Cached per process: every call shares the same generated buffers. */
export function soundAsset(name: string): Int16Array {
  let a = cache.get(name);
  if (!a) {
    a = name === 'typing' ? typing() : ambience(name);
    cache.set(name, a);
  }
  return a;
}
