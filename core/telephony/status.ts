// Carrier call status → the spec's connectionStatus. Twilio: queued, ringing, in-progress, completed, busy, failed,
// no-answer, canceled. A status may carry the carrier's reason after a colon (`failed:sip_503` from Twilio's
// SipResponseCode, `failed:destination_out_of_order` from Plivo's HangupCauseName, `failed:cannot_route` from
// Vonage's detail): a reason that says more than the status wins — congestion and unreachable destinations are
// `unreachable`, numbers that do not exist `invalid_number`. Telnyx reports hangup causes alone (same vocabulary).
// Anything unrecognised passes through as `telephony_<status>` (lowercased, non-alphanumerics → _).
const KNOWN: Record<string, string> = {
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no_answer',
  no_answer: 'no_answer',
  failed: 'connection_failed',
  canceled: 'cancelled',
  cancelled: 'cancelled',
  rejected: 'rejected',
};

/** Reasons (hangup causes, SIP response codes, carrier details) that say why a call did not connect. */
const REASONS: Record<string, string> = {
  // congestion / unreachable (Q.850 causes 2, 3, 27, 34, 38, 41, 42, 44; SIP 480, 502, 503, 504)
  unreachable: 'unreachable',
  unroutable: 'unreachable',
  congestion: 'unreachable',
  network_congestion: 'unreachable',
  switch_congestion: 'unreachable',
  no_route_destination: 'unreachable',
  no_route_transit_net: 'unreachable',
  destination_out_of_order: 'unreachable',
  network_out_of_order: 'unreachable',
  normal_circuit_congestion: 'unreachable',
  normal_temporary_failure: 'unreachable',
  requested_chan_unavail: 'unreachable',
  service_unavailable: 'unreachable',
  subscriber_absent: 'unreachable',
  unavailable: 'unreachable',
  cannot_route: 'unreachable',
  sip_480: 'unreachable',
  sip_502: 'unreachable',
  sip_503: 'unreachable',
  sip_504: 'unreachable',
  // numbers that do not exist (Q.850 1, 22, 28; SIP 404, 484, 604)
  unallocated_number: 'invalid_number',
  invalid_number: 'invalid_number',
  invalid_number_format: 'invalid_number',
  invalid_destination_address: 'invalid_number',
  number_changed: 'invalid_number',
  number_out_of_service: 'invalid_number',
  sip_404: 'invalid_number',
  sip_484: 'invalid_number',
  sip_604: 'invalid_number',
  // busy and declined (SIP 486, 600, 603)
  user_busy: 'busy',
  sip_486: 'busy',
  sip_600: 'busy',
  call_rejected: 'rejected',
  declined: 'rejected',
  sip_603: 'rejected',
};

const norm = (s: string) => s.replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');

/**
 * `raw` is a carrier status, optionally `status:reason`. `statusOf` is the carrier's own status words (Plivo
 * `timeout`, Vonage `unanswered`, Telnyx causes), tried before the common ones.
 */
export function mapCarrierStatus(raw: string, statusOf: (status: string) => string | undefined = () => undefined): string {
  const s = raw.trim().toLowerCase();
  const i = s.indexOf(':');
  const status = i < 0 ? s : s.slice(0, i);
  const reason = i < 0 ? '' : norm(s.slice(i + 1));
  if (reason && REASONS[reason]) return REASONS[reason];
  return statusOf(status) ?? KNOWN[status] ?? REASONS[norm(status)] ?? `telephony_${norm(status) || 'unknown'}`;
}

/** `status:reason` when the carrier gave a reason with a failed status (what mapCarrierStatus reads). */
export const withReason = (status: string, reason: string | undefined | null): string =>
  reason && reason.trim() ? `${status}:${norm(reason.trim().toLowerCase())}` : status;

/** Statuses that end a call (Twilio). */
export const TERMINAL_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);
