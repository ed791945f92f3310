// The caller's side of a fake carrier's media stream (twilio-media.ts, carrier-phone.ts): audio a test queues with
// say() is sent by the stream's real-time clock, silence when nothing is queued, and each say() resolves once its
// audio has all been sent (or the stream ended).
export class CallerScript {
  private script = new Uint8Array(0);
  private off = 0;
  private waiters: Array<{ at: number; resolve: () => void }> = [];

  /** Queue codec bytes after what is still unsent; resolves once they have all been taken. */
  push(bytes: Uint8Array): Promise<void> {
    const rest = this.script.subarray(this.off);
    const next = new Uint8Array(rest.length + bytes.length);
    next.set(rest);
    next.set(bytes, rest.length);
    this.waiters = this.waiters.map((w) => ({ ...w, at: w.at - this.off }));
    this.script = next;
    this.off = 0;
    return new Promise((resolve) => this.waiters.push({ at: next.length, resolve }));
  }

  /** The next caller payload: `out`, filled with the codec's silence, gets the queued audio at its head. */
  take(out: Uint8Array): Uint8Array {
    const n = Math.min(out.length, this.script.length - this.off);
    if (n > 0) {
      out.set(this.script.subarray(this.off, this.off + n));
      this.off += n;
    }
    for (const w of this.waiters.filter((x) => this.off >= x.at)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
    return out;
  }

  /** The stream is over: nothing queued will be sent, whatever waits for it is released. */
  release(): void {
    for (const w of this.waiters.splice(0)) w.resolve();
  }
}

/**
 * `ms` of a 440 Hz buzz at 8 kHz (speech for the energy-VAD fake engines): the fundamental with its second and third
 * harmonics, as a voiced sound has them — no single frequency holds most of its energy, so it is not a beep to
 * media/audio/beep.ts (a pure tone is: test/fakes/answering-machine.ts beeps with one).
 */
export function tone8k(ms: number, amplitude: number): Int16Array {
  const n = Math.round((ms * 8000) / 1000);
  const pcm = new Int16Array(n);
  const w = (2 * Math.PI * 440) / 8000;
  for (let i = 0; i < n; i++) pcm[i] = Math.round((amplitude / 1.5) * (0.6 * Math.sin(w * i) + 0.5 * Math.sin(2 * w * i) + 0.4 * Math.sin(3 * w * i)));
  return pcm;
}
