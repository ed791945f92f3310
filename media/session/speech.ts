// One agent utterance as a handle: greeting, LLM reply, idle prompt, tool message, farewell. The session can
// interrupt it (if it allows), knows how much of it was actually played, and awaits its end. Barge-in, idle
// re-engagement, end-call farewells and the max-duration cut all go through this one mechanism.

export type SpeechSource = 'greeting' | 'reply' | 'idle' | 'tool_message' | 'farewell' | 'keypad' | 'voicemail';
export type SpeechState = 'queued' | 'speaking' | 'played' | 'interrupted';

export interface SpeechChunk {
  text: string;
  /** samples (24 kHz) produced by TTS for this chunk so far */
  samples: number;
  /** samples of this chunk whose playout has started */
  played: number;
  /** the context message this text belongs to (LLM rounds); updated with what was played */
  owner: object | null;
  /**
   * Word end times (samples from the start of this chunk's audio) when the TTS vendor reports alignment or word
   * timestamps; absent otherwise. With them an interrupted chunk is cut after the last word whose audio ended.
   */
  wordEnds?: number[];
  /** stored audio played as it is (a recording): its text is a label, heard whole once any of it played */
  audio?: boolean;
}

let seq = 0;

export class SpeechHandle {
  readonly id = ++seq;
  readonly abort = new AbortController();
  readonly chunks: SpeechChunk[] = [];
  state: SpeechState = 'queued';
  /**
   * Held by caller sound that may not be an interruption (media/session/false-interruption.ts): its audio waits at
   * the pacer, generation goes on, and resume() plays on from the part the caller did not hear.
   */
  paused = false;
  /** times it was paused and then resumed (caller sound without words) */
  resumes = 0;
  /** all text has been handed to TTS (flush seen) */
  textComplete = false;
  startedAt: number | null = null;
  /** the context message that text handed over now belongs to (set by the LLM stage per round) */
  textOwner: object | null = null;
  private resolveDone!: (s: 'played' | 'interrupted') => void;
  readonly done: Promise<'played' | 'interrupted'>;
  private readonly listeners: Array<(s: 'played' | 'interrupted') => void> = [];

  constructor(
    readonly source: SpeechSource,
    readonly interruptible: boolean,
  ) {
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  get finished(): boolean {
    return this.state === 'played' || this.state === 'interrupted';
  }

  addText(text: string, owner: object | null = null): number {
    this.chunks.push({ text, samples: 0, played: 0, owner });
    return this.chunks.length - 1;
  }

  fullText(): string {
    return joinText(this.chunks.map((c) => c.text));
  }

  /**
   * Text the caller actually heard: whole chunks fully played plus, of a partly played chunk, the words whose
   * audio ended before playout stopped (when the TTS reported word timings) or else the played share of it.
   */
  playedText(owner?: object): string {
    const parts: string[] = [];
    for (const c of this.chunks) {
      if (owner !== undefined && c.owner !== owner) continue;
      if (c.samples > 0 && c.played >= c.samples) parts.push(c.text);
      else if (c.audio && c.played > 0) parts.push(c.text);
      else if (c.played > 0 && c.samples > 0) parts.push(c.wordEnds?.length ? wordsPlayed(c.text, c.wordEnds, c.played) : cutWords(c.text, c.played / c.samples));
    }
    return joinText(parts);
  }

  /** Record word end times reported by the TTS for one chunk (offsets from the chunk's audio start). */
  addWordEnds(chunk: number, ends: number[]): void {
    const c = this.chunks[chunk];
    if (!c || !ends.length) return;
    (c.wordEnds ??= []).push(...ends);
  }

  onFinish(fn: (s: 'played' | 'interrupted') => void): void {
    this.listeners.push(fn);
  }

  markSpeaking(now: number): void {
    if (this.state === 'queued') {
      this.state = 'speaking';
      this.startedAt = now;
    }
  }

  markPlayed(): void {
    if (this.finished) return;
    this.state = 'played';
    for (const c of this.chunks) c.played = c.samples;
    this.finish('played');
  }

  /** Hold it (see `paused`); the pacer keeps its unheard audio. */
  pause(): void {
    if (!this.finished) this.paused = true;
  }

  /** Play on after a pause that was not an interruption. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.finished) this.resumes++;
  }

  /** Stop this utterance now (drops its queued text and audio everywhere). */
  interrupt(): void {
    if (this.finished) return;
    this.paused = false;
    this.state = 'interrupted';
    this.abort.abort();
    this.finish('interrupted');
  }

  private finish(s: 'played' | 'interrupted'): void {
    for (const l of this.listeners) l(s);
    this.resolveDone(s);
  }
}

function joinText(parts: string[]): string {
  return parts.map((p) => p.trim()).filter(Boolean).join(' ');
}

/**
 * The words of a chunk whose audio ended within the first `played` samples, by the vendor's word end times.
 * Words are counted (the vendor may normalize their spelling), so the text keeps the chunk's own words.
 */
export function wordsPlayed(text: string, wordEnds: number[], played: number): string {
  const words = text.trim().split(/\s+/).filter(Boolean);
  let n = 0;
  for (const end of wordEnds) if (end <= played) n++;
  return words.slice(0, Math.min(n, words.length)).join(' ');
}

/** The first `share` (0..1) of a text, cut at a word boundary (at least one word when share > 0). */
export function cutWords(text: string, share: number): string {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const n = Math.max(1, Math.min(words.length, Math.round(words.length * share)));
  return words.slice(0, n).join(' ');
}
