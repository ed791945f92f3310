// The one interface every live transport implements (the raw-audio WebSocket today; WebRTC and carrier media
// streams, when they are added, implement the same one).
// The call session sees only `Transport`; the call runner (media/session/runner.ts) drives a `LiveTransport`.
// Codec and rate conversion live in the transport (or media/audio), never in the session.

/** What the call session sees. */
export interface Transport {
  /** Agent audio, 24 kHz mono s16le, already paced in real time (20 ms frames). */
  sendAudio(pcm24k: Int16Array): void;
  /** JSON events of the WebSocket protocol (`rtf-user-transcription`, `rtf-bot-text`, `error`). */
  sendEvent(event: Record<string, unknown>): void;
  /**
   * Barge-in: the far end drops agent audio it has buffered but not played yet (carrier `clear`). Transports
   * whose far end keeps no buffer leave it out.
   */
  clearAudio?(): void;
  /**
   * Milliseconds of agent audio the far end has actually played so far (carrier marks, RTP stats). Transports that
   * cannot tell leave it out: then what was sent counts as played.
   */
  playedMs?(): number;
}

/** How a connection ends: the call ended normally, the pipeline failed, or the call could not start. */
export type CloseKind = 'normal' | 'error' | 'refused';

/** Events a transport reports beyond audio (carrier DTMF, …); recorded on the call's logs/transcript. */
export type TransportEvent = { type: 'dtmf'; digit: string };

/** What the call runner drives. */
export interface LiveTransport extends Transport {
  /** 'websocket' | 'webrtc' | 'twilio' | 'smartflo' | … (logs and metrics only; the session never sees it). */
  readonly kind: string;
  /** Caller audio, 16 kHz mono s16le. Audio that arrives before the session exists is buffered by the runner. */
  onAudio(cb: (pcm16k: Int16Array) => void): void;
  /** The far end went away (socket closed, peer disconnected, carrier `stop`). */
  onClose(cb: () => void): void;
  /** Out-of-band events from the far end (DTMF). */
  onEvent?(cb: (ev: TransportEvent) => void): void;
  /** Text mode (media/session/text-mode.ts): the far end types its turns and hears no audio. */
  readonly textMode?: boolean;
  /** Text mode: the caller's typed turns. */
  onText?(cb: (text: string) => void): void;
  close(kind: CloseKind, reason?: string): void;
}
