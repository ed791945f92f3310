// Carrier call status → the spec's connectionStatus. Twilio: queued, ringing, in-progress, completed, busy, failed,
// no-answer, canceled. Anything unrecognised passes through as `telephony_<raw>` (lowercased, non-alphanumerics → _).
const KNOWN: Record<string, string> = {
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no_answer',
  no_answer: 'no_answer',
  failed: 'connection_failed',
  canceled: 'cancelled',
  cancelled: 'cancelled',
};

export function mapCarrierStatus(raw: string): string {
  const s = raw.trim().toLowerCase();
  return KNOWN[s] ?? `telephony_${s.replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '') || 'unknown'}`;
}

/** Statuses that end a call (Twilio). */
export const TERMINAL_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);
