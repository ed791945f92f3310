// Admission of new calls on this media process, shared by every live transport (raw-audio WebSocket, WebRTC offers,
// carrier media streams). A call counts toward capacity while it is live (runner.live) and while it is "joining":
// from its admission until runner.run has put it in `live` (or the join was abandoned). Past MEDIA_MAX_CALLS new
// joins are refused quickly, so the calls already here keep real time and the client (or the proxy, or the carrier
// retrying) goes to another node; the refused call's row is left untouched (still pending).
//
// Weighted: a call does not count 1 but its weight, by transport and engines (CALL_WEIGHTS), in units of one
// local-engine WebSocket call, the unit of MEDIA_MAX_CALLS (default cores × CALLS_PER_CORE; docs/operations.md). A
// joining call is held at its own weight when its row has been read (else at its transport's largest); a live call
// counts at its own weight (the runner's liveWeight). A join is refused when its weight would take the node past
// capacity; a node with nothing on it takes any call. A call whose room the api reserved on this node before handing
// it out (or dialling it) is not refused for capacity: the node takes the reservation over, so a phone that rang is
// never left without its agent.
import { callWeight as weightOfCall, engineClass, LIGHTEST_JOIN, joiningWeight, type WeightTransport } from '../core/media-nodes.ts';
import { joinsRefused } from './session/lifecycle.ts';

// The weight table and the joining weights live in core/ (the api counts in them when it steers POST /call).
export { CALL_WEIGHTS, LIGHTEST_JOIN, joiningWeight, type WeightEngines, type WeightTransport } from '../core/media-nodes.ts';

/** The weight table's transport class of a LiveTransport kind ('websocket', 'webrtc', or a carrier's name). */
export function weightTransport(kind: string): WeightTransport {
  return kind === 'websocket' || kind === 'webrtc' ? kind : 'carrier';
}

/**
 * A call's weight from its transport kind and its engines' provider ids ('local' = runs here). `localUnit` is what
 * the local engines themselves weigh (1 for PocketSphinx / eSpeak NG, the unit; CALLS_PER_CORE /
 * NEURAL_CALLS_PER_CORE when the neural models are installed): the transport's surcharge is added to it. A joining
 * call is still held at the light weight (joiningWeight), so a burst of joins is not refused for engines it may not
 * use; once its row is read it counts at its own weight and later joins see it.
 */
export function callWeight(kind: string, providers: readonly string[], localUnit = 1): number {
  return weightOfCall(weightTransport(kind), engineClass(providers), localUnit);
}

/** A call's weight from its row's frozen config (its engines) and the transport it joins on. */
export function rowWeight(kind: string, configSnapshot: unknown, localUnit = 1): number {
  const c = (configSnapshot ?? {}) as { stt?: { provider?: unknown }; tts?: { provider?: unknown }; llm?: { provider?: unknown } };
  return callWeight(kind, [c.stt?.provider, c.tts?.provider, c.llm?.provider].filter((p): p is string => typeof p === 'string'), localUnit);
}

const EPS = 1e-9;

export type Refusal = 'draining' | 'capacity';

/** The close reason / error detail of each refusal. */
export const REFUSAL_TEXT: Record<Refusal, string> = {
  draining: 'Server is draining',
  capacity: 'Media node at capacity',
};

export interface Admission {
  /** Why a new call on transport `t` would be refused right now (draining first), or null. Counts nothing.
   * Without `t`: whether even the lightest call would be refused. */
  refusal(t?: WeightTransport): Refusal | null;
  /** Count one call as joining (at `weight`, else its transport's joining weight); the release (idempotent) stops it. */
  hold(t: WeightTransport, weight?: number): () => void;
  /**
   * refusal() and hold() in one synchronous step; a capacity refusal is counted in joinsRefused. `weight`: the call's
   * own weight when its row was read; `reserved`: the api reserved its room on this node (never refused for capacity).
   */
  admit(t: WeightTransport, opts?: { weight?: number; reserved?: boolean }): { ok: true; release: () => void } | { ok: false; reason: Refusal; text: string };
  /** Calls admitted and not yet live nor abandoned. */
  readonly joining: number;
  /** Weighted load: live calls at their weights + joining calls at their joining weights. */
  weighted(): number;
}

/** `live`: the weighted load of the live calls (the runner's liveWeight); `capacity` in the same unit. */
export function createAdmission(o: { capacity: number; live: () => number; draining: () => boolean; closed?: () => boolean }): Admission {
  let joining = 0;
  let joiningW = 0;
  const weighted = () => o.live() + joiningW;
  // an idle node always takes a call (one heavier than the whole capacity would otherwise run nowhere)
  const refusal = (t?: WeightTransport, weight?: number): Refusal | null => {
    if (o.draining()) return 'draining';
    const load = weighted();
    return load > EPS && load + (weight ?? (t ? joiningWeight(t) : LIGHTEST_JOIN)) > o.capacity + EPS ? 'capacity' : null;
  };
  const hold = (t: WeightTransport, weight?: number) => {
    const w = weight ?? joiningWeight(t);
    joining++;
    joiningW += w;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      joining--;
      joiningW -= w;
      if (joining === 0) joiningW = 0; // no float residue
    };
  };
  return {
    refusal,
    hold,
    weighted,
    admit(t, opts = {}) {
      // a reserved call is taken while the node drains too (its phone rang already); only a closed node refuses it
      const reason = opts.reserved ? (o.closed?.() ? 'draining' : null) : refusal(t, opts.weight);
      if (reason) {
        if (reason === 'capacity') joinsRefused.inc({ reason: 'capacity' });
        return { ok: false, reason, text: REFUSAL_TEXT[reason] };
      }
      return { ok: true, release: hold(t, opts.weight) };
    },
    get joining() {
      return joining;
    },
  };
}
