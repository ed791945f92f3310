// The framing both carrier encoders (mulaw-stream.ts, l16-stream.ts) share: encoded bytes in, whole frames of
// `frameBytes` out, a partial frame held for the next block, and a count of bytes produced (the position in the
// outgoing stream, which discard() keeps aligned).
export abstract class FramedEncoder {
  abstract readonly frameBytes: number;
  /** the byte that pads a flushed partial frame (the codec's silence) */
  protected abstract readonly silenceByte: number;
  private pending = new Uint8Array(0);
  /** bytes produced so far, including any dropped by discard() (the position in the outgoing stream) */
  produced = 0;

  /** Append encoded bytes; returns the whole frames now ready (each `frameBytes` long). */
  protected frames(bytes: Uint8Array): Uint8Array[] {
    let all = bytes;
    if (this.pending.length) {
      all = new Uint8Array(this.pending.length + bytes.length);
      all.set(this.pending);
      all.set(bytes, this.pending.length);
    }
    const out: Uint8Array[] = [];
    let o = 0;
    for (; o + this.frameBytes <= all.length; o += this.frameBytes) out.push(all.slice(o, o + this.frameBytes));
    this.pending = all.slice(o);
    this.produced += o;
    return out;
  }

  /** The codec's own held-back input at the end of the stream, encoded (the resampler's look-ahead). */
  protected drain(): Uint8Array {
    return new Uint8Array(0);
  }

  /**
   * End of stream: everything still held — the codec's look-ahead (drain) and the partial frame — as whole frames,
   * the last padded with the codec's silence. Usually one frame or none. The encoder takes no audio after this.
   */
  flush(): Uint8Array[] {
    const out = this.frames(this.drain());
    if (this.pending.length) {
      const f = new Uint8Array(this.frameBytes).fill(this.silenceByte);
      f.set(this.pending);
      this.produced += this.frameBytes;
      this.pending = new Uint8Array(0);
      out.push(f);
    }
    return out;
  }

  /** Barge-in: drop the held partial frame (it counts as produced, so positions stay aligned). */
  discard(): void {
    this.produced += this.pending.length;
    this.pending = new Uint8Array(0);
  }
}
