// Text mode of the WebSocket protocol (`/ws/audio/{callId}?mode=text`): the caller sends its turns as text and the
// agent answers in text. The call runs the same session as a voice call (greeting, LLM, tools, end of call, idle
// prompts, transcript, webhooks, post-call); only the two speech engines are replaced, here:
//   - TextInput, an STT whose "recognition" is the text the client sends: each `{type: 'user-text', text}` message
//     is one finished caller turn (the engine's own end of turn, so no VAD is involved);
//   - TextOutput, a TTS that makes no audio: each chunk's text goes to the client as `rtf-bot-text` when it is
//     synthesized, and `rtf-bot-turn-end` follows once the utterance has no more text (so a client knows when the
//     agent has finished its turn without waiting for a silence).
// What text mode does not exercise: speech recognition and synthesis, turn detection on audio, barge-in timing,
// audio pacing, noise and the recording (the call's recording is silent).
import type { Engines, SttOptions, SttService, SttStream, TtsService } from '../services/types.ts';

export const TEXT_ENGINE = 'text';

export class TextInput implements SttService {
  readonly provider = TEXT_ENGINE;
  readonly model = TEXT_ENGINE;
  readonly hasTurnDetection = true;
  private listener: SttOptions['onEvent'] | null = null;
  private readonly early: string[] = [];

  async open(opts: SttOptions): Promise<SttStream> {
    this.listener = opts.onEvent;
    for (const text of this.early.splice(0)) this.deliver(text);
    return {
      write: () => {},
      finalize: () => {},
      close: async () => {
        this.listener = null;
      },
    };
  }

  /** One caller turn typed by the client (turns sent before the session listens are kept, up to 20). */
  deliver(text: string): void {
    const t = text.trim();
    if (!t) return;
    if (!this.listener) {
      if (this.early.length < 20) this.early.push(t);
      return;
    }
    this.listener({ type: 'turn_end', text: t });
  }
}

export class TextOutput implements TtsService {
  readonly provider = TEXT_ENGINE;
  readonly model = TEXT_ENGINE;
  readonly voice = TEXT_ENGINE;

  constructor(private readonly send: (event: Record<string, unknown>) => void) {}

  // no audio: the text itself is what goes out
  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<Int16Array> {
    if (!signal.aborted && text.trim()) this.send({ type: 'rtf-bot-text', payload: { text } });
  }

  endUtterance(): void {
    this.send({ type: 'rtf-bot-turn-end' });
  }
}

/** The call's engines with text in place of speech: the LLM stays the agent's own. */
export function textModeEngines(engines: Engines, send: (event: Record<string, unknown>) => void): { engines: Engines; input: TextInput } {
  const input = new TextInput();
  void engines.tts.close?.().catch(() => {});
  return { engines: { llm: engines.llm, stt: input, tts: new TextOutput(send) }, input };
}
