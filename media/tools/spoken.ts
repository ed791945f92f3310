// What a tool says: a text the call's TTS speaks, or a stored audio recording played as it is. The tool runtime
// (runtime.ts) asks this collaborator for a tool's messages and farewells by the tool's config, and hands the
// result to the session, which speaks a text and plays a recording through the same pacer (CallSession.speak).
// The modes per spec: saved function tools `customMessageType` none/text/audio; endCall `messageType` none (the
// built-in farewell: there is no silent hang-up)/custom/audio; saved transferCall none/custom/audio, inline
// transferCall a `customMessage`.
import type { RecordingAudio, RecordingSource } from './recordings.ts';

export type Spoken =
  | { kind: 'text'; text: string }
  | {
      kind: 'recording';
      recordingId: string;
      /** started when the tool set was built (the call's start); null when it cannot be played */
      audio: Promise<RecordingAudio | null>;
      /** said instead when the recording cannot be played (endCall: the built-in farewell), else nothing */
      fallback: string | null;
    };

export const BUILTIN_FAREWELL = 'Thank you for calling. Goodbye!';

export const text = (t: string): Spoken => ({ kind: 'text', text: t });

/** Non-blank texts as messages. */
export function texts(list: readonly string[]): Spoken[] {
  return list.filter((m) => m.trim()).map(text);
}

/** The label a played recording leaves in the transcript and in the LLM's context. */
export function recordingLabel(name: string): string {
  return `[audio: ${name}]`;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export class ToolVoice {
  /** `recordings`: the call's organization's recordings; absent where no store is reachable (then fallbacks). */
  constructor(private readonly recordings?: RecordingSource) {}

  private recording(id: string, fallback: string | null): Spoken | null {
    if (!this.recordings) return fallback === null ? null : text(fallback);
    return { kind: 'recording', recordingId: id, audio: this.recordings(id), fallback };
  }

  /** endCall: the farewells one of which is said per invocation (never empty). */
  endCallFarewells(config: Record<string, unknown>, inline: boolean): Spoken[] {
    const messageType = str(config.messageType) || (inline ? 'custom' : 'none');
    const id = str(config.audioRecordingId);
    if (messageType === 'audio' && id) return [this.recording(id, BUILTIN_FAREWELL)!];
    if (messageType === 'custom') {
      const custom = inline ? texts(strs(config.customMessages)) : texts([str(config.customMessage)]);
      if (custom.length) return custom;
      if (inline) return [text('Goodbye!')];
    }
    return [text(BUILTIN_FAREWELL)];
  }

  /** transferCall: the message said in full before the caller is moved, or null. */
  transferMessage(config: Record<string, unknown>, inline: boolean): Spoken | null {
    const custom = str(config.customMessage).trim();
    if (inline) return custom ? text(custom) : null; // inline transfers have no messageType (spec)
    const messageType = str(config.messageType) || 'none';
    const id = str(config.audioRecordingId);
    if (messageType === 'audio' && id) return this.recording(id, null);
    return messageType === 'custom' && custom ? text(custom) : null;
  }

  /** Saved function tool: the messages said while it runs (text: random or in order; audio: the recording). */
  functionMessages(config: Record<string, unknown>): Spoken[] {
    const mode = str(config.customMessageType) || 'none';
    const id = str(config.customMessageRecordingId);
    if (mode === 'audio' && id) {
      const r = this.recording(id, null);
      return r ? [r] : [];
    }
    return mode === 'text' ? texts(strs(config.customMessages)) : [];
  }
}
