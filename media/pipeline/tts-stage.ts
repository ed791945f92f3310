// TTS stage: text chunks in, 24 kHz audio out, strictly in order (one synthesis at a time per call). An
// interrupted utterance's queued chunks are dropped and its running synthesis is aborted. Chunks of one utterance
// are synthesized as that utterance (vendors with contexts keep one context per utterance, closed at its flush);
// word end times the vendor reports are kept on the chunk so an interruption cuts the text at the last word heard.
// The engine's connection is opened as the stage is built (the call connecting), so the first reply pays no
// handshake; a refusal there surfaces at the first synthesis like any engine error.
import type { Frame } from './frames.ts';
import { Processor } from './processor.ts';
import type { TtsService } from '../services/types.ts';
import type { SpeechHandle } from '../session/speech.ts';

type Job = { kind: 'text'; text: string; speech: SpeechHandle; owner: object | null } | { kind: 'flush'; speech: SpeechHandle };

export interface TtsStageHooks {
  /** first audio bytes of an utterance came back from the engine */
  onFirstByte?(speech: SpeechHandle): void;
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

  constructor(
    private readonly tts: TtsService,
    private readonly hooks: TtsStageHooks = {},
  ) {
    super();
    // Open the engine's connection now (the call is connecting). A refusal here is not reported from the
    // constructor (the session is not started yet): the adapter keeps it and the first synthesis throws it.
    tts.connect?.().catch(() => {});
  }

  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'ttsText':
        if (frame.speech.finished) return;
        this.queue.push({ kind: 'text', text: frame.text, speech: frame.speech, owner: frame.owner ?? null });
        this.kick();
        return;
      case 'flush':
        this.queue.push({ kind: 'flush', speech: frame.speech });
        this.kick();
        return;
      case 'interrupt':
        for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i]!.speech.finished) this.queue.splice(i, 1);
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
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
      const job = this.queue.shift()!;
      const speech = job.speech;
      if (job.kind === 'flush') {
        this.tts.endUtterance?.(speech);
        if (!speech.finished) {
          speech.textComplete = true;
          this.push({ type: 'flush', speech });
        }
        continue;
      }
      if (speech.finished) continue;
      const chunk = speech.addText(job.text, job.owner);
      this.hooks.onTextSent?.(speech, job.text);
      this.hooks.onCharacters?.(job.text.length);
      try {
        const opts = { utterance: speech, onWords: (words: Array<{ endSample: number }>) => speech.addWordEnds(chunk, words.map((w) => w.endSample)) };
        for await (const pcm of this.tts.synthesize(job.text, speech.abort.signal, opts)) {
          if (speech.finished || this.closed) break;
          if (pcm.length === 0) continue;
          if (!this.firstByteSeen.has(speech)) {
            this.firstByteSeen.add(speech);
            this.hooks.onFirstByte?.(speech);
          }
          speech.chunks[chunk]!.samples += pcm.length;
          this.push({ type: 'audioOut', pcm, speech, chunk });
        }
      } catch (err) {
        if (speech.finished || this.closed) continue; // aborted by an interruption
        this.onError(err, this.name);
      }
    }
  }

  override close(): void {
    this.closed = true;
    this.queue.length = 0;
  }
}

