// media/sounds — the agent's sound sections (AgentConfig backgroundSound, taskSound, acknowledgeSounds, fillerWords),
// all at 24 kHz mono s16le, the pipeline's output rate. Assets are generated procedurally (synth.ts: seeded noise,
// filters, synthetic clinks and keystrokes): free by construction, no files. The output mixer, per 20 ms frame, mixes
// backgroundSource() under every outgoing frame and taskSoundSource() while a tool has been running `startAfterMs`;
// createWordPicker() gives the acknowledgement / filler word the call's TTS speaks, or null (the section's
// probability). Disabled sections create nothing. Assets are cached per process and shared by all calls; the first
// use of a name generates it synchronously, preloadSounds() does that ahead of time.
// SOUND_NAMES mirrors the AgentConfig schema enums (core/agent-config/schema.ts BACKGROUND_SOUNDS, TASK_SOUNDS; a
// test keeps them equal). Levels at volume 1: backgrounds RMS −20 dBFS (peak ≤ −3 dBFS), so the default 0.08 sits
// ≈ 22 dB under speech; typing peaks at −3 dBFS.
import { RATE, generateBackground, generateTask } from './synth.ts';

export const SOUND_RATE = RATE;

export const SOUND_NAMES = {
  background: ['library', 'office', 'cafe', 'restaurant', 'quiet-room'],
  task: ['typing'],
} as const satisfies { background: readonly string[]; task: readonly string[] };

export type BackgroundSoundName = (typeof SOUND_NAMES.background)[number];
export type TaskSoundName = (typeof SOUND_NAMES.task)[number];

function nameSeed(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}

const cache = new Map<string, Int16Array>();
function asset(kind: 'background' | 'task', name: string, seed: number | undefined): Int16Array {
  const list: readonly string[] = SOUND_NAMES[kind];
  if (!list.includes(name)) throw new Error(`unknown ${kind} sound '${name}' (known: ${list.join(', ')})`);
  const s = seed ?? nameSeed(name);
  const key = `${kind}:${name}:${s}`;
  let a = cache.get(key);
  if (!a) {
    a = kind === 'background' ? generateBackground(name, s) : generateTask(name, s);
    cache.set(key, a);
  }
  return a;
}

/** Generate (and cache) assets ahead of time; default: every known sound. */
export function preloadSounds(names: { background?: readonly string[]; task?: readonly string[] } = SOUND_NAMES): void {
  for (const n of names.background ?? []) asset('background', n, undefined);
  for (const n of names.task ?? []) asset('task', n, undefined);
}

export interface LoopSource {
  /** The next `samples` samples (24 kHz s16le mono), volume applied; loops forever. */
  read(samples: number): Int16Array;
  /** Length of the loop in samples. */
  readonly loopSamples: number;
}

function loopSource(pcm: Int16Array, volume: number): LoopSource & { reset(): void } {
  const gain = Number.isFinite(volume) ? Math.max(0, Math.min(1, volume)) : 0;
  const len = pcm.length;
  let pos = 0;
  return {
    loopSamples: len,
    read(samples: number): Int16Array {
      const out = new Int16Array(Math.max(0, Math.floor(samples)));
      if (gain === 0) {
        pos = (pos + out.length) % len;
        return out;
      }
      for (let i = 0; i < out.length; i++) {
        out[i] = Math.round(pcm[pos]! * gain); // |gain| ≤ 1: no overflow
        if (++pos === len) pos = 0;
      }
      return out;
    },
    reset() {
      pos = 0;
    },
  };
}

/** Ambience under the whole call (backgroundSound). Throws on an unknown name. `seed` varies the take. */
export function backgroundSource(cfg: { sound: string; volume: number }, opts: { seed?: number } = {}): LoopSource {
  const src = loopSource(asset('background', cfg.sound, opts.seed), cfg.volume);
  return { loopSamples: src.loopSamples, read: src.read };
}

/** Work sound while a tool runs (taskSound). `reset()` restarts it from the top (call when a tool starts). */
export function taskSoundSource(cfg: { sound: string; volume: number }, opts: { seed?: number } = {}): LoopSource & { reset(): void } {
  return loopSource(asset('task', cfg.sound, opts.seed), cfg.volume);
}

/**
 * Picks the next acknowledgement / filler word. `words` is comma-separated (blank entries ignored). Each next():
 * with chance `probability` a word, else null (skip this time). 'round-robin' walks the list in order (advancing
 * only when a word is given); 'random' picks uniformly, never the same word twice in a row when there are ≥ 2.
 */
export function createWordPicker(
  cfg: { words: string; wordOrder: 'round-robin' | 'random'; probability: number },
  rng: () => number = Math.random,
): { next(): string | null } {
  const words = cfg.words
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w.length > 0);
  const p = Number.isFinite(cfg.probability) ? Math.max(0, Math.min(1, cfg.probability)) : 0;
  let i = 0;
  let last = -1;
  return {
    next(): string | null {
      if (words.length === 0 || p <= 0) return null;
      if (p < 1 && rng() >= p) return null;
      let k: number;
      if (cfg.wordOrder === 'random') {
        if (words.length === 1) k = 0;
        else if (last < 0) k = Math.min(words.length - 1, Math.floor(rng() * words.length));
        else {
          k = Math.min(words.length - 2, Math.floor(rng() * (words.length - 1)));
          if (k >= last) k++; // skip the previous word
        }
      } else {
        k = i;
        i = (i + 1) % words.length;
      }
      last = k;
      return words[k]!;
    },
  };
}

/** target[i] += source[i] · gain, saturating at the s16 limits (over min(target, source) length). */
export function mixInto(target: Int16Array, source: Int16Array, gain = 1): void {
  const n = Math.min(target.length, source.length);
  for (let i = 0; i < n; i++) {
    const v = target[i]! + source[i]! * gain;
    target[i] = v >= 32767 ? 32767 : v <= -32768 ? -32768 : Math.round(v);
  }
}
