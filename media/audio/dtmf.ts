// DTMF key tones (ITU-T Q.23): each key is the sum of one low-group and one high-group sine. The tones are made
// here as plain agent audio and go out through the transport like speech (media/tools/dtmf.ts decides when), so
// they reach the line in-band on every transport.
//
// Timing and level (Q.24 receivers must accept ≥ 40 ms tones and ≥ 40 ms pauses; common receivers want more):
// 100 ms per key and 80 ms between keys, `w` = 500 ms of silence. Each component sits at about −9 dBFS / −7 dBFS
// (low / high group: the high group 2 dB louder, the usual positive twist, since lines attenuate it more); the sum
// peaks near −2.5 dBFS, inside G.711 µ-law's range (±8159 × 4), so the µ-law round trip keeps both tones clean.

export const DTMF_KEYS = '123A456B789C*0#D';
const LOW = [697, 770, 852, 941];
const HIGH = [1209, 1336, 1477, 1633];

export const DTMF_TONE_MS = 100;
export const DTMF_GAP_MS = 80;
export const DTMF_PAUSE_MS = 500;
const LOW_AMPLITUDE = 11600; // ≈ −9 dBFS
const HIGH_AMPLITUDE = 14600; // ≈ −7 dBFS

/** The (low, high) frequencies of a key, or null for anything else. */
export function dtmfFrequencies(key: string): [number, number] | null {
  const i = DTMF_KEYS.indexOf(key.toUpperCase());
  if (key.length !== 1 || i < 0) return null;
  return [LOW[Math.floor(i / 4)]!, HIGH[i % 4]!];
}

/** A keypad string is `0-9 * #` (A–D too) and `w` pauses. */
export const DTMF_DIGITS = /^[0-9*#A-Dw]+$/;

/**
 * The audio of a key sequence at `rate` Hz: for each key a tone of `toneMs`, keys separated by `gapMs` of silence,
 * each `w` adding `pauseMs` of silence. The tones start and end with a 2 ms ramp (no click, so no splatter into the
 * other group's band).
 */
export function dtmfTones(digits: string, rate: number, o: { toneMs?: number; gapMs?: number; pauseMs?: number } = {}): Int16Array {
  const toneMs = o.toneMs ?? DTMF_TONE_MS;
  const gapMs = o.gapMs ?? DTMF_GAP_MS;
  const pauseMs = o.pauseMs ?? DTMF_PAUSE_MS;
  const n = (ms: number) => Math.round((ms * rate) / 1000);
  const parts: Array<{ f: [number, number] | null; len: number }> = [];
  let first = true;
  for (const ch of digits) {
    if (ch === 'w') {
      parts.push({ f: null, len: n(pauseMs) });
      first = true;
      continue;
    }
    const f = dtmfFrequencies(ch);
    if (!f) throw new Error(`not a DTMF key: '${ch}'`);
    if (!first) parts.push({ f: null, len: n(gapMs) });
    parts.push({ f, len: n(toneMs) });
    first = false;
  }
  const out = new Int16Array(parts.reduce((a, p) => a + p.len, 0));
  const ramp = Math.max(1, n(2));
  let off = 0;
  for (const p of parts) {
    if (p.f) {
      const [lo, hi] = p.f;
      for (let i = 0; i < p.len; i++) {
        const env = Math.min(1, i / ramp, (p.len - 1 - i) / ramp);
        const t = i / rate;
        out[off + i] = Math.round(env * (LOW_AMPLITUDE * Math.sin(2 * Math.PI * lo * t) + HIGH_AMPLITUDE * Math.sin(2 * Math.PI * hi * t)));
      }
    }
    off += p.len;
  }
  return out;
}

/** How long `digits` take to play (ms). */
export function dtmfDurationMs(digits: string, o: { toneMs?: number; gapMs?: number; pauseMs?: number } = {}): number {
  return (dtmfTones(digits, 1000, o).length * 1000) / 1000;
}
