// TTS stage: text chunks in, 24 kHz audio out, strictly in order. Chunks of one utterance are synthesized as that
// utterance (vendors with contexts keep one context per utterance, closed at its flush); word end times the vendor
// reports are kept on the chunk so an interruption cuts the text at the last word heard.
// A chunk's text goes to the engine as soon as the chunker releases it, up to the engine's `lookahead` chunks beyond
// the one playing (each engine sets what its protocol allows: contexts 8, parallel requests 1, one generation at a
// time 0), while a chunk's audio waits in the adapter's bounded channel until every earlier chunk's has gone out.
// An interruption aborts the utterance's signal: its chunks, playing or synthesized ahead, are dropped (their vendor
// context cancelled) and its queued chunks are never sent. Stored audio (`speakAudio`, a recording a tool plays)
// takes its turn in the same queue as one chunk, paced like speech; the engine never sees it. The engine connects
// as the stage is built, so the first reply pays no handshake; `connectFailure` lets the session end a refused call.
import type { Frame } from './frames.ts';
import { Processor } from './processor.ts';
import type { TtsService } from '../services/types.ts';
import type { SpeechHandle } from '../session/speech.ts';

/** chunks handed to the engine ahead of the one playing, at most (whatever the engine says) */
const MAX_LOOKAHEAD = 8;

interface Started {
  chunk: number;
  iter: AsyncIterator<Int16Array>;
  /** the first next(), called as the chunk is handed over (that is what sends its text) */
  first: Promise<IteratorResult<Int16Array>>;
}

type Job =
  | { kind: 'text'; text: string; speech: SpeechHandle; owner: object | null; started: Started | null }
  | { kind: 'audio'; label: string; pcm: Int16Array; speech: SpeechHandle; owner: object | null }
  | { kind: 'flush'; speech: SpeechHandle };

export interface TtsStageHooks {
  /** first audio bytes of an utterance came back from the engine */
  onFirstByte?(speech: SpeechHandle): void;
  /** a chunk's text was handed to the engine */
  onTextSent?(speech: SpeechHandle, text: string): void;
  /** characters synthesized (usage) */
  onCharacters?(n: number): void;
}

export class TtsStage extends Processor {
  readonly name = 'tts';
  private readonly queue: Job[] = [];
  private running = false;
  private readonly firstByteSeen = new WeakSet<SpeechHandle>();
  private closed = false;
  private readonly lookahead: number;
  /** The engine's early connect() failure (undefined: connected, or the engine has no connect). */
  readonly connectFailure: Promise<unknown>;

  constructor(
    private readonly tts: TtsService,
    private readonly hooks: TtsStageHooks = {},
  ) {
    super();
    this.lookahead = Math.max(0, Math.min(MAX_LOOKAHEAD, Math.floor(tts.lookahead ?? 0)));
    // Open the engine's connection now (the call is connecting). The constructor cannot report a failure (the
    // session is not started yet): it is kept in connectFailure for the session, and the adapter keeps a refusal
    // so a synthesis throws it too.
    this.connectFailure = tts.connect ? tts.connect().then(() => undefined, (err: unknown) => err ?? new Error('TTS connect failed')) : Promise.resolve(undefined);
  }

  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'ttsText':
        if (frame.speech.finished) return;
        this.queue.push({ kind: 'text', text: frame.text, speech: frame.speech, owner: frame.owner ?? null, started: null });
        this.fill();
        this.kick();
        return;
      case 'speakAudio':
        if (frame.speech.finished) return;
        this.queue.push({ kind: 'audio', label: frame.label, pcm: frame.pcm, speech: frame.speech, owner: frame.speech.textOwner });
        this.kick();
        return;
      case 'flush':
        this.queue.push({ kind: 'flush', speech: frame.speech });
        this.kick();
        return;
      case 'interrupt':
        // the one being played out (queue[0]) is dropped by run() itself
        for (let i = this.queue.length - 1; i >= 1; i--) {
          const job = this.queue[i]!;
          if (job.speech.finished) {
            this.queue.splice(i, 1);
            this.dispose(job);
          }
        }
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }

  /** Hand chunk texts to the engine in order, up to `lookahead` beyond the one playing. */
  private fill(): void {
    if (this.closed) return;
    let inFlight = 0;
    for (const job of this.queue) {
      if (job.kind !== 'text' || job.speech.finished) continue;
      if (!job.started) {
        if (inFlight > this.lookahead) return;
        this.start(job);
      }
      inFlight++;
    }
  }

  private start(job: Extract<Job, { kind: 'text' }>): void {
    const { speech, text } = job;
    const chunk = speech.addText(text, job.owner);
    this.hooks.onTextSent?.(speech, text);
    this.hooks.onCharacters?.(text.length);
    const opts = { utterance: speech, onWords: (words: Array<{ endSample: number }>) => speech.addWordEnds(chunk, words.map((w) => w.endSample)) };
    const iter = this.tts.synthesize(text, speech.abort.signal, opts)[Symbol.asyncIterator]();
    const first = iter.next();
    first.catch(() => {}); // reported when its turn comes (or dropped with an interrupted utterance)
    job.started = { chunk, iter, first };
  }

  /** A chunk that will not be played: let the adapter's generator finish (its signal is aborted or closing). */
  private dispose(job: Job): void {
    if (job.kind !== 'text' || !job.started) return;
    const { iter, first } = job.started;
    void first.then(() => iter.return?.(), () => {}).catch(() => {});
  }

  private kick(): void {
    if (this.running || this.closed) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.queue.length && !this.closed) this.kick();
    });
  }

  private async run(): Promise<void> {
    while (this.queue.length && !this.closed) {
      const job = this.queue[0]!;
      const speech = job.speech;
      if (job.kind === 'flush') {
        this.queue.shift();
        this.tts.endUtterance?.(speech);
        if (!speech.finished) {
          speech.textComplete = true;
          this.push({ type: 'flush', speech });
        }
        continue;
      }
      if (speech.finished) {
        this.queue.shift();
        this.dispose(job);
        continue;
      }
      if (job.kind === 'audio') {
        this.queue.shift();
        const chunk = speech.addText(job.label, job.owner);
        const c = speech.chunks[chunk]!;
        c.audio = true;
        c.samples = job.pcm.length;
        if (job.pcm.length > 0) this.push({ type: 'audioOut', pcm: job.pcm, speech, chunk });
        continue;
      }
      if (!job.started) this.start(job);
      this.fill();
      const { chunk, iter, first } = job.started!;
      try {
        let r = await first;
        while (!r.done) {
          if (speech.finished || this.closed) break;
          const pcm = r.value;
          if (pcm.length > 0) {
            if (!this.firstByteSeen.has(speech)) {
              this.firstByteSeen.add(speech);
              this.hooks.onFirstByte?.(speech);
            }
            speech.chunks[chunk]!.samples += pcm.length;
            this.push({ type: 'audioOut', pcm, speech, chunk });
          }
          r = await iter.next();
        }
        if (!r.done) void iter.return?.().catch(() => {});
      } catch (err) {
        if (!speech.finished && !this.closed) this.onError(err, this.name);
        // else: aborted by an interruption
      }
      if (this.queue[0] === job) this.queue.shift();
      this.fill();
    }
  }

  override close(): void {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.dispose(job);
  }
}
