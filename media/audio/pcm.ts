// PCM s16le helpers for the audio path (allocation-light; no Node stream machinery).

/** View or copy a Buffer/Uint8Array of s16le bytes as Int16Array (copies when unaligned; odd tail byte dropped). */
export function bytesToInt16(bytes: Uint8Array): Int16Array {
  const n = bytes.byteLength >> 1;
  if ((bytes.byteOffset & 1) === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, n);
  const out = new Int16Array(n);
  new Uint8Array(out.buffer).set(bytes.subarray(0, n * 2));
  return out;
}

/** The s16le bytes of a sample array (a view, no copy). */
export function int16ToBytes(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

export function int16ToFloat32(pcm: Int16Array): Float32Array {
  const out = new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i]! / 32768;
  return out;
}

export function float32ToInt16(f: Float32Array): Int16Array {
  const out = new Int16Array(f.length);
  for (let i = 0; i < f.length; i++) {
    const v = Math.round(f[i]! * 32768);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

export function concatInt16(parts: Int16Array[]): Int16Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Int16Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Root mean square in sample units (0..32768). */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let s = 0;
  for (let i = 0; i < pcm.length; i++) s += pcm[i]! * pcm[i]!;
  return Math.sqrt(s / pcm.length);
}

/** Level in dBFS (−Infinity for digital silence). */
export function dbfs(pcm: Int16Array): number {
  return 20 * Math.log10(rms(pcm) / 32768);
}

/** Multiply by a gain, saturating. Returns a new array. */
export function applyGain(pcm: Int16Array, gain: number): Int16Array {
  const out = new Int16Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) {
    const v = Math.round(pcm[i]! * gain);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

/** Add `b` into `a` in place from `offset`, saturating (b past a's end is ignored). */
export function mixInto(a: Int16Array, b: Int16Array, offset = 0, gain = 1): void {
  const n = Math.min(b.length, a.length - offset);
  for (let i = 0; i < n; i++) {
    const v = a[offset + i]! + Math.round(b[i]! * gain);
    a[offset + i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
}

/** Samples in `ms` milliseconds at `rate`. */
export function samplesFor(ms: number, rate: number): number {
  return Math.round((ms * rate) / 1000);
}

/**
 * Re-blocks a stream of arbitrary-size chunks into fixed-size frames (e.g. 20 ms), keeping the remainder.
 */
export class Framer {
  private pending = new Int16Array(0);
  constructor(readonly frameSamples: number) {}
  push(pcm: Int16Array): Int16Array[] {
    const all = this.pending.length ? concatInt16([this.pending, pcm]) : pcm;
    const frames: Int16Array[] = [];
    let o = 0;
    for (; o + this.frameSamples <= all.length; o += this.frameSamples) frames.push(all.slice(o, o + this.frameSamples));
    this.pending = all.slice(o);
    return frames;
  }
  /** The remainder padded with silence to a full frame (null when empty). */
  flush(): Int16Array | null {
    if (!this.pending.length) return null;
    const f = new Int16Array(this.frameSamples);
    f.set(this.pending);
    this.pending = new Int16Array(0);
    return f;
  }
}

/** Round and saturate to the s16 range. */
export function clip16(v: number): number {
  return v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
}
