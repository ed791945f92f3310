// Frames: the plain data that flows between pipeline processors (a discriminated union on `type`).
// Three kinds:
//  - system frames are never dropped by an interruption;
//  - data frames are dropped when an interruption flushes the stage holding them;
//  - control frames steer a stage (end of an utterance's text, end of a caller turn, speak this now).
import type { SpeechHandle } from '../session/speech.ts';
import type { ToolCall } from '../services/types.ts';

export type SystemFrame =
  | { type: 'start' }
  | { type: 'end'; reason: string }
  | { type: 'userStartedSpeaking' }
  /**
   * The caller's speech is over. Where a turn model decides (media/pipeline/turn/policy.ts) this comes when it ended
   * the turn, `turnModel` saying how long after the VAD's end of speech that was.
   */
  | { type: 'userStoppedSpeaking'; turnModel?: { model: string; heldMs: number } }
  /** The VAD heard the caller fall silent, but the turn model keeps the turn open (it may go on). */
  | { type: 'userPaused' }
  /** The caller went on speaking within the turn after a userPaused. */
  | { type: 'userResumed' }
  | { type: 'interrupt'; by: 'user' | 'agent' }
  | { type: 'error'; message: string; fatal: boolean }
  | { type: 'metrics'; name: string; valueMs: number };

export type DataFrame =
  /** Caller audio, 16 kHz mono s16le. */
  | { type: 'audioIn'; pcm: Int16Array }
  /** Agent audio, 24 kHz mono s16le, belonging to one utterance and one of its text chunks. */
  | { type: 'audioOut'; pcm: Int16Array; speech: SpeechHandle; chunk: number }
  | { type: 'transcript'; text: string; final: boolean }
  | { type: 'llmText'; delta: string; speech: SpeechHandle }
  | { type: 'toolCall'; call: ToolCall }
  | { type: 'toolResult'; callId: string; content: string }
  | { type: 'ttsText'; text: string; speech: SpeechHandle; owner?: object | null };

export type ControlFrame =
  /** No more text will come for this utterance. */
  | { type: 'flush'; speech: SpeechHandle }
  /** The caller's turn ended with this text. */
  | { type: 'turnEnd'; text: string }
  /** The STT's speculative end of turn (Flux EagerEndOfTurn, Cartesia turn.eager_end): the LLM may start early. */
  | { type: 'eagerTurnEnd'; text: string }
  /** The caller went on after an eager end of turn: drop the speculative reply. */
  | { type: 'turnResumed' }
  /** Speak this text as (part of) an utterance, then flush it. */
  | { type: 'speakNow'; text: string; speech: SpeechHandle }
  /**
   * Play this stored audio (24 kHz mono s16, e.g. an uploaded recording) as the utterance, then flush it. It takes
   * its turn in the TTS stage's queue like a synthesized chunk, so it never overtakes speech queued before it;
   * `label` is the chunk's text (what the transcript and the context show).
   */
  | { type: 'speakAudio'; label: string; pcm: Int16Array; speech: SpeechHandle };

export type Frame = SystemFrame | DataFrame | ControlFrame;

const SYSTEM = new Set<Frame['type']>(['start', 'end', 'userStartedSpeaking', 'userStoppedSpeaking', 'userPaused', 'userResumed', 'interrupt', 'error', 'metrics']);
const CONTROL = new Set<Frame['type']>(['flush', 'turnEnd', 'eagerTurnEnd', 'turnResumed', 'speakNow', 'speakAudio']);

export function isSystemFrame(f: Frame): f is SystemFrame {
  return SYSTEM.has(f.type);
}
export function isControlFrame(f: Frame): f is ControlFrame {
  return CONTROL.has(f.type);
}
export function isDataFrame(f: Frame): f is DataFrame {
  return !SYSTEM.has(f.type) && !CONTROL.has(f.type);
}

/** The utterance a frame belongs to, if any (used to drop an interrupted utterance's frames). */
export function speechOf(f: Frame): SpeechHandle | null {
  return 'speech' in f ? f.speech : null;
}
