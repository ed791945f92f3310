// Sentence / clause chunker: LLM text deltas in, TTS-sized text chunks out. The first chunk of an utterance is
// released at the first clause boundary (the first audio matters most); later ones sentence by sentence.
import type { Frame } from './frames.ts';
import { Processor } from './processor.ts';
import type { SpeechHandle } from '../session/speech.ts';

const SENTENCE_END = /[.!?…。！？]+["')\]]*(\s+|$)/g;
const CLAUSE_END = /[,;:—–]\s+/g;

export interface ChunkerOptions {
  /** minimum characters before a clause boundary may release the first chunk */
  firstClauseMinChars: number;
  /** minimum characters of any later chunk (short sentences are merged with the next) */
  minChars: number;
}

export class SentenceChunker extends Processor {
  readonly name = 'chunker';
  private readonly buffers = new Map<SpeechHandle, { text: string; emitted: number }>();
  constructor(private readonly opts: ChunkerOptions = { firstClauseMinChars: 12, minChars: 8 }) {
    super();
  }

  protected override process(frame: Frame): void {
    switch (frame.type) {
      case 'llmText': {
        if (frame.speech.finished) return;
        const b = this.buffers.get(frame.speech) ?? { text: '', emitted: 0 };
        this.buffers.set(frame.speech, b);
        b.text += frame.delta;
        this.release(frame.speech, b, false);
        return;
      }
      case 'speakNow': {
        if (frame.speech.finished) return;
        for (const s of splitSentences(frame.text)) this.push({ type: 'ttsText', text: s, speech: frame.speech, owner: frame.speech.textOwner });
        this.push({ type: 'flush', speech: frame.speech });
        return;
      }
      case 'speakAudio': {
        if (frame.speech.finished) return;
        this.push(frame);
        this.push({ type: 'flush', speech: frame.speech });
        return;
      }
      case 'flush': {
        const b = this.buffers.get(frame.speech);
        this.buffers.delete(frame.speech);
        if (frame.speech.finished) return;
        if (b) this.release(frame.speech, b, true);
        this.push(frame);
        return;
      }
      case 'interrupt':
        for (const s of [...this.buffers.keys()]) if (s.finished) this.buffers.delete(s);
        this.push(frame);
        return;
      default:
        this.push(frame);
    }
  }

  private release(speech: SpeechHandle, b: { text: string; emitted: number }, final: boolean): void {
    for (;;) {
      const cut = this.findCut(b.text, b.emitted === 0);
      if (cut <= 0) break;
      const chunk = b.text.slice(0, cut).trim();
      b.text = b.text.slice(cut);
      if (chunk) {
        b.emitted++;
        this.push({ type: 'ttsText', text: chunk, speech, owner: speech.textOwner });
      }
    }
    if (final) {
      const rest = b.text.trim();
      b.text = '';
      if (rest) this.push({ type: 'ttsText', text: rest, speech, owner: speech.textOwner });
    }
  }

  /** Index just after the boundary where the next chunk ends, or -1. */
  private findCut(text: string, first: boolean): number {
    const min = first ? 1 : this.opts.minChars;
    SENTENCE_END.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = SENTENCE_END.exec(text))) {
      const end = m.index + m[0].length;
      // a boundary at the very end of the buffer is only a boundary once whitespace follows (e.g. "3." vs "3.5")
      if (end === text.length && !/\s$/.test(m[0])) break;
      if (end >= min) return end;
    }
    if (first) {
      CLAUSE_END.lastIndex = 0;
      while ((m = CLAUSE_END.exec(text))) {
        const end = m.index + m[0].length;
        if (end >= this.opts.firstClauseMinChars) return end;
      }
    }
    return -1;
  }
}

/** Split a complete text into sentences (for speakNow). */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  let rest = text.trim();
  SENTENCE_END.lastIndex = 0;
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = SENTENCE_END.exec(rest))) {
    const end = m.index + m[0].length;
    const s = rest.slice(last, end).trim();
    if (s) out.push(s);
    last = end;
    if (m[0].length === 0) SENTENCE_END.lastIndex++;
  }
  const tail = rest.slice(last).trim();
  if (tail) out.push(tail);
  rest = '';
  return out;
}
