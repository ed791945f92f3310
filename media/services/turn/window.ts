// The audio Smart Turn reads (smart-turn-thread.ts): the last 8 s of the turn as ±1 floats, zero-padded at the
// beginning when the turn is shorter (as pipecat's own analyzer does).

export const WINDOW_SAMPLES = 16000 * 8;

export function modelWindow(pcm: Int16Array): Float32Array {
  const out = new Float32Array(WINDOW_SAMPLES);
  const n = Math.min(pcm.length, WINDOW_SAMPLES);
  const from = pcm.length - n;
  const at = WINDOW_SAMPLES - n;
  for (let i = 0; i < n; i++) out[at + i] = pcm[from + i]! / 32768;
  return out;
}
