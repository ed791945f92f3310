// Caller-side processors: noise gate (RNNoise via media/noise) → VAD → STT; the turn model's policy and the turn
// manager that follow them are in media/pipeline/turn/.
import type { Frame } from './frames.ts';
import { Processor } from './processor.ts';
import type { SttEvent, SttStream } from '../services/types.ts';

/** One frame's VAD outcome: whether speech started or ended with it, and the last window's probability. */
export interface VadResult {
  speechStart?: boolean;
  speechEnd?: boolean;
  probability: number;
}

/** The VAD contract (media/vad, Silero): feed 16 kHz frames in order; onset/offset events come back. */
export interface Vad {
  process(frame16k: Int16Array): Promise<VadResult>;
  /** In order, without a promise per frame: `done` at once when no inference was needed (media/vad feed()). */
  feed?(frame16k: Int16Array, done: (r: VadResult) => void, fail: (err: unknown) => void): void;
  /** change the stop window (ms of silence that end speech); a VAD without it keeps its own */
  setRedemptionMs?(ms: number): void;
  close?(): void | Promise<void>;
}

/** Denoiser contract (noise gate): 16 kHz in, 16 kHz out, any frame size, may hold back a few ms. */
export interface Denoiser {
  process(pcm16k: Int16Array): Int16Array;
  close(): void;
}

/** The same, with the output coming back later (media/noise/threaded.ts: the gate runs on a worker thread). */
export interface AsyncDenoiser {
  submit(pcm16k: Int16Array, done: (out: Int16Array) => void): void;
  close(): void;
}

export class NoiseGateStage extends Processor {
  readonly name = 'noiseGate';
  /** frames behind audio still being denoised: they go on in arrival order once it is back */
  private readonly queue: Array<{ frame: Frame | null; out: Int16Array | null }> = [];
  constructor(private readonly denoiser: Denoiser | AsyncDenoiser) {
    super();
  }
  protected override process(frame: Frame): void {
    const d = this.denoiser;
    if (!('submit' in d)) {
      if (frame.type !== 'audioIn') return this.push(frame);
      const out = d.process(frame.pcm);
      if (out.length) this.push({ type: 'audioIn', pcm: out });
      return;
    }
    if (frame.type !== 'audioIn') {
      if (!this.queue.length) return this.push(frame);
      this.queue.push({ frame, out: null });
      return;
    }
    const item: { frame: Frame | null; out: Int16Array | null } = { frame: null, out: null };
    this.queue.push(item);
    d.submit(frame.pcm, (out) => {
      item.out = out;
      this.drain();
    });
  }
  private drain(): void {
    while (this.queue.length) {
      const head = this.queue[0]!;
      if (!head.frame && !head.out) return; // still being denoised
      this.queue.shift();
      try {
        if (head.frame) this.push(head.frame);
        else if (head.out!.length) this.push({ type: 'audioIn', pcm: head.out! });
      } catch (err) {
        this.onError(err, this.name);
      }
    }
  }
  override close(): void {
    this.queue.length = 0;
    this.denoiser.close();
  }
}

/** Runs the VAD in order on every frame (async inference never blocks the audio path); audio passes on at once. */
export class VadStage extends Processor {
  readonly name = 'vad';
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  speaking = false;
  constructor(private readonly vad: Vad) {
    super();
  }
  protected override process(frame: Frame): void {
    if (frame.type !== 'audioIn') return this.push(frame);
    this.push(frame);
    if (this.vad.feed) {
      // no promise per frame: the result comes back at once when no window needed the model
      this.vad.feed(frame.pcm, this.onResult, this.onFailure);
      return;
    }
    const pcm = frame.pcm;
    this.chain = this.chain.then(async () => {
      if (this.closed) return;
      try {
        this.onResult(await this.vad.process(pcm));
      } catch (err) {
        this.onFailure(err);
      }
    });
  }
  /** a frame's VAD result (in frame order): speech start and end become frames */
  private readonly onResult = (r: VadResult): void => {
    if (this.closed) return;
    try {
      if (r.speechStart && !this.speaking) {
        this.speaking = true;
        this.push({ type: 'userStartedSpeaking' });
      }
      if (r.speechEnd && this.speaking) {
        this.speaking = false;
        this.push({ type: 'userStoppedSpeaking' });
      }
    } catch (err) {
      this.onError(err, this.name);
    }
  };
  private readonly onFailure = (err: unknown): void => {
    if (!this.closed) this.onError(err, this.name);
  };
  override async close(): Promise<void> {
    this.closed = true;
    await this.vad.close?.();
  }
}

/** Streams caller audio to the STT engine; engine events come back as frames. */
export class SttStage extends Processor {
  readonly name = 'stt';
  private stream: SttStream | null = null;
  samples = 0;
  constructor() {
    super();
  }
  attach(stream: SttStream): void {
    this.stream = stream;
  }
  /** engine event → frames */
  onEvent(ev: SttEvent): void {
    switch (ev.type) {
      case 'speech_started':
        this.push({ type: 'userStartedSpeaking' });
        return;
      case 'interim':
        this.push({ type: 'transcript', text: ev.text, final: false });
        return;
      case 'final':
        this.push({ type: 'transcript', text: ev.text, final: true });
        return;
      case 'turn_end':
        if (ev.text) this.push({ type: 'transcript', text: ev.text, final: true });
        this.push({ type: 'turnEnd', text: ev.text });
        return;
      case 'eager_turn_end':
        this.push({ type: 'eagerTurnEnd', text: ev.text });
        return;
      case 'turn_resumed':
        this.push({ type: 'turnResumed' });
        return;
      case 'error':
        this.push({ type: 'error', message: ev.error.message, fatal: ev.error.fatal });
        return;
    }
  }
  protected override process(frame: Frame): void {
    if (frame.type === 'audioIn') {
      this.samples += frame.pcm.length;
      this.stream?.write(frame.pcm);
      return; // audio stops here: the turn manager needs only events
    }
    if (frame.type === 'userStoppedSpeaking') this.stream?.finalize();
    this.push(frame);
  }
  override async close(): Promise<void> {
    const s = this.stream;
    this.stream = null;
    await s?.close().catch(() => {});
  }
}
