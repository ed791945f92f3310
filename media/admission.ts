// Admission of new calls on this media process, shared by every live transport (raw-audio WebSocket, WebRTC offers,
// carrier media streams). A call counts toward capacity while it is live (runner.live) and while it is "joining":
// from its admission until runner.run has put it in `live` (or the join was abandoned). Past MEDIA_MAX_CALLS new
// joins are refused quickly, so the calls already here keep real time and the client (or the proxy, or the carrier
// retrying) goes to another node; the refused call's row is left untouched (still pending).
import { joinsRefused } from './session/lifecycle.ts';

export type Refusal = 'draining' | 'capacity';

/** The close reason / error detail of each refusal. */
export const REFUSAL_TEXT: Record<Refusal, string> = {
  draining: 'Server is draining',
  capacity: 'Media node at capacity',
};

export interface Admission {
  /** Why a new call would be refused right now (draining first), or null. Counts nothing. */
  refusal(): Refusal | null;
  /** Count one call as joining; the returned release (idempotent) stops counting it. */
  hold(): () => void;
  /** refusal() and hold() in one synchronous step; a capacity refusal is counted in joinsRefused. */
  admit(): { ok: true; release: () => void } | { ok: false; reason: Refusal; text: string };
  /** Calls admitted and not yet live nor abandoned. */
  readonly joining: number;
}

export function createAdmission(o: { capacity: number; live: () => number; draining: () => boolean }): Admission {
  let joining = 0;
  const refusal = (): Refusal | null => (o.draining() ? 'draining' : o.live() + joining >= o.capacity ? 'capacity' : null);
  const hold = () => {
    joining++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      joining--;
    };
  };
  return {
    refusal,
    hold,
    admit() {
      const reason = refusal();
      if (reason) {
        if (reason === 'capacity') joinsRefused.inc({ reason: 'capacity' });
        return { ok: false, reason, text: REFUSAL_TEXT[reason] };
      }
      return { ok: true, release: hold() };
    },
    get joining() {
      return joining;
    },
  };
}
