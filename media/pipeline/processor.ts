// A processor does one job on frames and pushes results downstream. Processors are linked into a Pipeline;
// frames travel synchronously (a push is a method call), stages with async work (VAD, STT, LLM, TTS) keep their
// own ordered queues and push when ready. Errors thrown while handling a frame go to the pipeline's onError.
import type { Frame } from './frames.ts';

export abstract class Processor {
  abstract readonly name: string;
  next: Processor | null = null;
  /** Set by the Pipeline: where exceptions go. */
  onError: (err: unknown, where: string) => void = (err) => {
    throw err;
  };

  /** Handle one frame. The default passes it on unchanged. */
  protected process(frame: Frame): void {
    this.push(frame);
  }

  receive(frame: Frame): void {
    try {
      this.process(frame);
    } catch (err) {
      this.onError(err, this.name);
    }
  }

  push(frame: Frame): void {
    this.next?.receive(frame);
  }

  /** Release resources (timers, sockets). */
  close(): Promise<void> | void {}
}

/** A sink that records every frame it receives (test harness and the pipeline's tail). */
export class Collector extends Processor {
  readonly name = 'collector';
  readonly frames: Frame[] = [];
  constructor(private readonly onFrame?: (f: Frame) => void) {
    super();
  }
  protected override process(frame: Frame): void {
    this.frames.push(frame);
    this.onFrame?.(frame);
  }
}

export class Pipeline {
  constructor(
    readonly processors: Processor[],
    onError: (err: unknown, where: string) => void,
  ) {
    for (let i = 0; i < processors.length; i++) {
      const p = processors[i]!;
      p.next = processors[i + 1] ?? null;
      p.onError = onError;
    }
  }
  push(frame: Frame): void {
    this.processors[0]?.receive(frame);
  }
  async close(): Promise<void> {
    for (const p of this.processors) await p.close();
  }
}

/** Frames-in / frames-out harness: run frames through processors and collect what comes out. */
export function harness(...processors: Processor[]): { pipeline: Pipeline; out: Collector; errors: unknown[] } {
  const out = new Collector();
  const errors: unknown[] = [];
  const pipeline = new Pipeline([...processors, out], (err) => errors.push(err));
  return { pipeline, out, errors };
}
