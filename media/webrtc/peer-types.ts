// What the signaling endpoint needs from a WebRTC peer, wherever the peer runs: on the event loop
// (media/webrtc/transport.ts) or on the media-plane thread behind a proxy (media/webrtc/plane.ts). No
// node-datachannel value import here (types only, erased): with the media-plane thread the main thread must never
// load it (the addon, loaded by two threads of one process, aborts the process).
import type { IceServer } from 'node-datachannel';
import type { Logger } from '../../core/logger.ts';
import type { LiveTransport } from '../transports/types.ts';

export interface WebRtcNetOptions {
  /** STUN/TURN servers in node-datachannel's form (none by default). */
  iceServers: IceServer[];
  portRange?: { begin: number; end: number } | null;
  bindAddress?: string | undefined;
  announcedAddress?: string | undefined;
  /** Longest wait for ICE gathering before the answer is returned with the candidates found so far. */
  gatherTimeoutMs?: number;
  /** A 'disconnected' peer that does not recover within this time is gone (default 5 s). */
  disconnectGraceMs?: number;
  /** Codec worker processes of the process (WEBRTC_CODEC_THREADS; default 0 = inline on the event loop). Read once,
   * by the first peer of the process. */
  codecThreads?: number | undefined;
  /** with codec workers: where caller audio is decoded ('thread' with the encoding, or 'inline' on the event loop) */
  codecDecode?: 'inline' | 'thread' | undefined;
}

export interface WebRtcOptions extends WebRtcNetOptions {
  callId: string;
  logger: Logger;
  /** Put the phone-line simulation in front of the caller audio (test calls with telephonySim). */
  telephonySim?: boolean;
}

/** A refused offer (bad SDP): the signaling endpoint answers 400 with this message. */
export class OfferError extends Error {}

/** A peer connection answering a browser, as the signaling endpoint drives it. */
export interface WebRtcPeer extends LiveTransport {
  /** Identifies this peer connection to the browser (renegotiation sends it back). */
  readonly pcId: string;
  /** A new offer on the live peer: resolves with the new answer (OfferError for a bad one). */
  renegotiate(offerSdp: string): Promise<string>;
  /** Trickle ICE: one remote candidate ('' = end of candidates, ignored); throws (or rejects) on a bad one. */
  addRemoteCandidate(candidate: string, mid: string | null): void | Promise<void>;
  onConnected(cb: () => void): void;
  /** The peer failed or closed before it ever connected. */
  onFailed(cb: (why: string) => void): void;
  /** Free the peer connection at once. */
  destroy(): void;
  /** Why the peer went away other than by the far end (its media-plane thread died), or null. */
  readonly lostWith?: string | null;
}

/** The listeners a peer hands out, wherever it runs (WebRtcTransport, PlanePeer): caller audio held until the runner
 * listens (at most 500 frames), connected / failed-before-connecting / gone listeners. */
export class PeerListeners {
  private audioCb: ((pcm16k: Int16Array) => void) | null = null;
  private early: Int16Array[] | null = [];
  private readonly closeCbs: Array<() => void> = [];
  private readonly connectedCbs: Array<() => void> = [];
  private readonly failedCbs: Array<(why: string) => void> = [];
  private isConnected = false;
  private wentAway = false;

  onAudio(cb: (pcm16k: Int16Array) => void): void {
    this.audioCb = cb;
    for (const pcm of this.early ?? []) cb(pcm);
    this.early = null;
  }

  audio(pcm16k: Int16Array): void {
    if (this.audioCb) this.audioCb(pcm16k);
    else if (this.early && this.early.length < 500) this.early.push(pcm16k);
  }

  /** A listener for the far end going away; one added after it went (while the call was being set up) runs at once. */
  onClose(cb: () => void): void {
    if (this.wentAway) queueMicrotask(cb);
    else this.closeCbs.push(cb);
  }

  onConnected(cb: () => void): void {
    if (this.isConnected) cb();
    else this.connectedCbs.push(cb);
  }

  onFailed(cb: (why: string) => void): void {
    this.failedCbs.push(cb);
  }

  connected(): void {
    this.isConnected = true;
    for (const cb of this.connectedCbs.splice(0)) cb();
  }

  failed(why: string): void {
    for (const cb of this.failedCbs.splice(0)) cb(why);
  }

  gone(): void {
    this.wentAway = true;
    for (const cb of this.closeCbs.splice(0)) cb();
  }
}
